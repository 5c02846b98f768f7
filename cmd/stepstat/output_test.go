package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputIsInput checks that no command writes its report over its input trace.
func TestOutputIsInput(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "demo.sqlite")
	gunzipTo(t, filepath.Join("..", "..", "testdata", "traces", "dense-eager.sqlite.gz"), trace)
	want, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"report", "-o", trace, trace},
		{"report", "--html", trace, trace},
		{"classify", "-o", trace, trace},
		{"diff", "-o", trace, trace, trace},
		{"diff", "--html", trace, "a=" + trace, "b=" + trace},
	} {
		var stdout, stderr bytes.Buffer
		code := run(args, nil, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "is the input trace") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming the input", args, code, stderr.String())
		}
		got, err := os.ReadFile(trace)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%v: the input changed", args)
		}
	}
}
