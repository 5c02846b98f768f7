package render

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// tableRow is a row of the top-kernels or the ranks table: they keep their columns
// (within MaxTextLine), the only lines allowed past the width.
var tableRowRE = regexp.MustCompile(`^ *([0-9.]+(ns|µs|ms|s) +[0-9.]+% +[0-9]+ +|rank +median step|[0-9]+ +[0-9.]+(ns|µs|ms|s) +)`)

// TestTextReportAsRead: the text report as a user reads it, on real captures: every line
// within the width (100 piped, 60 given) but the top-kernels rows; no placeholder in prose
// ("Nµs", "median Nx", "1 more kinds"): the phase evidence quotes a step's own numbers and
// says which step; one list of warnings (the findings' about the report, then the trace's),
// which the answer counts.
func TestTextReportAsRead(t *testing.T) {
	dir := filepath.Join("..", "testdata", "traces")
	placeholder := regexp.MustCompile(`\bN(µs|ms|ns|x)\b|\bN [a-z]|\b1 more kinds\b`)
	for _, name := range []string{"engine-lazy-capture", "engine-window", "slow-step", "tp2-moe-eager", "serve-cb"} {
		r := traceReport(t, filepath.Join(dir, name+".sqlite.gz"), breakdown.Options{Phase: breakdown.AllSteps})
		fr := findings.Of(r)
		for _, width := range []int{0, 60} {
			var b bytes.Buffer
			if err := Text(&b, fr, TextOptions{Top: 10, Width: width}); err != nil {
				t.Fatal(err)
			}
			text := b.String()
			w := textWidth(width)
			for i, l := range strings.Split(text, "\n") {
				if n := utf8.RuneCountInString(l); n > w && !tableRowRE.MatchString(l) {
					t.Errorf("%s, width %d: line %d is %d columns: %q", name, w, i+1, n, l)
				}
			}
			if m := placeholder.FindString(text); m != "" {
				t.Errorf("%s: a placeholder in the text (%q)", name, m)
			}
			if n := strings.Count(text, "\nWarnings:\n"); n > 1 || strings.Contains(text, "Warnings about the report") {
				t.Errorf("%s: %d warning lists", name, n+strings.Count(text, "Warnings about the report"))
			}
			if warns := len(r.Warnings) + countWarnings(fr); warns > 0 && !strings.Contains(text, "Warnings: "+strconv.Itoa(warns)+", listed at the end") {
				t.Errorf("%s: the answer does not count the %d warnings", name, warns)
			}
		}
	}
	// engine-lazy-capture's graph-capture steps: their evidence with its numbers and step.
	r := traceReport(t, filepath.Join(dir, "engine-lazy-capture.sqlite.gz"), breakdown.Options{Phase: breakdown.AllSteps})
	var b bytes.Buffer
	if err := Text(&b, findings.Of(r), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`decode \(e\.g\. step \d+: captures a CUDA graph \([0-9.]+µs host time`).MatchString(strings.Join(strings.Fields(b.String()), " ")) {
		t.Errorf("engine-lazy-capture: the capture steps' evidence does not quote a step:\n%s", b.String())
	}
}

func countWarnings(fr *findings.Report) int {
	n := 0
	for _, g := range fr.Groups() {
		if g.Top().Warning() {
			n++
		}
	}
	return n
}

// TestClassifyColumns: classify's names start in one column whatever the length of the
// rule before them (context rules are 60 columns, "nccl" 4): tp2-moe-eager has both.
func TestClassifyColumns(t *testing.T) {
	r := traceReport(t, filepath.Join("..", "testdata", "traces", "tp2-moe-eager.sqlite.gz"), breakdown.Options{})
	var b bytes.Buffer
	if err := ClassifyText(&b, "tp2-moe-eager.sqlite", r.Kernels); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	col := strings.Index(lines[0], "name")
	rows, long := 0, false
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		rows++
		long = long || strings.Contains(l, "context: ")
		runes := []rune(l)
		if len(runes) <= col || runes[col-1] != ' ' || runes[col] == ' ' {
			t.Errorf("the name does not start at column %d: %q", col, l)
		}
	}
	if rows < 5 || !long {
		t.Fatalf("%d rows, context rules %v: not the table expected", rows, long)
	}
}
