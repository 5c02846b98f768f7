package nsys_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// FuzzOpen mutates small exports and opens them. The inputs are a base export (base
// picks one of fuzzBaseNames; its high bit asks Open to count rows), a program of SQL
// mutations (sqlProg: drop a table, rename a column or a table, drop NOT NULL
// constraints, write NULLs, negative, reversed, zero, extreme or mistyped values into
// rows, delete or duplicate rows), run on a copy with SQLite, and then a program of byte
// mutations of the file (byteProg: flip bytes anywhere or inside a table's b-tree root
// page, truncate at a page boundary or anywhere, overwrite header bytes, zero or copy
// pages).
//
// Properties: Open never panics and leaves the file and its folder as they were; an error
// is an *nsys.Error whose one-line text starts with the path; a trace passes CheckValid,
// and breakdown.Summarize of it does not panic and accounts each step's wall time exactly
// to categories.
//
// The seeds (run by plain go test) are every base unmutated, plus the programs in this
// package's testdata/fuzz/FuzzOpen (where go test -fuzz writes a failing input).
func FuzzOpen(f *testing.F) {
	bases := fuzzBases(f)
	for i := range bases {
		f.Add(uint8(i), []byte(nil), []byte(nil))
	}
	nsystest.NeedSeeds(f)
	f.Fuzz(func(t *testing.T, base uint8, sqlProg, byteProg []byte) {
		b := bases[int(base&0x7f)%len(bases)]
		dir := t.TempDir()
		data, roots := b.data, b.roots
		if len(sqlProg) > 0 {
			data, roots = mutateSQL(t, filepath.Join(dir, "mutate"), data, sqlProg)
		}
		data = mutateBytes(data, roots, byteProg)

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
		for _, steps := range []breakdown.Method{breakdown.MethodAuto, breakdown.MethodWhole} {
			rep, err := breakdown.Summarize(tr, breakdown.Options{Steps: breakdown.StepMethod{Method: steps}, Phase: breakdown.AllSteps})
			if err != nil {
				if !tr.HasGPUActivity() && errors.Is(err, nsys.ErrNoGPUActivity) {
					continue
				}
				checkOpenError(t, path, err)
				continue
			}
			for _, d := range rep.Devices {
				for i, s := range d.Steps {
					var sum time.Duration
					for _, x := range s.Exclusive {
						sum += x
					}
					if sum != s.Wall() {
						t.Fatalf("--steps %s: device %d step %d [%d, %d): exclusive times %v sum to %v, wall %v",
							steps, d.Device, i, s.Start, s.End, s.Exclusive, sum, s.Wall())
					}
				}
			}
		}
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

// fuzzBaseNames lists the starting exports of FuzzOpen: the demo capture, then reader
// fixtures. Seeds refer to bases by index, so add new ones at the end only.
var fuzzBaseNames = []string{
	"demo:dense-eager",
	"schema-meta-data-export",
	"schema-legacy",
	"schema-export-meta-data",
	"nvtx",
	"graph-trace",
	"runtime-kinds",
	"overlapping-streams",
	"zero-reversed",
	"swapped-devices",
	"extra-column",
	"missing-strings",
	"negative-timestamps",
	"multi-process",
	"memcpy-only-device",
	"nvtx-unclosed",
	"sliced-capture",
}

// A fuzzBase is a starting export: its bytes and the root page of each table.
type fuzzBase struct {
	name  string
	data  []byte
	roots map[string]int64
}

func fuzzBases(tb testing.TB) []fuzzBase {
	tb.Helper()
	dir := tb.TempDir()
	var out []fuzzBase
	for i, name := range fuzzBaseNames {
		path := filepath.Join(dir, fmt.Sprintf("base%d.sqlite", i))
		if demo, ok := strings.CutPrefix(name, "demo:"); ok {
			gunzip(tb, filepath.Join("..", "testdata", "traces", demo+".sqlite.gz"), path)
		} else {
			nsystest.Write(tb, nsystest.Parse(tb, filepath.Join("..", "testdata", "nsys", name+".txtar")), path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		db, err := sql.Open("sqlite3", nsystest.FileURI(path)+"?mode=ro")
		if err != nil {
			tb.Fatal(err)
		}
		roots, err := rootPages(db)
		db.Close()
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		out = append(out, fuzzBase{name: name, data: data, roots: roots})
	}
	return out
}

func gunzip(tb testing.TB, src, dst string) { nsystest.Gunzip(tb, src, dst) }

func rootPages(db *sql.DB) (map[string]int64, error) {
	rows, err := db.Query(`SELECT name, rootpage FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	roots := map[string]int64{}
	for rows.Next() {
		var n string
		var p int64
		if err := rows.Scan(&n, &p); err != nil {
			return nil, err
		}
		roots[n] = p
	}
	return roots, rows.Err()
}

// fuzzTables are the tables mutations pick first (by a small index); other tables
// follow in name order.
var fuzzTables = []string{
	"CUPTI_ACTIVITY_KIND_KERNEL", "StringIds", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
	"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
	"TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU", "META_DATA_EXPORT", "EXPORT_META_DATA",
}

// orderTables returns the table names of roots, fuzzTables first.
func orderTables(roots map[string]int64) []string {
	var out, rest []string
	for _, n := range fuzzTables {
		if _, ok := roots[n]; ok {
			out = append(out, n)
		}
	}
	for n := range roots {
		if !slices.Contains(fuzzTables, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// prog reads a mutation program; past its end it reads zeros.
type prog struct {
	b []byte
	i int
}

func (p *prog) more() bool { return p.i < len(p.b) }

func (p *prog) next() byte {
	if p.i >= len(p.b) {
		return 0
	}
	c := p.b[p.i]
	p.i++
	return c
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

var (
	extremeValues = []any{int64(math.MaxInt64), int64(math.MinInt64), int64(1) << 32, int64(-1),
		int64(1) << 62, int64(math.MaxUint32), int64(65536), int64(32768), int64(math.MinInt64 + 1), int64(0)}
	oddValues = []any{"text", 1.5, []byte{0, 0xff}, "", "decode 7", "</script><img src=x onerror=alert(1)>",
		1e300, "\x1b[31mred\x1b[0m", "9223372036854775808", -0.0}
)

// mutateSQL writes data to path, runs the SQL mutations of program on it and returns the
// new bytes and root pages. Statements that SQLite refuses are skipped.
func mutateSQL(t *testing.T, path string, data, program []byte) ([]byte, map[string]int64) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", nsystest.FileURI(path)+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	db.SetMaxOpenConns(1)
	roots, err := rootPages(db)
	if err != nil {
		return data, nil // the base is not a database SQLite can change
	}
	p := &prog{b: program}
	for n := 0; n < 8 && p.more(); n++ {
		op, ti, ci, arg := p.next(), p.next(), p.next(), p.next()
		tables := orderTables(roots)
		if len(tables) == 0 {
			break
		}
		table := tables[int(ti)%len(tables)]
		cols := columns(db, table)
		if len(cols) == 0 {
			continue
		}
		col := cols[int(ci)%len(cols)]
		m := int(arg&3) + 1
		where := fmt.Sprintf(" WHERE rowid %% %d = %d", m, int(arg>>2)%m)
		T, C := quoteIdent(table), quoteIdent(col)
		var q string
		var args []any
		switch op % 13 {
		case 0:
			q = `DROP TABLE ` + T
		case 1:
			q = `ALTER TABLE ` + T + ` RENAME COLUMN ` + C + ` TO ` + quoteIdent(col+"_x")
		case 2:
			q = `UPDATE ` + T + ` SET ` + C + ` = NULL` + where
		case 3:
			q = `UPDATE ` + T + ` SET ` + C + ` = -` + C + where
		case 4:
			if slices.Contains(cols, "start") && slices.Contains(cols, "end") {
				q = `UPDATE ` + T + ` SET start = "end", "end" = start` + where
			} else {
				q = `UPDATE ` + T + ` SET ` + C + ` = ` + quoteIdent(cols[0]) + where
			}
		case 5:
			if slices.Contains(cols, "start") && slices.Contains(cols, "end") {
				q = `UPDATE ` + T + ` SET start = 0, "end" = 0` + where
			} else {
				q = `UPDATE ` + T + ` SET ` + C + ` = 0` + where
			}
		case 6:
			q, args = `UPDATE `+T+` SET `+C+` = ?`+where, []any{extremeValues[int(arg>>4)%len(extremeValues)]}
		case 7:
			q, args = `UPDATE `+T+` SET `+C+` = ?`+where, []any{oddValues[int(arg>>4)%len(oddValues)]}
		case 8:
			q = `DELETE FROM ` + T + where
		case 9:
			q = `INSERT INTO ` + T + ` SELECT * FROM ` + T + where
		case 10:
			q = `ALTER TABLE ` + T + ` RENAME TO ` + quoteIdent(table+"_old")
		case 11:
			q = `ALTER TABLE ` + T + ` ADD COLUMN ` + quoteIdent(fmt.Sprintf("extra%d", n)) + ` INTEGER DEFAULT ` + fmt.Sprint(int(arg)-128)
		case 12:
			// Drop the table's NOT NULL constraints, so that later mutations can write
			// NULLs where nsys never does; the new schema is read on a new connection.
			db.Exec(`PRAGMA writable_schema = ON`)
			db.Exec(`UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table' AND name = ?`, table)
			db.Close()
			if db, err = sql.Open("sqlite3", nsystest.FileURI(path)+"?mode=rw"); err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
		}
		if q != "" {
			db.Exec(q, args...) // a refused mutation is no mutation
		}
		if r, err := rootPages(db); err == nil {
			roots = r
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return out, roots
}

func columns(db *sql.DB, table string) []string {
	rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if rows.Scan(&c) == nil {
			cols = append(cols, c)
		}
	}
	return cols
}

// mutateBytes applies the byte mutations of program to a copy of data. Each mutation is
// four bytes: an opcode (low 3 bits: what; high 5 bits: a value) and three argument
// bytes (an offset, or a table and an offset in its root page, or two pages).
func mutateBytes(data []byte, roots map[string]int64, program []byte) []byte {
	if len(program) == 0 {
		return data
	}
	data = slices.Clone(data)
	pageSize := 4096
	if len(data) >= 100 && string(data[:16]) == "SQLite format 3\x00" {
		switch ps := int(binary.BigEndian.Uint16(data[16:18])); {
		case ps == 1:
			pageSize = 65536
		case ps >= 512 && ps&(ps-1) == 0:
			pageSize = ps
		}
	}
	tables := orderTables(roots)
	p := &prog{b: program}
	for n := 0; n < 16 && p.more(); n++ {
		op, b1, b2, b3 := p.next(), p.next(), p.next(), p.next()
		if len(data) == 0 {
			break
		}
		off := int(b1)<<16 | int(b2)<<8 | int(b3)
		xor := op&0xf8 | 1
		pages := len(data) / pageSize
		switch op & 7 {
		case 0, 1: // flip bits of a byte anywhere
			data[off%len(data)] ^= xor
		case 2: // truncate at a page boundary
			data = data[:(off%(pages+1))*pageSize]
		case 3: // truncate anywhere
			data = data[:off%(len(data)+1)]
		case 4: // flip bits inside a table's root page (a b-tree page)
			if len(tables) == 0 {
				data[off%len(data)] ^= xor
				break
			}
			root := roots[tables[int(b1)%len(tables)]]
			pos := (int(root)-1)*pageSize + (int(b2)<<8|int(b3))%pageSize
			if root > 0 && pos < len(data) {
				data[pos] ^= xor
			}
		case 5: // overwrite a header byte
			data[int(b1)%min(100, len(data))] = b2
		case 6: // zero a page
			if pages > 0 {
				pg := off % pages
				clear(data[pg*pageSize : (pg+1)*pageSize])
			}
		case 7: // copy one page over another
			if pages > 0 {
				a, b := int(b1)%pages, (int(b2)<<8|int(b3))%pages
				copy(data[b*pageSize:(b+1)*pageSize], data[a*pageSize:(a+1)*pageSize])
			}
		}
	}
	return data
}
