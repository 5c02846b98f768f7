package render

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestElideLongName: a long kernel name alone in its table keeps its head and tail
// within the limit; a short one is unchanged.
func TestElideLongName(t *testing.T) {
	short := "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
	if got := elideNames([]string{short}, 106)[0]; got != short {
		t.Errorf("short name changed: %q", got)
	}
	long := "void cutlass::Kernel<" + strings.Repeat("cutlass::gemm::GemmShape<128, 128, 64>, ", 80) + ">(Params)"
	got := elideNames([]string{long}, MaxTextLine-topKernelsPrefix)[0]
	if n := utf8.RuneCountInString(got); n > MaxTextLine-topKernelsPrefix || !strings.HasPrefix(got, long[:30]) || !strings.HasSuffix(got, long[len(long)-20:]) || !strings.Contains(got, "…") {
		t.Errorf("elided to %d runes: %q", n, got)
	}
}
