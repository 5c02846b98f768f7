//go:build !linux

package sqlitefile

import (
	"errors"
	"os"
)

// mapFile maps nothing here: pages are read with pread.
func mapFile(*os.File, int64) []byte { return nil }

func unmapFile([]byte) {}

func dontNeed([]byte) {}

func populateRead([]byte) error { return errors.ErrUnsupported }
