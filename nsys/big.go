package nsys

import (
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

// Release gives the memory of the trace's largest arrays (kernels, API calls) back to
// the system at once instead of at the next garbage collection. The trace must not be
// used afterwards: its slices are emptied, and any slice of them kept elsewhere reads
// zeros.
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
