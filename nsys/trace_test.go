package nsys

import (
	"testing"
	"unsafe"
)

// TestRecordSizes guards the memory per row: a kernel and an API call are 24 bytes each.
func TestRecordSizes(t *testing.T) {
	if n := unsafe.Sizeof(Kernel{}); n != 24 {
		t.Errorf("Kernel is %d bytes, want 24", n)
	}
	if n := unsafe.Sizeof(APICall{}); n != 24 {
		t.Errorf("APICall is %d bytes, want 24", n)
	}
}
