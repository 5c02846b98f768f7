package nsys_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// directTables are the tables the direct reader reads.
var directTables = []string{
	"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
	"CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
}

// FuzzDirect damages the pages the direct reader decodes and wants Open to give what
// SQLite alone gives (Options.SQLiteOnly, the oracle): the same trace, or the same error.
// The direct reader must find what it does not handle and leave the read to SQLite; a
// panic, a hang or a different answer fails. Damage it finds is not left to SQLite
// silently (issue 34): a *nsys.DamageError, which SQLite's quick_check of the table must
// confirm, or SQLite's reading with a warning (DamageFallbackText) where it does not.
// Inputs: a base export (nsystest.FuzzBaseNames), a program of SQL mutations (nsystest.MutateSQL: mistyped
// values, NULLs, added columns with defaults, dropped or renamed columns...), and a
// program of leaf-page mutations
// (mutateLeaves: flip bytes of a leaf page of a table read directly, in its header, cell
// pointers or cells; truncate the file inside one; copy a leaf over another; rewrite a
// page type), then of byte mutations anywhere (nsystest.MutateBytes, the same program read again).
//
// The seeds (run by plain go test) are every base unmutated, plus the programs in this
// package's testdata/fuzz/FuzzDirect (where go test -fuzz writes a failing input): among
// them the damages of issue 34 (a kernel child pointer redirected to a runtime leaf, two
// child pointers to one leaf, a cell pointer past the page).
func FuzzDirect(f *testing.F) {
	bases := nsystest.FuzzBases(f)
	for i := range bases {
		f.Add(uint8(i), []byte(nil), []byte(nil))
	}
	nsystest.NeedSeeds(f)
	f.Fuzz(func(t *testing.T, base uint8, sqlProg, leafProg []byte) {
		b := bases[int(base)%len(bases)]
		dir := t.TempDir()
		data, roots := b.Data, b.Roots
		if len(sqlProg) > 0 {
			data, roots = nsystest.MutateSQL(t, filepath.Join(dir, "mutate"), data, sqlProg)
		}
		path := filepath.Join(dir, "trace.sqlite")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		data = mutateLeaves(path, data, roots, leafProg)
		if base&0x80 != 0 {
			data = nsystest.MutateBytes(data, roots, leafProg)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// In parts too: SQLite's reads of rowid ranges of a damaged table can differ from
		// its whole scan, so the oracle reads in the same parts.
		for _, opt := range []nsys.Options{{}, nsys.PartRows(3)} {
			sq := opt
			sq.SQLiteOnly = true
			want, werr := nsys.Open(context.Background(), path, sq)
			got, gerr := nsys.Open(context.Background(), path, opt)
			var de *nsys.DamageError
			switch {
			case errors.As(gerr, &de):
				// Damage the direct reader found and SQLite's own check of the table
				// confirms: an error, whatever SQLite alone makes of the table.
				if qc := quickCheckOf(t, path, de.Table); qc == "ok" {
					t.Fatalf("a damage error where quick_check(%s) passes: %v", de.Table, gerr)
				}
				t.Logf("damage: %v", gerr)
			case werr != nil || gerr != nil:
				if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
					t.Fatalf("direct: %v\nsqlite: %v", gerr, werr)
				}
			default:
				// Damage quick_check does not confirm: SQLite's reading, with a warning.
				got.Warnings = slices.DeleteFunc(slices.Clone(got.Warnings), func(w error) bool {
					return strings.Contains(w.Error(), nsys.DamageFallbackText)
				})
				if g, w := dumpTrace(got), dumpTrace(want); g != w {
					t.Fatalf("direct read differs from SQLite's (reads %+v):\n%s", got.Reads, firstDiff(g, w))
				}
			}
		}
	})
}

// quickCheckOf returns the first line of SQLite's PRAGMA quick_check of table in the
// file at path ("ok" when it passes).
func quickCheckOf(t *testing.T, path, table string) string {
	db, err := sql.Open("sqlite3", nsystest.FileURI(path)+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow(`PRAGMA quick_check(` + nsystest.QuoteIdent(table) + `)`).Scan(&s); err != nil {
		return err.Error()
	}
	return s
}

// mutateLeaves applies the leaf-page mutations of program to a copy of data (the bytes
// of the file at path): four bytes each, an opcode (low 2 bits: what; high 6: a value),
// a table of directTables, a leaf of it and an offset.
func mutateLeaves(path string, data []byte, roots map[string]int64, program []byte) []byte {
	if len(program) == 0 || len(data) < 100 {
		return data
	}
	pageSize := int(binary.BigEndian.Uint16(data[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return data
	}
	leaves := map[string][]uint32{}
	for _, tb := range directTables {
		if root, ok := roots[tb]; ok {
			leaves[tb] = nsys.LeafPages(path, tb, root)
		}
	}
	data = slices.Clone(data)
	p := nsystest.NewProg(program)
	for n := 0; n < 8 && p.More(); n++ {
		op, b1, b2, b3 := p.Next(), p.Next(), p.Next(), p.Next()
		ls := leaves[directTables[int(b1)%len(directTables)]]
		if len(ls) == 0 {
			continue
		}
		pg := int(ls[int(b2)%len(ls)])
		start := (pg - 1) * pageSize
		if start+pageSize > len(data) {
			continue
		}
		page := data[start : start+pageSize]
		val := op >> 2
		switch op & 3 {
		case 0: // flip bits of a byte: the page header and cell pointers, or anywhere
			off := int(b3)
			if val&1 != 0 {
				off = (int(b3) << 4) % pageSize
				off += int(val>>1) % 16
			}
			page[off%pageSize] ^= val | 1
		case 1: // truncate the file inside the page
			data = data[:start+(int(b3)<<4)%pageSize]
		case 2: // copy another leaf (of any table read directly) over this one
			other := leaves[directTables[int(val)%len(directTables)]]
			if len(other) > 0 {
				src := int(other[int(b3)%len(other)])
				if s := (src - 1) * pageSize; s+pageSize <= len(data) {
					copy(page, data[s:s+pageSize])
				}
			}
		case 3: // rewrite the page type, or a cell's first byte (its payload size)
			if val&1 == 0 {
				page[0] = []byte{2, 5, 10, 13, 0, 1}[int(b3)%6]
			} else if ncell := int(binary.BigEndian.Uint16(page[3:5])); ncell > 0 {
				i := int(b3) % ncell
				if pc := int(binary.BigEndian.Uint16(page[8+2*i:])); pc < pageSize {
					page[pc] = byte(val << 2)
				}
			}
		}
	}
	return data
}
