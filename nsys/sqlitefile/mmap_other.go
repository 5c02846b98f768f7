//go:build !linux

package sqlitefile

import "os"

// mapFile maps nothing here: pages are read with pread.
func mapFile(*os.File, int64) []byte { return nil }

func unmapFile([]byte) {}

func dontNeed([]byte) {}
