package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
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

// TestReportsAnyGOMAXPROCS runs report -f json on every real capture, public trace and
// trace of the truth corpus (unpacked with xz, when it is installed; STEPSTAT_SHARED names
// the folder of the public traces and the truth corpus, ../shared by default) with the direct
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
	shared := os.Getenv("STEPSTAT_SHARED") // the corpus beside the checkout unless set
	if shared == "" {
		shared = filepath.Join("..", "..", "..", "shared")
	}
	pub, _ := filepath.Glob(filepath.Join(shared, "traces", "public", "*.sqlite"))
	files = append(files, pub...)
	truth, _ := filepath.Glob(filepath.Join(shared, "traces", "truth", "*.sqlite.xz"))
	if len(pub) == 0 || len(truth) == 0 {
		t.Logf("%d public traces, %d of the truth corpus in %s (STEPSTAT_SHARED)", len(pub), len(truth), shared)
	}
	if _, err := exec.LookPath("xz"); err != nil {
		t.Logf("no xz command: the truth corpus is left out")
		truth = nil
	}
	for _, x := range truth {
		dst := filepath.Join(dir, "truth-"+strings.TrimSuffix(filepath.Base(x), ".xz"))
		cmd := exec.Command("sh", "-c", `xz -dc "$0" > "$1"`, x, dst)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("xz -dc %s: %v\n%s", x, err, out)
		}
		files = append(files, dst)
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
