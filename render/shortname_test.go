package render

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShortName(t *testing.T) {
	short := "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
	if ShortName(short) != short {
		t.Errorf("short name changed: %q", ShortName(short))
	}
	long := "void cutlass::Kernel<" + strings.Repeat("cutlass::gemm::GemmShape<128, 128, 64>, ", 80) + ">(Params)"
	got := ShortName(long)
	if n := utf8.RuneCountInString(got); n > MaxNameText || !strings.HasPrefix(got, long[:120]) || !strings.HasSuffix(got, long[len(long)-36:]) {
		t.Errorf("ShortName: %d runes %q", n, got)
	}
}
