package render

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stepstat/stepstat/nsys"
)

// Untrusted text (kernel names, NVTX text, GPU names, file names, the recorded
// environment) reaches the text outputs through one path: TerminalSafe. Every string and
// error argument of the text writers (errWriter.printf) goes through it, and the command
// line escapes its usage errors, error lines and progress line with it, so no format
// string can forget it. The HTML pages go through validUTF8Writer; JSON is valid UTF-8 by
// encoding/json.

// TerminalSafe replaces what could drive or garble a terminal in untrusted text: C0
// controls (newline and tab included), DEL, C1 controls (U+0080-U+009F, and the raw bytes
// 0x80-0x9F that 8-bit terminals read as C1, e.g. 0x9b, CSI), the bidirectional controls
// and separators (U+202E makes "gemm_kernel" display backwards), the characters shown as
// nothing (zero-width, BOM, soft hyphen, tags: unsafeRune), and every byte that is not
// part of valid UTF-8. A control or invalid byte becomes \xNN, another rune \uNNNN (or
// \UNNNNNNNN past U+FFFF), so the result is valid UTF-8 holding no control character. Escaping twice changes
// nothing.
func TerminalSafe(s string) string {
	if terminalClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1: // not UTF-8: the byte itself, C1 bytes included
			fmt.Fprintf(&b, "\\x%02x", c)
		case unsafeRune(r) && r < 0x100:
			fmt.Fprintf(&b, "\\x%02x", r)
		case unsafeRune(r) && r > 0xffff:
			fmt.Fprintf(&b, "\\U%08x", r)
		case unsafeRune(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// terminalClean reports whether TerminalSafe leaves s as it is.
func terminalClean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if c < 0x80 { // C0 or DEL
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			return false
		}
		i += size
	}
	return true
}

// unsafeRune reports control characters (C0, DEL, C1), the bidirectional controls and
// separators that reorder or break what a terminal shows, and the characters a terminal
// shows as nothing, so that names differing only by them would print the same: format
// characters (Unicode's Cf: zero-width space and joiners, the BOM, the soft hyphen, word
// joiners, tag characters), variation selectors, the combining grapheme joiner and the
// Hangul fillers.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x2028, r == 0x2029:
		return true
	case r < 0xad:
		return false
	case r == 0x034f, r == 0x115f, r == 0x1160, r == 0x3164, r == 0xffa0, r >= 0xfe00 && r <= 0xfe0f,
		r >= 0xe0100 && r <= 0xe01ef:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// clipValue clips a run-configuration name or value for quoting: to nsys.MaxValueText
// bytes with "…" (nsys.ClipValue, the one the findings use). JSON's "config" keeps every
// value whole, once.
func clipValue(s string) string { return nsys.ClipValue(s) }

// validUTF8Writer passes writes on with every byte that is not part of valid UTF-8
// replaced by U+FFFD (as encoding/json does), so a page is valid UTF-8 whatever the names
// in it hold. A sequence cut between two writes is held until the next; Flush ends it.
type validUTF8Writer struct {
	w    io.Writer
	pend []byte // the incomplete sequence that ended the last write
	out  []byte
}

func (u *validUTF8Writer) Write(p []byte) (int, error) {
	data := p
	if len(u.pend) > 0 {
		data = append(u.pend, p...)
		u.pend = nil
	}
	u.out = u.out[:0]
	start, end := 0, len(data)
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			if !utf8.FullRune(data[i:]) { // may complete in the next write
				u.pend = append([]byte(nil), data[i:]...)
				end = i
				break
			}
			u.out = append(u.out, data[start:i]...)
			u.out = append(u.out, "\uFFFD"...)
			start = i + 1
		}
		i += size
	}
	var err error
	if len(u.out) == 0 {
		_, err = u.w.Write(data[start:end])
	} else {
		u.out = append(u.out, data[start:end]...)
		_, err = u.w.Write(u.out)
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a sequence left incomplete by the last write as U+FFFD.
func (u *validUTF8Writer) Flush() error {
	if len(u.pend) == 0 {
		return nil
	}
	u.pend = nil
	_, err := io.WriteString(u.w, "\uFFFD")
	return err
}

// errWriter is the writer of every text output; it keeps the first error.
type errWriter struct {
	w   io.Writer
	err error
}

// printf writes format (trusted, this package's own) with its string and error arguments
// passed through TerminalSafe: the one escaping path of untrusted text into text output.
func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	var safe []any // a copy, made only when an argument needs escaping
	for i, a := range args {
		var s string
		switch v := a.(type) {
		case string:
			s = v
		case error:
			s = v.Error()
		default:
			continue
		}
		if _, isErr := a.(error); !isErr && terminalClean(s) {
			continue
		}
		if safe == nil {
			safe = append([]any(nil), args...)
		}
		safe[i] = TerminalSafe(s)
	}
	if safe != nil {
		args = safe
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}

// appendString appends s as a JSON string: plain ASCII directly, anything else through
// encoding/json, whose escaping (HTML characters, invalid UTF-8, U+2028) it keeps.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always marshals
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// scriptJSON marshals v as JSON that is safe as the text of a <script> element: '<', '>'
// and '&' are written as \u003c, \u003e and \u0026, and U+2028 and U+2029 as \u2028 and
// \u2029, so no text in the data can close the element, open an HTML comment or end a
// JavaScript line. encoding/json already does this for its own output; the pass below
// repeats it for the output of MarshalJSON methods that turn the escaping off (some
// go-echarts types do). The bytes '<', '>' and '&' can only occur inside JSON strings, where
// the \u form means the same character.
func scriptJSON(v any) (template.JS, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for _, r := range string(b) {
		switch r {
		case '<', '>', '&', '\u2028', '\u2029':
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	return template.JS(sb.String()), nil
}

// checkScriptText reports whether s can be the text of a <script> element as is.
func checkScriptText(s string) error {
	l := strings.ToLower(s)
	for _, bad := range []string{"</script", "<!--"} {
		if strings.Contains(l, bad) {
			return fmt.Errorf("HTMLOptions.EChartsJS contains %q, which would break the page's script element", bad)
		}
	}
	return nil
}
