package main

import (
	"os"
	"strings"
	"testing"
)

// Tests of issue 41 (hostile inputs, round five), on real captures.

// TestDiffSideNamedWithEquals (item 11): a diff side that exists as given is a file, even
// when its name holds "=" (run=3.sqlite), as a name holding "+" is; a label still works
// when the name as given does not exist.
func TestDiffSideNamedWithEquals(t *testing.T) {
	inCaptureDir(t, "dense-graph", "dense-eager")
	if err := os.Rename("dense-graph.sqlite", "run=3.sqlite"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := solRun(t, "diff", "run=3.sqlite", "new=dense-eager.sqlite")
	if code != 0 || !strings.Contains(out, "run=3") {
		t.Errorf("diff run=3.sqlite new=dense-eager.sqlite: exit %d, stderr %q; want the file run=3.sqlite read as the base side", code, errOut)
	}
	if code, _, errOut := solRun(t, "diff", "base=dense-eager.sqlite", "x=missing.sqlite"); code != 1 || !strings.Contains(errOut, "missing.sqlite: no such file") {
		t.Errorf("diff with a labelled missing side: exit %d, stderr %q", code, errOut)
	}
}
