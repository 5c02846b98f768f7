package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hostile inputs, round four (issue 34). Every input is a real capture of testdata/traces
// changed here, or a file the test makes.

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSidecarsThroughLink (issue 34, item 2): latest.sqlite -> runs/t.sqlite with
// committed deletes in runs/t.sqlite-wal. SQLite resolves the link and applies the WAL;
// stepstat reads the file immutably, so it must say so through the link as when the file
// is named directly. A hot journal's warning says it holds the rollback; a journal whose
// header is zeroed (journal_mode=PERSIST after a commit) and a WAL without frames hold
// nothing and get no warning.
func TestSidecarsThroughLink(t *testing.T) {
	inTempDir(t)
	capture(t, "dense-eager", "work.sqlite")
	mkdir(t, "runs")
	db, err := sql.Open("sqlite3", "file:work.sqlite?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	var before, after int
	for _, q := range []string{`PRAGMA journal_mode=WAL`, `PRAGMA wal_autocheckpoint=0`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.QueryRow(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL`).Scan(&before)
	if _, err := db.Exec(`DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0`); err != nil {
		t.Fatal(err)
	}
	db.QueryRow(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL`).Scan(&after)
	// The deletes are committed to the WAL; copy it before closing checkpoints it.
	copyFile(t, "work.sqlite", "runs/t.sqlite")
	copyFile(t, "work.sqlite-wal", "runs/t.sqlite-wal")
	db.Close()
	if after >= before || after == 0 {
		t.Fatalf("kernels %d before the deletes, %d after", before, after)
	}
	if err := os.Symlink(filepath.Join("runs", "t.sqlite"), "latest.sqlite"); err != nil {
		t.Fatal(err)
	}
	walWarn := "t.sqlite-wal sits beside the trace"
	for _, name := range []string{"runs/t.sqlite", "latest.sqlite"} {
		for _, reader := range []string{"", "sqlite"} {
			t.Setenv("STEPSTAT_READER", reader)
			out := runOK(t, "report", name)
			if !strings.Contains(out, walWarn) || !strings.Contains(out, "committed changes not yet written into the file") {
				t.Errorf("report %s (reader %q): no warning of the WAL's committed changes:\n%s", name, reader, lastN(out, 1500))
			}
		}
	}
	if out := runOK(t, "report", "latest.sqlite"); !strings.Contains(out, "(the file latest.sqlite links to)") {
		t.Errorf("the warning does not say the WAL sits beside the link's target:\n%s", lastN(out, 1500))
	}
	js := runOK(t, "report", "-f", "json", "latest.sqlite")
	if !strings.Contains(js, walWarn) {
		t.Errorf("the JSON report's warnings lack the WAL")
	}

	// A hot journal (its header's magic in place) through a link; SQLite would roll the
	// file back with it.
	capture(t, "dense-eager", "runs/j.sqlite")
	writeFile(t, "runs/j.sqlite-journal", "\xd9\xd5\x05\xf9\x20\xa1\x63\xd7"+strings.Repeat("\x00", 504))
	if err := os.Symlink(filepath.Join("runs", "j.sqlite"), "j.sqlite"); err != nil {
		t.Fatal(err)
	}
	out := runOK(t, "report", "j.sqlite")
	if !strings.Contains(out, "j.sqlite-journal sits beside the trace: a hot journal holds the rollback of a write left unfinished") {
		t.Errorf("no true hot-journal warning:\n%s", lastN(out, 1500))
	}
	if strings.Contains(out, "without the changes held there") {
		t.Errorf("the journal warning still says the journal holds changes")
	}
	// Nothing held: a zeroed journal header, a WAL of its header alone.
	writeFile(t, "runs/j.sqlite-journal", strings.Repeat("\x00", 512))
	writeFile(t, "runs/j.sqlite-wal", "\x37\x7f\x06\x82"+strings.Repeat("\x00", 28))
	if out := runOK(t, "report", "j.sqlite"); strings.Contains(out, "sits beside the trace") {
		t.Errorf("a warning for a journal and a WAL holding nothing:\n%s", lastN(out, 1500))
	}
}

// lastN returns the last n bytes of s.
func lastN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
