package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
	files = append(files, nsystest.PublicTracesIfPresent(t)...)
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

// TestReportsAnyGOMAXPROCS runs report -f json on every real capture, public trace and
// trace of the truth corpus (the test corpus, nsystest: unpacked with xz, when the corpus
// is there; without it, the project's captures alone) with the direct
// reader at GOMAXPROCS 1, 2 and 16, and wants each byte for byte the report of the
// SQLite path: the reader's lanes and the analysis's pieces change nothing. (The pieces of
// steps start at 2^20 kernels, past these traces: TestAccountSplit cuts the same traces
// everywhere; make bench compares GOMAXPROCS 1, 2 and all on the large trace.)
func TestReportsAnyGOMAXPROCS(t *testing.T) {
	t.Cleanup(debug.FreeOSMemory)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	dir := t.TempDir()
	gz, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "traces", "*.sqlite.gz"))
	var files []string
	for _, g := range gz {
		dst := filepath.Join(dir, strings.TrimSuffix(filepath.Base(g), ".gz"))
		nsystest.Gunzip(t, g, dst)
		files = append(files, dst)
	}
	pub := nsystest.PublicTracesIfPresent(t)
	files = append(files, pub...)
	if pub != nil {
		truth, _ := filepath.Glob(filepath.Join(nsystest.TruthDir(t), "*.sqlite.xz"))
		if len(truth) == 0 {
			t.Fatalf("no truth captures (*.sqlite.xz) in %s", nsystest.TruthDir(t))
		}
		tdir := filepath.Join(dir, "truth")
		if err := os.Mkdir(tdir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, x := range truth {
			files = append(files, nsystest.TruthCapture(t, strings.TrimSuffix(filepath.Base(x), ".sqlite.xz"), tdir))
		}
	}
	report := func(reader string, procs int, f string) string {
		t.Setenv("STEPSTAT_READER", reader)
		runtime.GOMAXPROCS(procs)
		var out, errOut bytes.Buffer
		code := run([]string{"report", "-f", "json", f}, strings.NewReader(""), &out, &errOut)
		return fmt.Sprintf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	for _, f := range files {
		want := report("sqlite", 2, f)
		for _, procs := range []int{1, 2, 16} {
			if got := report("", procs, f); got != want {
				t.Errorf("%s: report -f json at GOMAXPROCS=%d differs from the SQLite path's:\n%s",
					filepath.Base(f), procs, unifiedDiff("sqlite", "direct", want, got))
			}
		}
	}
}
