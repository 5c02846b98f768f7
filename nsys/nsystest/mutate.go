package nsystest

// The mutations of the fuzz tests of damaged exports (nsys' FuzzOpen and FuzzDirect,
// breakdown's FuzzDamaged): base exports, a program of SQL mutations run with SQLite, a
// program of byte mutations of the file.

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzBaseNames lists the starting exports of the fuzz tests of damaged exports: the demo capture, then reader
// fixtures. Seeds refer to bases by index, so add new ones at the end only.
var FuzzBaseNames = []string{
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

// A FuzzBase is a starting export: its bytes and the root page of each table.
type FuzzBase struct {
	Name  string
	Data  []byte
	Roots map[string]int64 // root page per table
}

// FuzzBases builds the exports of FuzzBaseNames, in order.
func FuzzBases(tb testing.TB) []FuzzBase {
	tb.Helper()
	dir := tb.TempDir()
	var out []FuzzBase
	for i, name := range FuzzBaseNames {
		path := filepath.Join(dir, fmt.Sprintf("base%d.sqlite", i))
		if demo, ok := strings.CutPrefix(name, "demo:"); ok {
			Gunzip(tb, CapturePath(demo), path)
		} else {
			Write(tb, Parse(tb, filepath.Join(root, "testdata", "nsys", name+".txtar")), path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		db, err := sql.Open("sqlite3", FileURI(path)+"?mode=ro")
		if err != nil {
			tb.Fatal(err)
		}
		roots, err := RootPages(db)
		db.Close()
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		out = append(out, FuzzBase{Name: name, Data: data, Roots: roots})
	}
	return out
}

// RootPages returns the root page of each table of db.
func RootPages(db *sql.DB) (map[string]int64, error) {
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

// Prog reads a mutation program; past its end it reads zeros.
// NewProg returns a Prog reading b.
func NewProg(b []byte) *Prog { return &Prog{b: b} }

// A Prog reads a mutation program a byte at a time (zeros past its end).
type Prog struct {
	b []byte
	i int
}

// More reports whether the program has bytes left.
func (p *Prog) More() bool { return p.i < len(p.b) }

// Next returns the next byte of the program (0 past its end).
func (p *Prog) Next() byte {
	if p.i >= len(p.b) {
		return 0
	}
	c := p.b[p.i]
	p.i++
	return c
}

// QuoteIdent quotes s as an SQL identifier.
func QuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

var (
	extremeValues = []any{int64(math.MaxInt64), int64(math.MinInt64), int64(1) << 32, int64(-1),
		int64(1) << 62, int64(math.MaxUint32), int64(65536), int64(32768), int64(math.MinInt64 + 1), int64(0)}
	oddValues = []any{"text", 1.5, []byte{0, 0xff}, "", "decode 7", "</script><img src=x onerror=alert(1)>",
		1e300, "\x1b[31mred\x1b[0m", "9223372036854775808", -0.0}
)

// MutateSQL writes data to path, runs the SQL mutations of program on it and returns the
// new bytes and root pages. Statements that SQLite refuses are skipped.
func MutateSQL(t testing.TB, path string, data, program []byte) ([]byte, map[string]int64) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", FileURI(path)+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	db.SetMaxOpenConns(1)
	roots, err := RootPages(db)
	if err != nil {
		return data, nil // the base is not a database SQLite can change
	}
	p := NewProg(program)
	for n := 0; n < 8 && p.More(); n++ {
		op, ti, ci, arg := p.Next(), p.Next(), p.Next(), p.Next()
		tables := orderTables(roots)
		if len(tables) == 0 {
			break
		}
		table := tables[int(ti)%len(tables)]
		cols := Columns(db, table)
		if len(cols) == 0 {
			continue
		}
		col := cols[int(ci)%len(cols)]
		m := int(arg&3) + 1
		where := fmt.Sprintf(" WHERE rowid %% %d = %d", m, int(arg>>2)%m)
		T, C := QuoteIdent(table), QuoteIdent(col)
		var q string
		var args []any
		switch op % 13 {
		case 0:
			q = `DROP TABLE ` + T
		case 1:
			q = `ALTER TABLE ` + T + ` RENAME COLUMN ` + C + ` TO ` + QuoteIdent(col+"_x")
		case 2:
			q = `UPDATE ` + T + ` SET ` + C + ` = NULL` + where
		case 3:
			q = `UPDATE ` + T + ` SET ` + C + ` = -` + C + where
		case 4:
			if slices.Contains(cols, "start") && slices.Contains(cols, "end") {
				q = `UPDATE ` + T + ` SET start = "end", "end" = start` + where
			} else {
				q = `UPDATE ` + T + ` SET ` + C + ` = ` + QuoteIdent(cols[0]) + where
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
			q = `ALTER TABLE ` + T + ` RENAME TO ` + QuoteIdent(table+"_old")
		case 11:
			q = `ALTER TABLE ` + T + ` ADD COLUMN ` + QuoteIdent(fmt.Sprintf("extra%d", n)) + ` INTEGER DEFAULT ` + fmt.Sprint(int(arg)-128)
		case 12:
			// Drop the table's NOT NULL constraints, so that later mutations can write
			// NULLs where nsys never does; the new schema is read on a new connection.
			db.Exec(`PRAGMA writable_schema = ON`)
			db.Exec(`UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table' AND name = ?`, table)
			db.Close()
			if db, err = sql.Open("sqlite3", FileURI(path)+"?mode=rw"); err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
		}
		if q != "" {
			db.Exec(q, args...) // a refused mutation is no mutation
		}
		if r, err := RootPages(db); err == nil {
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

// Columns returns the column names of table in db (none on an error).
func Columns(db *sql.DB, table string) []string {
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

// MutateBytes applies the byte mutations of program to a copy of data. Each mutation is
// four bytes: an opcode (low 3 bits: what; high 5 bits: a value) and three argument
// bytes (an offset, or a table and an offset in its root page, or two pages).
func MutateBytes(data []byte, roots map[string]int64, program []byte) []byte {
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
	p := NewProg(program)
	for n := 0; n < 16 && p.More(); n++ {
		op, b1, b2, b3 := p.Next(), p.Next(), p.Next(), p.Next()
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
