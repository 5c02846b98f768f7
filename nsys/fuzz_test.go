package nsys_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// FuzzOpen mutates small exports and opens them. The inputs are a base export (base
// picks one of nsystest.FuzzBaseNames; its high bit asks Open to count rows), a program of SQL
// mutations (sqlProg: drop a table, rename a column or a table, drop NOT NULL
// constraints, write NULLs, negative, reversed, zero, extreme or mistyped values into
// rows, delete or duplicate rows), run on a copy with SQLite, and then a program of byte
// mutations of the file (byteProg: flip bytes anywhere or inside a table's b-tree root
// page, truncate at a page boundary or anywhere, overwrite header bytes, zero or copy
// pages).
//
// Properties: Open never panics and leaves the file and its folder as they were; an error
// is an *nsys.Error whose one-line text starts with the path; a trace passes CheckValid
// (breakdown's FuzzDamaged summarises the same inputs).
//
// The seeds (run by plain go test) are every base unmutated, plus the programs in this
// package's testdata/fuzz/FuzzOpen (where go test -fuzz writes a failing input).
func FuzzOpen(f *testing.F) {
	bases := nsystest.FuzzBases(f)
	for i := range bases {
		f.Add(uint8(i), []byte(nil), []byte(nil))
	}
	nsystest.NeedSeeds(f)
	f.Fuzz(func(t *testing.T, base uint8, sqlProg, byteProg []byte) {
		b := bases[int(base&0x7f)%len(bases)]
		dir := t.TempDir()
		data, roots := b.Data, b.Roots
		if len(sqlProg) > 0 {
			data, roots = nsystest.MutateSQL(t, filepath.Join(dir, "mutate"), data, sqlProg)
		}
		data = nsystest.MutateBytes(data, roots, byteProg)

		inDir := filepath.Join(dir, "in")
		if err := os.Mkdir(inDir, 0o777); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(inDir, "trace.sqlite")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		opt := nsys.Options{CountRows: base&0x80 != 0, Progress: func(table string, done, total int64) {
			if done < 0 {
				t.Errorf("progress of %s: %d rows done", table, done)
			}
		}}
		tr, err := nsys.Open(context.Background(), path, opt)
		checkUntouched(t, path, data, old)
		if err != nil {
			checkOpenError(t, path, err)
			return
		}
		if tr == nil {
			t.Fatal("Open returned neither a trace nor an error")
		}
		if tr.Path != path {
			t.Errorf("Path = %q, want %q", tr.Path, path)
		}
		if err := tr.CheckValid(); err != nil {
			t.Fatalf("CheckValid: %v", err)
		}
		_ = tr.String()
	})
}

// checkOpenError checks that err is one line starting with the path.
func checkOpenError(t *testing.T, path string, err error) {
	t.Helper()
	msg := err.Error()
	var ne *nsys.Error
	if !errors.As(err, &ne) {
		t.Errorf("error %q (%T) is not an *nsys.Error", msg, err)
	}
	if !strings.HasPrefix(msg, path+": ") || len(msg) == len(path)+2 {
		t.Errorf("error %q does not start with the path and a problem", msg)
	}
	if strings.ContainsAny(msg, "\n\r") {
		t.Errorf("error %q is not one line", msg)
	}
}

// checkUntouched checks that the input still has its bytes and mtime and that nothing
// appeared beside it (no -journal, -wal or -shm).
func checkUntouched(t *testing.T, path string, data []byte, mtime time.Time) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("Open changed the file's bytes")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(mtime) {
		t.Errorf("Open changed the file's mtime")
	}
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != filepath.Base(path) {
			t.Errorf("Open left %s beside the input", e.Name())
		}
	}
}
