package sqlitefile

import (
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only, or returns nil.
func mapFile(f *os.File, size int64) []byte {
	if size <= 0 || int64(int(size)) != size {
		return nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

func unmapFile(b []byte) { syscall.Munmap(b) }

// dontNeed drops b's pages from the process's page tables: a file's pages stay in the
// page cache, and read again they fault back in with the same bytes.
func dontNeed(b []byte) { syscall.Madvise(b, syscall.MADV_DONTNEED) }

// populateRead maps b's pages in one call (MADV_POPULATE_READ, Linux 5.14) instead of a
// page fault each; older kernels (and some sandboxes) refuse it.
func populateRead(b []byte) error { return syscall.Madvise(b, 22) }
