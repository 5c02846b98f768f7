//go:build unix

package nsys

import (
	"os"
	"syscall"
)

// OpenRegular opens path for reading without blocking (open(2) of a FIFO waits for a
// writer forever, and SIGINT cannot end it) and returns it only when it is a regular
// file, checked on the open file itself, so a file swapped for a FIFO after a Stat is
// refused too.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return regularOnly(f) // O_NONBLOCK means nothing to a regular file's reads
}

// fileID returns the device and inode of fi.
func fileID(fi os.FileInfo) (FileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}, false
	}
	return FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, true
}
