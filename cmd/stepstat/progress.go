package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// textWidth is the width the text output's answer is wrapped to: the terminal's when the
// output goes to stdout and stdout is a terminal, else render.DefaultTextWidth (0).
func textWidth(output string, stdout io.Writer) int {
	if output != "" && output != "-" {
		return 0
	}
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			return w
		}
	}
	return 0
}

// progressFor returns the reader's progress callback: one line on stderr, rewritten in
// place, once over a million rows are read, when stderr is a terminal or force is set;
// blanked once the tables are read, so that it leaves nothing behind.
// The reader reads tables at once from two goroutines and reports each on its own; the
// line sums them (rows read of every table so far over their row counts), so that the
// total only grows as tables start and never flips from one table's count to another's.
func progressFor(path string, o *stdio, force bool) func(table string, done, total int64) {
	if !force && !isTerminal(o.errOut) {
		return nil
	}
	var (
		mu     sync.Mutex
		last   time.Time
		shown  bool
		width  int // of the line on screen
		tables []string
		done   = map[string]int64{}
		totals = map[string]int64{} // -1: not counted
	)
	name := render.TerminalSafe(filepath.Base(path)) // a file name may hold escapes
	return func(table string, d, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := done[table]; !ok {
			tables = append(tables, table)
		}
		done[table], totals[table] = d, total
		var sumDone, sumTotal int64
		counted := true
		var reading []string
		for _, t := range tables {
			sumDone += done[t]
			if totals[t] < 0 {
				counted = false
			} else {
				sumTotal += totals[t]
			}
			if totals[t] < 0 || done[t] < totals[t] {
				reading = append(reading, t)
			}
		}
		if sumDone < 1<<20 && !shown {
			return
		}
		now := time.Now()
		final := len(reading) == 0
		if !final && now.Sub(last) < progressEvery {
			return
		}
		last, shown = now, true
		what := strings.Join(reading, ", ")
		if what == "" {
			what = "done"
		}
		var line string
		if counted && sumTotal > 0 {
			line = fmt.Sprintf("%s: %s/%s rows (%.0f%%) %s", name, thousands(sumDone), thousands(sumTotal), 100*float64(sumDone)/float64(sumTotal), what)
		} else {
			line = fmt.Sprintf("%s: %s rows %s", name, thousands(sumDone), what)
		}
		// Each line overwrites the one before, padded to its width so that nothing of a
		// longer line stays. When every table started so far is read, the line is
		// blanked: a table read later starts it again in the same place, and the
		// report's output starts on a clean line (a "done" line per batch of tables
		// stayed behind before).
		pad := max(width-len(line), 0)
		fmt.Fprintf(o.errOut, "\r%s%s", line, strings.Repeat(" ", pad))
		width = len(line)
		if final {
			fmt.Fprintf(o.errOut, "\r%s\r", strings.Repeat(" ", width))
			width = 0
		}
	}
}

// progressEvery is the least time between two progress lines.
var progressEvery = 200 * time.Millisecond

// thousands writes n with commas between groups of three digits: 9,100,865.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
