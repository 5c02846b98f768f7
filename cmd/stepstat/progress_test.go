package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// TestProgressTotal feeds the progress line what the reader reports on a large trace: the
// kernel and runtime tables read at once from two goroutines, interleaved, each with its
// own row count (9,100,865 and 3,031,981 rows), then a small table. The line's total is the
// sum of the tables started so far: it never goes down, and the rows read never go down.
func TestProgressTotal(t *testing.T) {
	old := progressEvery
	progressEvery = 0
	defer func() { progressEvery = old }()
	var errOut bytes.Buffer
	fn := progressFor("big.sqlite", &stdio{errOut: &errOut}, true)
	const kern, rt = 9100865, 3031981
	for i := int64(1); i <= 10; i++ {
		fn("CUPTI_ACTIVITY_KIND_KERNEL", kern*i/10, kern)
		fn("CUPTI_ACTIVITY_KIND_RUNTIME", rt*i/10, rt)
	}
	fn("CUPTI_ACTIVITY_KIND_MEMCPY", 1000, 1000)
	line := regexp.MustCompile(`big\.sqlite: ([0-9,]+)/([0-9,]+) rows`)
	num := func(s string) int64 { n, _ := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64); return n }
	var lastDone, lastTotal int64
	n := 0
	for _, m := range line.FindAllStringSubmatch(errOut.String(), -1) {
		done, total := num(m[1]), num(m[2])
		if total < lastTotal || done < lastDone {
			t.Errorf("progress went from %d/%d to %d/%d rows", lastDone, lastTotal, done, total)
		}
		lastDone, lastTotal = done, total
		n++
	}
	if n < 10 {
		t.Fatalf("%d progress lines:\n%q", n, errOut.String())
	}
	if lastTotal != kern+rt+1000 || lastDone != lastTotal {
		t.Errorf("last line %d/%d rows, want every row of the three tables (%d)", lastDone, lastTotal, kern+rt+1000)
	}
	if !strings.Contains(errOut.String(), "12,132,846/12,132,846 rows (100%)") {
		t.Errorf("no final line with thousands separators:\n%q", errOut.String())
	}
}

// TestReportHelpCategories checks that `stepstat report --help` names every category.
func TestReportHelpCategories(t *testing.T) {
	code, stdout, stderr := runCLI("report", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	text := strings.Join(strings.Fields(stdout+stderr), " ")
	for _, c := range kernelclass.Order {
		if !strings.Contains(text, c.String()+",") && !strings.Contains(text, c.String()+" ") {
			t.Errorf("report --help does not name %s", c)
		}
	}
	if !strings.Contains(text, "untraced_graph") {
		t.Error("report --help does not name untraced_graph")
	}
}

// screen plays what was written to a terminal: "\r" returns to the line's start, "\n"
// starts the next line, other bytes overwrite. It returns the lines left on screen,
// trailing spaces removed, blank lines dropped.
func screen(out string) []string {
	lines := [][]byte{nil}
	col := 0
	for i := 0; i < len(out); i++ {
		cur := &lines[len(lines)-1]
		switch c := out[i]; c {
		case '\r':
			col = 0
		case '\n':
			lines = append(lines, nil)
			col = 0
		default:
			for len(*cur) <= col {
				*cur = append(*cur, ' ')
			}
			(*cur)[col] = c
			col++
		}
	}
	var left []string
	for _, l := range lines {
		if s := strings.TrimRight(string(l), " "); s != "" {
			left = append(left, s)
		}
	}
	return left
}

// TestProgressLeavesNothing reads two tables at once, then a third after both are done
// (the reader's order on a large trace): the progress line must leave no "done" line
// behind on a terminal (it left one per batch of tables), and the report's first line
// must start at the left margin.
func TestProgressLeavesNothing(t *testing.T) {
	old := progressEvery
	progressEvery = 0
	defer func() { progressEvery = old }()
	var errOut bytes.Buffer
	fn := progressFor("big.sqlite", &stdio{errOut: &errOut}, true)
	const kern, rt = 9100865, 3031981
	for i := int64(1); i <= 4; i++ {
		fn("CUPTI_ACTIVITY_KIND_KERNEL", kern*i/4, kern)
		fn("CUPTI_ACTIVITY_KIND_RUNTIME", rt*i/4, rt)
	}
	fn("CUPTI_ACTIVITY_KIND_MEMCPY", 1000, 1000)
	fn("NVTX_EVENTS", 10, 2000)
	fn("NVTX_EVENTS", 2000, 2000)
	if !strings.Contains(errOut.String(), "done") {
		t.Fatalf("no final progress line written:\n%q", errOut.String())
	}
	errOut.WriteString("Device 0 (NVIDIA H200): ...\n")
	if left := screen(errOut.String()); len(left) != 1 || left[0] != "Device 0 (NVIDIA H200): ..." {
		t.Errorf("on screen after the read:\n%s", strings.Join(left, "\n"))
	}
}
