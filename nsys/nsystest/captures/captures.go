// Package captures reads the project's captures (testdata/traces) and other exports for
// tests: decompressed into the test's temporary folder, opened with the default options,
// an error failing the test. (nsystest, which nsys' own tests import, cannot import nsys.)
package captures

import (
	"context"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// Trace reads the project's capture name (see nsystest.CapturePath), decompressed into
// tb.TempDir(), with the default options.
func Trace(tb testing.TB, name string) *nsys.Trace {
	tb.Helper()
	return Open(tb, nsystest.CapturePath(name))
}

// Open reads the export at path with the default options; a .gz is decompressed into
// tb.TempDir() first. An error fails the test.
func Open(tb testing.TB, path string) *nsys.Trace {
	tb.Helper()
	if strings.HasSuffix(path, ".gz") {
		path = nsystest.GunzipInto(tb, path, tb.TempDir())
	}
	t, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return t
}
