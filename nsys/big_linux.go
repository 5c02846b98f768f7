package nsys

import (
	"syscall"
)

// bigMin is the size from which a trace's arrays are mapped outside the Go heap.
var bigMin = 64 << 20

// mapBig returns size bytes of zeroed memory mapped outside the Go heap and backed by
// transparent huge pages where the system allows them (madvise), or nil. The first
// touch of fresh memory is much of the cost of reading a large trace, and far fewer
// page faults are taken in 2 MB pages than in 4 kB ones (BenchmarkFreshMemory: 640 MB
// written in 1.4-1.5 s from the Go heap, 0.04-0.9 s mapped, on the machine of make bench).
func mapBig(size int) []byte {
	// MAP_NORESERVE: slots no row lands in are never touched, so they need no reserve.
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	const madvHugepage = 14 // MADV_HUGEPAGE
	syscall.Madvise(b, madvHugepage)
	return b
}

// releaseBig gives the pages of b back to the system. The mapping stays: a slice that
// still refers to it reads zeros instead of faulting.
func releaseBig(b []byte) {
	syscall.Madvise(b, syscall.MADV_DONTNEED)
}
