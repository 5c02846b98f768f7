package nsystest

import (
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// root is the repository's root folder (this file is nsys/nsystest/capture.go).
var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}()

// CapturePath returns the path of the project's capture name: testdata/traces/NAME.sqlite.gz
// (name without .sqlite.gz, such as "dense-eager" or "runs/dense-eager-r1").
func CapturePath(name string) string {
	return filepath.Join(root, "testdata", "traces", name+".sqlite.gz")
}

// GunzipInto decompresses the gzip file gz into dir, under its name without .gz, and
// returns the path.
func GunzipInto(tb testing.TB, gz, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, strings.TrimSuffix(filepath.Base(gz), ".gz"))
	Gunzip(tb, gz, path)
	return path
}

// NeedSeeds fails fuzz target f when its seed corpus, the package's
// testdata/fuzz/<target> (which go test runs as seeds, and where go test -fuzz writes a
// failing input), holds no file.
func NeedSeeds(f *testing.F) {
	f.Helper()
	es, err := os.ReadDir(filepath.Join("testdata", "fuzz", f.Name()))
	if err != nil || len(es) == 0 {
		f.Fatalf("no seeds in testdata/fuzz/%s: %v", f.Name(), err)
	}
}

// FileURI returns the file: URI of path (made absolute), for a SQLite DSN with query
// parameters (path?mode=ro).
func FileURI(path string) string {
	abs, _ := filepath.Abs(path)
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}
