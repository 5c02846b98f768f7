package nsys

import (
	"syscall"
)

// bigMin is the size from which a trace's arrays are mapped outside the Go heap.
var bigMin = 64 << 20

// mapBig returns size bytes of zeroed memory mapped outside the Go heap, or nil, in the
// system's base pages. It asks for no transparent huge pages (MADV_HUGEPAGE): where the
// system compacts memory on the fault of a page so advised (defrag "madvise", the usual
// setting), a machine with fragmented memory spends that time in the kernel: report
// JSON of the 4.6 M-kernel bigtrace on the 2-core machine of make bench, loaded, 3 paired
// runs: 1.35-1.80 s of system time with the advice, 0.63-0.77 s without, 10-15% less CPU.
func mapBig(size int) []byte {
	// MAP_NORESERVE: slots no row lands in are never touched, so they need no reserve.
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return b
}

// releaseBig gives the pages of b back to the system. The mapping stays: a slice that
// still refers to it reads zeros instead of faulting.
func releaseBig(b []byte) {
	syscall.Madvise(b, syscall.MADV_DONTNEED)
}
