package render

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// TestTextWidth renders real captures (the 2-GPU eager capture, whose findings ran to 559
// characters a line, a cuDNN capture whose stall finding names a kernel, a MoE capture) at
// 80 columns and at the width of a pipe (100): every line of the answer (before "Trace:")
// is within the width, no line anywhere is over MaxTextLine, and wrapping loses nothing:
// the text without its white space is the same at every width.
func TestTextWidth(t *testing.T) {
	for _, name := range []string{"tp2-moe-eager", "sdpa-cudnn-eager", "moe-eager-nvtx"} {
		t.Run(name, func(t *testing.T) {
			rep := findings.Of(traceReport(t, filepath.Join("..", "testdata", "traces", name+".sqlite.gz"), breakdown.Options{}))
			var texts []string
			for _, width := range []int{80, 0, MaxTextLine} {
				var b strings.Builder
				if err := Text(&b, rep, TextOptions{Top: 10, Width: width}); err != nil {
					t.Fatal(err)
				}
				text := b.String()
				texts = append(texts, text)
				answer, details, ok := strings.Cut(text, "\nTrace: ")
				if !ok {
					t.Fatalf("width %d: no Trace: line", width)
				}
				limit := textWidth(width)
				if width == 0 && limit != 100 {
					t.Fatalf("piped width %d, want 100", limit)
				}
				for _, l := range strings.Split(answer, "\n") {
					if n := utf8.RuneCountInString(l); n > limit {
						t.Errorf("width %d: answer line of %d runes: %q", width, n, l)
					}
				}
				for _, l := range strings.Split(details, "\n") {
					if n := utf8.RuneCountInString(l); n > MaxTextLine {
						t.Errorf("width %d: line of %d runes: %q", width, n, l)
					}
				}
			}
			squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
			if squeeze(texts[0]) != squeeze(texts[1]) || squeeze(texts[1]) != squeeze(texts[2]) {
				t.Error("the text differs between widths beyond its line breaks")
			}
			if !strings.Contains(texts[1], "\n       ") { // a finding's paragraph wrapped under its text
				t.Errorf("no wrapped finding at width 100:\n%s", texts[1])
			}
		})
	}
}

// TestWrapLine checks the hanging indents: under a list item's text, two spaces deeper
// for other lines, spacing within a line kept, a separator kept at the end of a line and a
// word longer than the line cut.
func TestWrapLine(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"  1. device 0: launch_bound [high] at stake", 20, "  1. device 0:\n     launch_bound\n     [high] at stake"},
		{"     try: capture the step", 18, "     try: capture\n       the step"},
		{"a  b  c  d", 7, "a  b  c\n  d"},
		{"aaaa 1.2% · bbbb 3.4%", 12, "aaaa 1.2% ·\n  bbbb 3.4%"},
		{"abcdefghij", 4, "abcd\n  ef\n  gh\n  ij"},
		{"short", 10, "short"},
	} {
		if got := wrapText(tc.in, tc.width); got != tc.want {
			t.Errorf("wrapText(%q, %d) =\n%s\nwant\n%s", tc.in, tc.width, got, tc.want)
		}
	}
}

// TestElideNames checks that elided names keep what tells the rows apart: two kernels
// whose 200-rune names differ only in the middle stay different within 106 runes, each
// keeps its differing word, and a name within the limit is unchanged.
func TestElideNames(t *testing.T) {
	head := "void at::native::elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl_nocast<at::native::"
	tail := "<c10::BFloat16>>(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)"
	a, b := head+"silu_kernel"+tail, head+"BinaryFunctor_add"+tail
	got := elideNames([]string{a, b, "nvjet_sm90_tst_64x8"}, 106)
	if got[0] == got[1] || !strings.Contains(got[0], "silu_kernel") || !strings.Contains(got[1], "BinaryFunctor_add") {
		t.Errorf("elided alike:\n%s\n%s", got[0], got[1])
	}
	for _, g := range got[:2] {
		if n := utf8.RuneCountInString(g); n > 106 || !strings.HasPrefix(g, "void at::native::") || !strings.HasSuffix(g, "(int, T3)") {
			t.Errorf("elided to %d runes: %s", n, g)
		}
	}
	if got[2] != "nvjet_sm90_tst_64x8" {
		t.Errorf("short name changed: %s", got[2])
	}
}

