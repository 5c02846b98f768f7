package nsys

import (
	"unsafe"

	"github.com/stepstat/stepstat/nsys/sqlitefile"
)

// PartRows returns Options that read the large tables in parts of about n rows.
func PartRows(n int) Options { return Options{partRows: n} }

// LeafPages returns the leaf pages of table's B-tree in the file at path, in rowid
// order (nil when the direct reader cannot walk it).
func LeafPages(path, table string, root int64) []uint32 {
	f, err := sqlitefile.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	tb, err := f.Table(uint32(root))
	if err != nil {
		return nil
	}
	out := make([]uint32, len(tb.Leaves))
	for i, l := range tb.Leaves {
		out[i] = l.Page
	}
	return out
}

// InjectDamage makes the direct reader find damage on page 7 of table's B-tree (on a
// healthy file, so that SQLite's quick_check of it passes) until undo.
func InjectDamage(table string) (undo func()) {
	testDamage = func(t string) error {
		if t == table {
			return sqlitefile.Damagedf(7, "page 7: injected by the test")
		}
		return nil
	}
	return func() { testDamage = nil }
}

// SetBigMin sets the size from which a trace's arrays are mapped outside the Go heap (for
// tests of small traces) and returns the size before.
func SetBigMin(n int) int {
	old := bigMin
	bigMin = n
	return old
}

// MappedRanges returns the address ranges [start, end) of the memory mapped for t's arrays.
func MappedRanges(t *Trace) [][2]uintptr {
	if t.big == nil {
		return nil
	}
	t.big.mu.Lock()
	defer t.big.mu.Unlock()
	var out [][2]uintptr
	for _, m := range t.big.maps {
		s := uintptr(unsafe.Pointer(&m[0]))
		out = append(out, [2]uintptr{s, s + uintptr(len(m))})
	}
	return out
}

// OnMapped calls f with the path once Open has opened and mapped the file and read its
// schema, before it reads the activity tables, until undo.
func OnMapped(f func(path string)) (undo func()) {
	testMapped = f
	return func() { testMapped = nil }
}
