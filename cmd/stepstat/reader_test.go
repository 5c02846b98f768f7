package main

import (
	"bytes"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestDirectReaderReports runs report (text, JSON, CSV) and info on every real capture
// and every public trace twice, with the direct reader of the file format and with SQLite
// alone (STEPSTAT_READER=sqlite), and wants the reports byte for byte the same; info
// differs only in how it says the tables were read.
func TestDirectReaderReports(t *testing.T) {
	// The reports are made in this process: give the memory back afterwards, so that
	// tests that measure a child's peak memory (a child starts with this process's
	// resident memory until it execs) do not count it. The file's name also puts it after
	// those tests (hostile3_test.go, limits_test.go) in a plain go test.
	t.Cleanup(debug.FreeOSMemory)
	gz, err := filepath.Glob(filepath.Join("..", "..", "testdata", "traces", "*.sqlite.gz"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files []string
	for _, g := range gz {
		dst := filepath.Join(dir, strings.TrimSuffix(filepath.Base(g), ".gz"))
		nsystest.Gunzip(t, g, dst)
		files = append(files, dst)
	}
	pub, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "traces", "public", "*.sqlite"))
	files = append(files, pub...)
	if len(pub) == 0 {
		t.Logf("no public traces in ../shared/traces/public: captures only")
	}
	runAs := func(reader string, args ...string) (string, string, int) {
		t.Setenv("STEPSTAT_READER", reader)
		var out, errOut bytes.Buffer
		code := run(args, strings.NewReader(""), &out, &errOut)
		return out.String(), errOut.String(), code
	}
	for _, f := range files {
		for _, format := range []string{"text", "json", "csv"} {
			args := []string{"report", "-f", format, f}
			do, de, dc := runAs("", args...)
			so, se, sc := runAs("sqlite", args...)
			if do != so || de != se || dc != sc {
				t.Errorf("%s: report -f %s differs between the direct reader (exit %d) and SQLite (exit %d):\n%s",
					filepath.Base(f), format, dc, sc, unifiedDiff("sqlite", "direct", so+se, do+de))
			}
		}
	}
}
