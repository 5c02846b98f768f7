package nsys_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestReplacedWhileRead (issue 41, item 3): a file renamed over while it is read (after
// it is opened and mapped, before any table is read) gives the trace of the file that was
// opened, whole, on both readers: every SQLite connection and the map read that one open
// file, not the new file the name now holds.
func TestReplacedWhileRead(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.sqlite"), filepath.Join(dir, "b.sqlite")
	nsystest.Gunzip(t, "../testdata/traces/dense-eager.sqlite.gz", a)
	for _, sqliteOnly := range []bool{false, true} {
		nsystest.Gunzip(t, "../testdata/traces/dense-graph.sqlite.gz", b)
		want, err := nsys.Open(context.Background(), a, nsys.Options{SQLiteOnly: sqliteOnly})
		if err != nil {
			t.Fatal(err)
		}
		keep := filepath.Join(dir, "a-kept.sqlite")
		if err := os.Link(a, keep); err != nil {
			t.Fatal(err)
		}
		undo := nsys.OnMapped(func(path string) {
			if err := os.Rename(b, path); err != nil {
				t.Error(err)
			}
		})
		got, err := nsys.Open(context.Background(), a, nsys.Options{SQLiteOnly: sqliteOnly})
		undo()
		if err != nil {
			t.Fatalf("SQLiteOnly %v: %v", sqliteOnly, err)
		}
		if got.String() != want.String() || len(got.Kernels) != len(want.Kernels) || len(got.APICalls) != len(want.APICalls) ||
			len(got.Ranges) != len(want.Ranges) || len(got.Names) != len(want.Names) {
			t.Errorf("SQLiteOnly %v: read while renamed over: %v, want the opened file's %v", sqliteOnly, got, want)
		}
		got.Release()
		want.Release()
		if err := os.Rename(keep, a); err != nil { // a back for the next round
			t.Fatal(err)
		}
	}
}

// TestTruncatedWhileRead (issue 41, item 2): a file truncated while mapped ends the read
// with one error naming the file (exit 1 in the CLI), on every path: no fault, no panic.
func TestTruncatedWhileRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.sqlite")
	for _, frac := range []int64{2, 4, 10} {
		nsystest.Gunzip(t, "../testdata/traces/dense-eager.sqlite.gz", path)
		undo := nsys.OnMapped(func(p string) {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, fi.Size()/frac); err != nil {
				t.Error(err)
			}
		})
		tr, err := nsys.Open(context.Background(), path, nsys.Options{})
		undo()
		var ne *nsys.Error
		if !errors.As(err, &ne) || ne.Path != path || strings.Contains(err.Error(), "\n") {
			t.Fatalf("truncated to 1/%d while mapped: %v (%v), want one *nsys.Error naming the file", frac, err, tr)
		}
		if !strings.Contains(err.Error(), "changed while being read") && !strings.Contains(err.Error(), "corrupt or truncated") {
			t.Errorf("truncated to 1/%d while mapped: %v; want it said that the file changed or is truncated", frac, err)
		}
	}
}
