package nsys_test

import (
	"context"
	"database/sql"
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

// TestSparseRowidsBounded (issue 41, item 10): a small kernel table whose rowids have
// gaps (one row every 1000 rowids), in a file that other tables make large enough for the
// span to pass the file-size bound, sized its arrays by the span: a slot (a page, a huge
// page in mapped arrays) per rowid. The arrays follow the rows the table holds, on both
// readers.
func TestSparseRowidsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse.sqlite")
	nsystest.Gunzip(t, "../testdata/traces/dense-eager.sqlite.gz", path)
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE filler (x BLOB)`,
		`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 16) INSERT INTO filler SELECT zeroblob(1000000) FROM c`,
		`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET rowid = -rowid`, // out of the way first: rowids are unique
		`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET rowid = -rowid * 1000 + 1000`,
		`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET rowid = -rowid`,
		`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET rowid = -rowid * 400 + 1000`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	defer nsys.SetBigMin(nsys.SetBigMin(1)) // every array mapped: its size is seen
	var kernels int
	for _, sqliteOnly := range []bool{false, true} {
		opt := nsys.PartRows(1 << 12)
		opt.SQLiteOnly = sqliteOnly
		tr, err := nsys.Open(context.Background(), path, opt)
		if err != nil {
			t.Fatal(err)
		}
		mapped := 0
		for _, r := range nsys.MappedRanges(tr) {
			mapped += int(r[1] - r[0])
		}
		t.Logf("SQLiteOnly %v: %d kernels, %d calls, %.1f MB mapped", sqliteOnly, len(tr.Kernels), len(tr.APICalls), float64(mapped)/1e6)
		if mapped > 8<<20 {
			t.Errorf("SQLiteOnly %v: %.1f MB mapped for %d kernels and %d calls; want the arrays sized by the rows (a few MB)", sqliteOnly, float64(mapped)/1e6, len(tr.Kernels), len(tr.APICalls))
		}
		if kernels != 0 && len(tr.Kernels) != kernels || len(tr.Kernels) != 801 {
			t.Errorf("SQLiteOnly %v: %d kernels, want 801 on both readers", sqliteOnly, len(tr.Kernels))
		}
		kernels = len(tr.Kernels)
		tr.Release()
	}
}
