package nsys

import (
	"os"
	"sync"
	"unsafe"
)

// bigSlice returns a zeroed slice of n values of T, which must hold no pointers (the
// garbage collector does not see memory mapped outside its heap). From bigMin bytes on
// the slice is mapped outside the Go heap (see mapBig), registered with t (when t was made by Open), and lives
// until t.Release or the end of the process; below that, or where mapping fails, it is
// an ordinary slice.
func bigSlice[T any](t *Trace, n int) []T {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if n <= 0 || size < bigMin {
		return make([]T, n)
	}
	var b []byte
	if t.big != nil {
		b = mapBig(size)
	}
	if b == nil {
		return make([]T, n)
	}
	t.big.mu.Lock()
	t.big.maps = append(t.big.maps, b)
	t.big.mu.Unlock()
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// releaseSlots gives back the pages wholly inside s, slots of a slice from bigSlice that
// hold nothing any more (rows moved down from them); they read as zeros afterwards.
// Memory on the Go heap is left to the garbage collector.
func releaseSlots[T any](t *Trace, s []T) {
	if len(s) == 0 || t.big == nil {
		return
	}
	var zero T
	start := uintptr(unsafe.Pointer(&s[0]))
	end := start + uintptr(len(s))*unsafe.Sizeof(zero)
	t.big.mu.Lock()
	defer t.big.mu.Unlock()
	for _, m := range t.big.maps {
		ms := uintptr(unsafe.Pointer(&m[0]))
		if start < ms || end > ms+uintptr(len(m)) {
			continue
		}
		ps := uintptr(os.Getpagesize())
		if a, b := (start+ps-1)&^(ps-1), end&^(ps-1); b > a {
			releaseBig(m[a-ms : b-ms])
		}
		return
	}
}

// Release gives the memory of the trace's largest arrays (kernels, API calls) back to
// the system at once instead of at the next garbage collection (mapped outside the Go heap,
// it is not the collector's: until Release it lives as long as the process). The caller
// of Open calls it when done. The trace must not be used afterwards: its slices are
// emptied, and any slice of them kept elsewhere reads zeros; what the caller keeps must
// not refer to the trace's kernels or API calls (a report of package breakdown holds none
// of them: TestReportHoldsNoTraceMemory).
func (t *Trace) Release() {
	t.Kernels, t.APICalls = nil, nil
	if t.big == nil {
		return
	}
	t.big.mu.Lock()
	defer t.big.mu.Unlock()
	for _, b := range t.big.maps {
		releaseBig(b)
	}
	t.big.maps = nil
}

// bigMaps is the memory mapped by bigSlice for one trace.
type bigMaps struct {
	mu   sync.Mutex
	maps [][]byte
}