// unwrapped undoes wrapText at MaxTextLine for tests that read a sentence as one line: a
// line indented two spaces deeper than the paragraph it follows, after a line that
// reached near the limit, continues that line.
func unwrapped(s string) string {
	var out []string
	lead := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	paraLead, last := 0, "" // the paragraph's indent, the line before as written
	for _, l := range strings.Split(s, "\n") {
		if n := len(out); n > 0 && utf8.RuneCountInString(last) >= MaxTextLine-30 && lead(l) == paraLead+2 && strings.TrimSpace(l) != "" {
			out[n-1] += " " + strings.TrimLeft(l, " ")
			last = l
			continue
		}
		out = append(out, l)
		paraLead, last = lead(l), l
	}
	return strings.Join(out, "\n")
}

// TestElideNamesGrid (issue 41, item 6): a 2x2 grid of CUTLASS variants (tile shape and
// stage count differing far apart) elided to one label at every width up to 160. Every
// width keeps the four names apart, within the limit, and names that are equal stay equal.
func TestElideNamesGrid(t *testing.T) {
	pre := "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_"
	mid := "_align8, cutlass::gemm::threadblock::MmaMultistage<cutlass::gemm::GemmShape<128, 128, 32>, cutlass::transform::threadblock::PredicatedTileAccessIterator<cutlass::MatrixShape<128, 32>, cutlass::bfloat16_t, cutlass::layout::RowMajor, 1, cutlass::transform::PitchLinearWarpRakedThreadMap<cutlass::PitchLinearShape<32, 128>, 128, cutlass::PitchLinearShape<4, 8>, 8>, cutlass::Array<cutlass::bfloat16_t, 8, true>, false, cutlass::layout::NoPermute>, "
	post := ", cutlass::arch::CacheOperation::Global, float, cutlass::layout::RowMajor, cutlass::gemm::threadblock::MmaPolicy<cutlass::gemm::warp::MmaTensorOp<cutlass::gemm::GemmShape<64, 64, 32>>>>>(T1::Params)"
	var names []string
	for _, tile := range []string{"64x64_32x6_tn", "128x64_32x6_tn"} {
		for _, stages := range []string{"(int)3", "(int)4"} {
			names = append(names, pre+tile+mid+stages+post)
		}
	}
	names = append(names, names[0]) // the same name twice: one label
	for limit := 40; limit <= 160; limit++ {
		got := elideNames(names, limit)
		seen := map[string]int{}
		for i, g := range got[:4] {
			if j, dup := seen[g]; dup {
				t.Fatalf("width %d: names %d and %d both elide to %q", limit, j, i, g)
			}
			seen[g] = i
			if n := utf8.RuneCountInString(g); n > limit {
				t.Errorf("width %d: %d runes: %s", limit, n, g)
			}
		}
		if got[4] != got[0] {
			t.Errorf("width %d: one name elided two ways: %q, %q", limit, got[0], got[4])
		}
	}
}

// TestVariantNamesApart (issue 41, item 6): the diff's "only in base" and "only in new"
// of a changed variant never show one label: each side's names are elided together with
// the other side's.
func TestVariantNamesApart(t *testing.T) {
	head := "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_" + strings.Repeat("x", 80)
	tail := strings.Repeat("y", 80) + ">(T1::Params)"
	base := []string{head + "64x64_32x6_tn" + tail}
	nw := []string{head + "64x64_32x3_tn" + tail}
	b, n := variantNames(base, nw), variantNames(nw, base)
	if b == n || !strings.Contains(b, "x6") || !strings.Contains(n, "x3") {
		t.Errorf("only in base %q, only in new %q: want two labels showing what differs", b, n)
	}
}
