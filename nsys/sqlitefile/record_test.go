package sqlitefile

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// A table of every integer width, NULLs, a text column long enough to overflow its page,
// and rows a filter drops: Scan gives the values SQLite gives, mapped and with pread.
func TestScanMatchesSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.sqlite")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA page_size = 1024; CREATE TABLE t (a INTEGER, b INTEGER, k INTEGER, txt TEXT)`); err != nil {
		t.Fatal(err)
	}
	tx, _ := db.Begin()
	vals := []int64{0, 1, -1, 127, -128, 32767, -32768, 1 << 23, -(1 << 23), 1 << 31, -(1 << 31), 1 << 47, -(1 << 47), 1 << 62, -(1 << 62)}
	const n = 3000
	for i := 0; i < n; i++ {
		var b any = vals[i%len(vals)] * int64(i%3-1)
		if i%7 == 0 {
			b = nil
		}
		txt := fmt.Sprint("row ", i)
		if i%100 == 1 { // k 1: kept
			txt = strings.Repeat("x", 5000+i) // past a page: overflow pages
		}
		if _, err := tx.Exec(`INSERT INTO t VALUES (?, ?, ?, ?)`, vals[(i*7)%len(vals)], b, i%5, txt); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var root int64
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 't'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	type row struct {
		a, b, k, bad int64
		txt          string
	}
	var want []row
	rs, err := db.Query(`SELECT a, COALESCE(b, 0), b IS NULL, k, txt FROM t WHERE k IN (1, 3) ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var r row
		var null bool
		if err := rs.Scan(&r.a, &r.b, &null, &r.k, &r.txt); err != nil {
			t.Fatal(err)
		}
		if null {
			r.bad = 2
		}
		want = append(want, r)
	}
	rs.Close()
	for _, mapped := range []bool{true, false} {
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if !mapped {
			unmapFile(f.mapped)
			f.mapped = nil
		}
		tb, err := f.Table(uint32(root))
		if err != nil {
			t.Fatal(err)
		}
		if len(tb.Leaves) < 10 {
			t.Fatalf("%d leaves: the test wants a B-tree of several levels", len(tb.Leaves))
		}
		kept := []bool{false, true, false, true}
		c := &Columns{Fields: []int{0, 1, 2, -1}, Defs: []int64{0, 0, 0, 42}, Nulls: []bool{true, true, true, false}, Filter: 2, Kept: kept, Text: 3}
		var got []row
		var total int64
		err = tb.Scan(c, 0, len(tb.Leaves), func(rows int64, last bool) error { total += rows; return nil }, func(v []int64, text []byte) {
			if v[3] != 42 {
				t.Fatalf("constant column read %d", v[3])
			}
			got = append(got, row{v[0], v[1], v[2], v[4], string(text)})
		})
		if err != nil {
			t.Fatal(err)
		}
		if total != n {
			t.Errorf("mapped %v: progress counted %d rows, want %d", mapped, total, n)
		}
		if len(got) != len(want) {
			t.Fatalf("mapped %v: %d rows, want %d", mapped, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("mapped %v: row %d = %+v, want %+v", mapped, i, got[i], want[i])
			}
		}
		first, last, ok, err := tb.RowidBounds()
		if err != nil || !ok || first != 1 || last != n {
			t.Errorf("RowidBounds = %d, %d, %v, %v; want 1, %d", first, last, ok, err, n)
		}
		f.Close()
	}
}

// A REAL in an integer column reads as SQLite's reading of it does (issue 34 item 7):
// a whole number as its integer, whatever the column's affinity (a REAL column stores its
// whole numbers as integers), any other REAL as no INTEGER (its bit in the mask).
func TestScanReal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.sqlite")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (a INTEGER, b, c REAL);
		INSERT INTO t VALUES (1, 2, 3), (2, 2.5, 4.0), (3, 1e300, -7), (4, -0.0, 1e18)`); err != nil {
		t.Fatal(err)
	}
	var root int64
	db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 't'`).Scan(&root)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tb, err := f.Table(uint32(root))
	if err != nil {
		t.Fatal(err)
	}
	c := &Columns{Fields: []int{0, 1, 2}, Defs: []int64{0, 0, 0}, Nulls: []bool{true, true, true}, Filter: -1, Text: -1}
	var got [][4]int64
	err = tb.Scan(c, 0, len(tb.Leaves), nil, func(v []int64, _ []byte) { got = append(got, [4]int64(v)) })
	want := [][4]int64{{1, 2, 3, 0}, {2, 0, 4, 2}, {3, 0, -7, 2}, {4, 0, 1e18, 0}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Scan = %v, %v; want %v (the mask last)", got, err, want)
	}
}

func TestVarint(t *testing.T) {
	for _, c := range []struct {
		b []byte
		v int64
		n int
	}{
		{[]byte{0x00}, 0, 1},
		{[]byte{0x7f}, 127, 1},
		{[]byte{0x81, 0x00}, 128, 2},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, -1, 9},
		{[]byte{0x81}, 0, 0},
		{nil, 0, 0},
	} {
		if v, n := Varint(c.b); v != c.v || n != c.n {
			t.Errorf("Varint(% x) = %d, %d; want %d, %d", c.b, v, n, c.v, c.n)
		}
	}
}

// TestPageSet: a page met twice is found whatever its chunk, page 0 and the last page
// number included; memory is a chunk per 32,768 pages reached.
func TestPageSet(t *testing.T) {
	var s pageSet
	pages := []uint32{0, 1, 63, 64, 32767, 32768, 1 << 31, 1<<32 - 1}
	for _, pg := range pages {
		if !s.add(pg) {
			t.Errorf("page %d: already in the set", pg)
		}
	}
	for _, pg := range pages {
		if s.add(pg) {
			t.Errorf("page %d: added twice", pg)
		}
	}
	if len(s.chunks) != 4 {
		t.Errorf("%d chunks for pages %v, want 4", len(s.chunks), pages)
	}
}

// TestTruncatedWhileMapped (issue 41, item 2): a file truncated while mapped faults
// (SIGBUS) on every path that reads the map: the B-tree walk (Table), the rowid bounds
// and the leaf scan each return ErrChanged instead of crashing the process.
func TestTruncatedWhileMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.sqlite")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA page_size = 512; CREATE TABLE t (a INTEGER, b INTEGER)`); err != nil {
		t.Fatal(err)
	}
	tx, _ := db.Begin()
	for i := 0; i < 5000; i++ {
		tx.Exec(`INSERT INTO t VALUES (?, ?)`, i, i*3)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var root int64
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 't'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	db.Close()
	open := func() (*File, *Table) {
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if !f.Mapped() {
			f.Close()
			t.Skip("the file is not mapped here: no fault to guard")
		}
		tb, err := f.Table(uint32(root))
		if err != nil || len(tb.Leaves) < 3 {
			t.Fatalf("Table: %v (%d leaves)", err, len(tb.Leaves))
		}
		return f, tb
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name string
		read func(*File, *Table) error
	}{
		{"Table", func(f *File, _ *Table) error { _, err := f.Table(uint32(root)); return err }},
		{"RowidBounds", func(_ *File, tb *Table) error { _, _, _, err := tb.RowidBounds(); return err }},
		{"Scan", func(_ *File, tb *Table) error {
			c := Columns{Fields: []int{0}, Defs: []int64{0}, Nulls: []bool{false}, Filter: -1, Text: -1}
			return tb.Scan(&c, 0, len(tb.Leaves), nil, func([]int64, []byte) {})
		}},
	} {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		f, tb := open()
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		if err := step.read(f, tb); !errors.Is(err, ErrChanged) {
			t.Errorf("%s of a file truncated while mapped: %v, want ErrChanged", step.name, err)
		}
		f.Close()
	}
}
