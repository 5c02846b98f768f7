package nsys

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestBigSliceRelease checks the arrays mapped outside the Go heap: zeroed, of the
// asked length, given back by Release, after which a slice kept elsewhere reads zeros
// rather than faulting.
func TestBigSliceRelease(t *testing.T) {
	tr := &Trace{big: &bigMaps{}}
	n := bigMin/int(unsafe.Sizeof(Kernel{})) + 1000
	ks := bigSlice[Kernel](tr, n)
	if len(ks) != n {
		t.Fatalf("len %d, want %d", len(ks), n)
	}
	mapped := len(tr.big.maps) == 1
	if runtime.GOOS == "linux" && !mapped {
		t.Fatal("a large slice was not mapped outside the heap on linux")
	}
	for _, i := range []int{0, n / 2, n - 1} {
		if ks[i] != (Kernel{}) {
			t.Fatalf("kernel %d not zero: %+v", i, ks[i])
		}
		ks[i] = Kernel{Start: 1, End: 2, Correlation: uint32(i)}
	}
	tr.Kernels = ks
	if small := bigSlice[Kernel](tr, 10); len(small) != 10 || len(tr.big.maps) > 1 {
		t.Fatalf("a small slice was mapped: len %d, %d maps", len(small), len(tr.big.maps))
	}
	if ks[n/2].Correlation != uint32(n/2) {
		t.Fatal("write lost")
	}
	tr.Release()
	if tr.Kernels != nil || len(tr.big.maps) != 0 {
		t.Fatal("Release kept the arrays")
	}
	if mapped && ks[n/2] != (Kernel{}) {
		t.Fatalf("released memory reads %+v, want zeros", ks[n/2])
	}
	// A trace not made by Open gets ordinary slices.
	if plain := bigSlice[Kernel](&Trace{}, n); len(plain) != n {
		t.Fatal("plain slice of the wrong length")
	}
}
