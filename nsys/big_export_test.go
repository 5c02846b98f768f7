package nsys

import "unsafe"

// SetBigMin sets the size from which a trace's arrays are mapped outside the Go heap (for
// tests of small traces) and returns the size before.
func SetBigMin(n int) int {
	old := bigMin
	bigMin = n
	return old
}

// MappedRanges returns the address ranges [start, end) of the memory mapped for t's arrays.
func MappedRanges(t *Trace) [][2]uintptr {
	if t.big == nil {
		return nil
	}
	t.big.mu.Lock()
	defer t.big.mu.Unlock()
	var out [][2]uintptr
	for _, m := range t.big.maps {
		s := uintptr(unsafe.Pointer(&m[0]))
		out = append(out, [2]uintptr{s, s + uintptr(len(m))})
	}
	return out
}
