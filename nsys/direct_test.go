package nsys_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// directTraces returns the real captures (gunzipped into a temporary directory) and the
// public traces (when present).
func directTraces(t *testing.T) []string {
	t.Helper()
	gz, err := filepath.Glob("../testdata/traces/*.sqlite.gz")
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
	return append(files, nsystest.PublicTracesIfPresent(t)...)
}

// dumpTrace is everything Open returns but how it read the tables.
func dumpTrace(tr *nsys.Trace) string {
	var b strings.Builder
	b.WriteString(tr.String())
	c := *tr
	c.Reads = nil
	fmt.Fprintf(&b, "%+v\n%v\n%v\n%v\n%v\n%v\n%v\n", c.Meta, c.Tables, c.Devices, c.Procs, c.Names, c.Sites, c.Warnings)
	fmt.Fprintf(&b, "%v\n%v\n%v\n%v\n%v\n%v\n%v\n", c.Kernels, c.APICalls, c.Callers, c.APINames, c.Memops, c.Graphs, c.Config)
	fmt.Fprintf(&b, "%v\n%v\n%v\n", c.Ranges, c.RangeTexts, c.Domains)
	return b.String()
}

// TestDirectMatchesSQLite reads every real capture and public trace with the direct
// reader and through SQLite alone (the oracle) and wants the same trace, in small parts
// too (every part boundary inside a table), and the large tables read directly.
func TestDirectMatchesSQLite(t *testing.T) {
	for _, file := range directTraces(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want, err := nsys.Open(context.Background(), file, nsys.Options{SQLiteOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, opt := range []nsys.Options{{}, nsys.PartRows(1000)} {
				got, err := nsys.Open(context.Background(), file, opt)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := dumpTrace(got), dumpTrace(want); g != w {
					t.Errorf("direct read differs from SQLite's:\n%s", firstDiff(g, w))
				}
				for _, rd := range got.Reads {
					if !rd.Direct {
						t.Errorf("%s read through SQLite: %s", rd.Table, rd.Why)
					}
				}
				if got.HasKernelTable && len(got.Reads) == 0 {
					t.Errorf("no table read directly")
				}
			}
		})
	}
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n direct: %.300s\n sqlite: %.300s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d lines", len(la), len(lb))
}

// TestDirectFallbacks reads exports the direct reader leaves to SQLite, and wants the
// reason in Trace.Reads and the same trace as SQLite alone gives: a REAL timestamp in the
// kernel table (met while reading: the whole read is done again through SQLite), a
// column with a DEFAULT (a record written before it was added reads the default), and a
// -wal file with frames beside the export.
func TestDirectFallbacks(t *testing.T) {
	for _, c := range []struct {
		name, why string
		sql       []string
		wal       bool
	}{
		// A REAL is read directly (issue 34 item 7): why "" wants the direct read.
		{"real-start", "", []string{`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 0.5 WHERE rowid = 3`}, false},
		{"default-column", "has a default", []string{`ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN globalPid TO oldPid`,
			`ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN globalPid INTEGER DEFAULT 7`}, false},
		{"wal", "-wal file with frames", []string{`PRAGMA journal_mode = WAL`, `UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = end + 1 WHERE rowid = 2`}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "trace.sqlite")
			nsystest.Gunzip(t, "../testdata/traces/dense-eager.sqlite.gz", path)
			db, err := sql.Open("sqlite3", "file:"+path+"?mode=rw")
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			if c.wal {
				// Keep the -wal file: copy the database and its WAL while the writer is open.
				if _, err := db.Exec(`PRAGMA wal_autocheckpoint = 0`); err != nil {
					t.Fatal(err)
				}
			}
			for _, q := range c.sql {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if c.wal {
				for _, s := range []string{"", "-wal"} {
					b, err := os.ReadFile(path + s)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, "copy.sqlite"+s), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				db.Close()
				path = filepath.Join(dir, "copy.sqlite")
			} else {
				db.Close()
			}
			want, werr := nsys.Open(context.Background(), path, nsys.Options{SQLiteOnly: true})
			got, gerr := nsys.Open(context.Background(), path, nsys.Options{})
			if werr != nil || gerr != nil {
				t.Fatalf("direct: %v, sqlite: %v", gerr, werr)
			}
			if g, w := dumpTrace(got), dumpTrace(want); g != w {
				t.Errorf("differs from SQLite's:\n%s", firstDiff(g, w))
			}
			found := false
			for _, rd := range got.Reads {
				if rd.Table == "CUPTI_ACTIVITY_KIND_KERNEL" {
					found = !rd.Direct && strings.Contains(rd.Why, c.why)
					if c.why == "" {
						found = rd.Direct
					}
					if !found {
						t.Errorf("kernel table read %+v, want through SQLite because %q (directly when none)", rd, c.why)
					}
				}
			}
			if !found {
				t.Errorf("no read of the kernel table in %+v", got.Reads)
			}
		})
	}
}

// TestDamageFallbackWarned (issue 34, item 1): damage the direct reader finds where
// SQLite's quick_check of the table passes is read through SQLite, as SQLite reads it,
// with a warning naming the table and what the direct reader found; the trace is
// otherwise SQLite's.
func TestDamageFallbackWarned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.sqlite")
	nsystest.Gunzip(t, "../testdata/traces/dense-eager.sqlite.gz", path)
	want, err := nsys.Open(context.Background(), path, nsys.Options{SQLiteOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nsys.InjectDamage("CUPTI_ACTIVITY_KIND_KERNEL")()
	got, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatalf("Open: %v, want SQLite's reading with a warning", err)
	}
	n := len(got.Warnings)
	if n == 0 || got.Warnings[n-1].Error() != "CUPTI_ACTIVITY_KIND_KERNEL: the direct reader found damage (page 7: injected by the test) but "+
		nsys.DamageFallbackText+": the table is read through SQLite, as SQLite reads it; check its numbers" {
		t.Fatalf("warnings %q: the last does not say the damage and the fallback", got.Warnings)
	}
	got.Warnings = got.Warnings[:n-1]
	if g, w := dumpTrace(got), dumpTrace(want); g != w {
		t.Errorf("differs from SQLite's:\n%s", firstDiff(g, w))
	}
	for _, rd := range got.Reads {
		if rd.Direct {
			t.Errorf("%s read directly after the damage", rd.Table)
		}
	}
}
