package render

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTerminalSafe checks the one escaping path (issue 25): C0, DEL, C1 as runes and as raw
// bytes, bidi controls and bytes that are not UTF-8 are escaped; other text, U+FFFD
// written as such included, is kept; the result is valid UTF-8 and escaping it again
// changes nothing.
func TestTerminalSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"gemm_kernel<float, 128>", "gemm_kernel<float, 128>"},
		{"µs → é 中文 \uFFFD", "µs → é 中文 \uFFFD"},
		{"\x1b[2J\x07\n\t\r", `\x1b[2J\x07\x0a\x09\x0d`},
		{"a\x7fb", `a\x7fb`},
		{"raw \x9b[31m", `raw \x9b[31m`},
		{"rune \u009b[31m \u0085", `rune \x9b[31m \x85`},
		{"bad \xff\xfe \xc3 \xe2\x82", `bad \xff\xfe \xc3 \xe2\x82`},
		{"\xed\xa0\x80", `\xed\xa0\x80`}, // a surrogate encoded: not UTF-8
		{"gemm_\u202etxet\u2066\u200f\u061c\u2028", `gemm_\u202etxet\u2066\u200f\u061c\u2028`},
	} {
		got := TerminalSafe(tc.in)
		if got != tc.want {
			t.Errorf("TerminalSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !utf8.ValidString(got) || TerminalSafe(got) != got || terminalClean(got) != true {
			t.Errorf("TerminalSafe(%q) = %q: not valid, or not stable", tc.in, got)
		}
		if terminalClean(tc.in) != (tc.in == tc.want) {
			t.Errorf("terminalClean(%q) = %v", tc.in, terminalClean(tc.in))
		}
	}
}

// TestTextWriterEscapes checks that every string and error argument of the text writer is
// escaped, the format itself not.
func TestTextWriterEscapes(t *testing.T) {
	var b bytes.Buffer
	ew := &errWriter{w: &b}
	ew.printf("%s|%-6s|%v|%d|%s\n", "a\x1bb", "\x9b", errors.New("e\x07"), 7, kernelCategoryForTest)
	if got, want := b.String(), `a\x1bb|\x9b  |e\x07|7|gemm`+"\n"; got != want {
		t.Errorf("printf wrote %q, want %q", got, want)
	}
}

// kernelCategoryForTest is a Stringer argument: written as it is.
var kernelCategoryForTest = stringer("gemm")

type stringer string

func (s stringer) String() string { return string(s) }

// TestValidUTF8Writer checks that a page written in pieces of any size comes out valid
// UTF-8: bytes that are not UTF-8 become U+FFFD, sequences cut between writes are kept.
func TestValidUTF8Writer(t *testing.T) {
	in := []byte("<td>µs é 中文 \xff\x9b ok \xe2\x82 \xf0\x9f\x98\x80 end \xe4")
	want := "<td>µs é 中文 \uFFFD\uFFFD ok \uFFFD\uFFFD \U0001F600 end \uFFFD"
	for size := 1; size <= len(in); size++ {
		var out bytes.Buffer
		w := &validUTF8Writer{w: &out}
		for i := 0; i < len(in); i += size {
			p := in[i:min(len(in), i+size)]
			if n, err := w.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("pieces of %d: %q, want %q", size, out.String(), want)
		}
	}
}

// TestClipValue checks the clip of quoted knob values: at most 200 bytes and "…", at a
// rune boundary.
func TestClipValue(t *testing.T) {
	if s := strings.Repeat("x", 200); clipValue(s) != s {
		t.Errorf("a 200-byte value is clipped")
	}
	s := strings.Repeat("x", 199) + "é" + strings.Repeat("y", 1<<20)
	if got := clipValue(s); got != strings.Repeat("x", 199)+"…" {
		t.Errorf("ClipValue = %q", firstChars(got, 300))
	}
}

func firstChars(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// TestTerminalSafeInvisible (issue 41, item 12): characters a terminal shows as nothing
// (zero-width space and joiners, BOM, soft hyphen, word joiner, tag characters, variation
// selectors) are escaped, so 7 kernels that differ only by them print as 7 names; visible
// text (accents, CJK, the non-breaking space) is kept.
func TestTerminalSafeInvisible(t *testing.T) {
	base := "gemm_kernel"
	seen := map[string]bool{TerminalSafe(base): true}
	for _, tc := range []struct{ in, want string }{
		{"gemm\u200b_kernel", `gemm\u200b_kernel`},
		{"gemm\u200d_kernel", `gemm\u200d_kernel`},
		{"\ufeffgemm_kernel", `\ufeffgemm_kernel`},
		{"gemm\u00ad_kernel", `gemm\xad_kernel`},
		{"gemm_kernel\U000e0041", `gemm_kernel\U000e0041`},
		{"gemm\u2060_kernel", `gemm\u2060_kernel`},
		{"gemm_kernel\ufe0f", `gemm_kernel\ufe0f`},
	} {
		got := TerminalSafe(tc.in)
		if got != tc.want || TerminalSafe(got) != got {
			t.Errorf("TerminalSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if seen[got] {
			t.Errorf("TerminalSafe(%q) = %q prints as another name", tc.in, got)
		}
		seen[got] = true
	}
	for _, keep := range []string{"é 中文 µs", "a\u00a0b", "naïve ñ"} {
		if got := TerminalSafe(keep); got != keep {
			t.Errorf("TerminalSafe(%q) = %q, want it kept", keep, got)
		}
	}
}
