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
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil // O_NONBLOCK means nothing to a regular file's reads
}
