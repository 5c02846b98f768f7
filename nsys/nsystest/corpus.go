package nsystest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The test corpus is the shared checkout beside the repository (not in git): traces/public
// holds public nsys exports (.sqlite), traces/truth real H200 captures with their ground
// truth (.sqlite.xz). Every test that reads it finds it here, in one place, as
// golang.org/x/tools' internal/testenv finds the tools a test needs: without the corpus a
// test skips saying what is missing and how to get it; a file missing from a corpus that is
// there fails the test.

// CorpusEnv is the one environment variable of the test corpus: the folder of the shared
// checkout. Unset, the corpus is ../shared beside the repository's root. Under CI=true a
// corpus that CorpusEnv names and that is not there fails the tests instead of skipping
// them.
const CorpusEnv = "STEPSTAT_CORPUS"

// CorpusDir returns the folder of the test corpus (CorpusEnv, else ../shared beside the
// repository's root), and an error saying what is missing and how to get it when it is not
// there.
func CorpusDir() (string, error) {
	dir, set := os.LookupEnv(CorpusEnv)
	if !set || dir == "" {
		dir = filepath.Join(root, "..", "shared")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if fi, err := os.Stat(filepath.Join(dir, "traces")); err != nil || !fi.IsDir() {
		if set {
			return dir, fmt.Errorf("no test corpus in %s (%s): it holds no traces folder; set %s to the shared checkout's folder", dir, CorpusEnv, CorpusEnv)
		}
		return dir, fmt.Errorf("no test corpus: %s is not there (the shared checkout, with traces/public and traces/truth); put it beside the repository as ../shared, or set %s to its folder", dir, CorpusEnv)
	}
	return dir, nil
}

// NeedCorpus returns the folder of the test corpus. Without it the test skips with the
// reason (CorpusDir's error); under CI=true, when CorpusEnv names it, it fails.
func NeedCorpus(tb testing.TB) string {
	tb.Helper()
	dir, err := CorpusDir()
	if err != nil {
		if _, set := os.LookupEnv(CorpusEnv); set && os.Getenv("CI") == "true" {
			tb.Fatal(err)
		}
		tb.Skip(err)
	}
	return dir
}

// PublicTraces returns the public exports of the corpus (traces/public/*.sqlite), in name
// order; the test skips without the corpus (NeedCorpus) and fails when it holds none.
func PublicTraces(tb testing.TB) []string {
	tb.Helper()
	dir := filepath.Join(NeedCorpus(tb), "traces", "public")
	files, err := filepath.Glob(filepath.Join(dir, "*.sqlite"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no public traces (*.sqlite) in %s", dir)
	}
	return files
}

// PublicTrace returns the path of the public export name (such as "nsys-ai__mfu_2gpu_before.sqlite");
// the test skips without the corpus (NeedCorpus) and fails when the corpus lacks the file.
func PublicTrace(tb testing.TB, name string) string {
	tb.Helper()
	return corpusFile(tb, "public", name)
}

// TruthDir returns the folder of the truth captures (traces/truth: name.sqlite.xz, their
// README and run.sh); the test skips without the corpus (NeedCorpus).
func TruthDir(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(NeedCorpus(tb), "traces", "truth")
}

// TruthCapture decompresses the truth capture name (without .sqlite.xz) into dir with the
// xz command and returns its path. The test skips without the corpus (NeedCorpus) or
// without xz (under CI=true, which installs it, it fails), and fails when the corpus lacks
// the capture.
func TruthCapture(tb testing.TB, name, dir string) string {
	tb.Helper()
	src := corpusFile(tb, "truth", name+".sqlite.xz")
	NeedXZ(tb)
	dst := filepath.Join(dir, name+".sqlite")
	out, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("xz", "-dc", src)
	cmd.Stdout = out
	err = cmd.Run()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Fatalf("xz -dc %s: %v", src, err)
	}
	return dst
}

// NeedXZ skips the test when the xz command, which decompresses the truth captures, is
// not installed (under CI=true it fails: .ci/run installs it).
func NeedXZ(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("xz"); err != nil {
		msg := "no xz command to decompress the truth captures (.sqlite.xz): install it (apt-get install xz-utils)"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
}

// corpusFile returns the path of traces/kind/name in the corpus, failing the test when the
// corpus is there but the file is not.
func corpusFile(tb testing.TB, kind, name string) string {
	tb.Helper()
	path := filepath.Join(NeedCorpus(tb), "traces", kind, name)
	if _, err := os.Stat(path); err != nil {
		tb.Fatalf("the test corpus lacks %s: %v", name, err)
	}
	return path
}

// PublicTracesIfPresent is PublicTraces for a test that runs without the corpus too (on
// the project's captures alone): without it, it logs the reason and returns none (under
// CI=true, when CorpusEnv names it, it fails).
func PublicTracesIfPresent(tb testing.TB) []string {
	tb.Helper()
	if _, err := CorpusDir(); err != nil {
		if _, set := os.LookupEnv(CorpusEnv); set && os.Getenv("CI") == "true" {
			tb.Fatal(err)
		}
		tb.Logf("captures only: %v", err)
		return nil
	}
	return PublicTraces(tb)
}
