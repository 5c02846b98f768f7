package main

import (
	"os"
	"strings"
	"testing"
)

// TestTotals reads real go test -json output (testdata/sample.json: a package with two
// passing tests, one with a subtest, one failing test, one whose subtest fails, and one
// skipped test) and checks the summary: the failed tests' output, the failed subtest's
// message (it was dropped before its test's line), the skip's reason, and the totals as
// the last line, subtests not counted.
func TestTotals(t *testing.T) {
	f, err := os.Open("testdata/sample.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	if summarize(f, &out, "tests") {
		t.Error("a failed test reported as success")
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; last != "tests: 2 passed, 2 failed, 1 skipped; 1 package failed" {
		t.Errorf("last line %q\n%s", last, out.String())
	}
	for _, want := range []string{"--- FAIL: TestFail", "boom", "--- FAIL: TestSubFail/capture", "steps differ from the truth", "skipped 1: TestSkip (no browser)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	var sub strings.Builder
	summarize(strings.NewReader(`{"Action":"output","Package":"p","Test":"TestT/case","Output":"    x_test.go:9: not yet exact (why)\n"}
{"Action":"output","Package":"p","Test":"TestT/case","Output":"    --- SKIP: TestT/case (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestT/case"}
{"Action":"pass","Package":"p","Test":"TestT"}
{"Action":"pass","Package":"p","Elapsed":0.5}
`), &sub, "tests")
	if !strings.HasSuffix(sub.String(), "skipped: none\nskipped subtests 1: TestT/case (not yet exact (why))\ntests: 1 passed, 0 failed, 0 skipped\n") {
		t.Errorf("a skipped subtest, summary:\n%s", sub.String())
	}
	var pass strings.Builder
	ok := summarize(strings.NewReader(`{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Elapsed":0.5}
`), &pass, "race")
	if !ok || !strings.HasSuffix(pass.String(), "skipped: none\nrace: 1 passed, 0 failed, 0 skipped\n") {
		t.Errorf("ok %v, summary:\n%s", ok, pass.String())
	}
}
