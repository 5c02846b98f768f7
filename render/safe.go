package render

import (
	"fmt"
	"io"
	"strings"
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
// and separators (U+202E makes "gemm_kernel" display backwards), and every byte that is
// not part of valid UTF-8. A control or invalid byte becomes \xNN, another rune \uNNNN,
// so the result is valid UTF-8 holding no control character. Escaping twice changes
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

// unsafeRune reports control characters (C0, DEL, C1) and the bidirectional controls
// and separators that reorder or break what a terminal shows.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x2028, r == 0x2029:
		return true
	}
	return false
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
