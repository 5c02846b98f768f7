package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSmallTruths: usage errors for what would be ignored or meaningless (a negative
// --top, speed-of-light flags on diff), a hint for a gzip'd export, and a warning when
// --unit run has one file per side.
func TestSmallTruths(t *testing.T) {
	inCaptureDir(t, "dense-eager", "dense-graph")
	if code, _, e := solRun(t, "report", "--top", "-3", "dense-eager.sqlite"); code != 2 || !strings.Contains(e, "--top must not be negative") {
		t.Errorf("--top -3: exit %d, stderr %q", code, e)
	}
	for _, f := range [][]string{{"--sol-step", "1ms"}, {"--sol-bytes", "1GB"}, {"--bandwidth", "4800"}, {"--batch", "4"}} {
		args := append(append([]string{"diff"}, f...), "dense-eager.sqlite", "dense-graph.sqlite")
		if code, _, e := solRun(t, args...); code != 2 || !strings.Contains(e, f[0]+" applies to report only") {
			t.Errorf("diff %s: exit %d, stderr %q", f[0], code, e)
		}
	}
	code, out, _ := solRun(t, "diff", "--unit", "run", "dense-eager.sqlite", "dense-graph.sqlite")
	if code != 0 || !strings.Contains(out, "one sample per run with 1 run(s) on dense-eager and 1 on dense-graph") {
		t.Errorf("--unit run, one file per side: exit %d, no warning in:\n%s", code, out)
	}
	gz := filepath.Join(captureDir, "dense-eager.sqlite.gz")
	if _, err := os.Stat(gz); err != nil {
		t.Fatal(err)
	}
	if code, _, e := solRun(t, "report", gz); code != 1 || !strings.Contains(e, `is gzip-compressed`) || !strings.Contains(e, "gunzip -k dense-eager.sqlite.gz") {
		t.Errorf("gzip'd export: exit %d, stderr %q", code, e)
	}
}
