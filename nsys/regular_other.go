//go:build !unix

package nsys

import "os"

// OpenRegular opens path for reading and returns it only when it is a regular file.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return regularOnly(f)
}

// fileID: no inodes here; files are told apart by their names only.
func fileID(os.FileInfo) (FileID, bool) { return FileID{}, false }
