package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/stepstat/stepstat/render"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressFor returns the reader's progress callback: a line on stderr, rewritten in
// place, for tables of over a million rows, when stderr is a terminal or force is set.
func progressFor(path string, o *stdio, force bool) func(table string, done, total int64) {
	if !force && !isTerminal(o.errOut) {
		return nil
	}
	var (
		mu    sync.Mutex // the reader reports from two goroutines at once
		last  time.Time
		shown bool
	)
	name := render.TerminalSafe(filepath.Base(path)) // a file name may hold escapes
	return func(table string, done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if done < 1<<20 && !shown {
			return
		}
		now := time.Now()
		final := total >= 0 && done >= total
		if !final && now.Sub(last) < 200*time.Millisecond {
			return
		}
		last, shown = now, true
		if total > 0 {
			fmt.Fprintf(o.errOut, "\r%s: %s %d/%d rows (%.0f%%)   ", name, render.TerminalSafe(table), done, total, 100*float64(done)/float64(total))
		} else {
			fmt.Fprintf(o.errOut, "\r%s: %s %d rows   ", name, render.TerminalSafe(table), done)
		}
		if final {
			fmt.Fprintln(o.errOut)
			shown = false
		}
	}
}
