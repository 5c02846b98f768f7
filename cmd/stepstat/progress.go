package main

import "github.com/stepstat/stepstat/nsys"

// progress returns the reader's progress callback: nil for now (set by --progress).
func progress(o *stdio) func(table string, done, total int64) {
	return nil
}

var _ = nsys.Options{}
