package nsys

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// This file decodes the SQLite file format (sqlite.org/fileformat.html) far enough to
// walk a rowid table's B-tree and read the integers of its records: the direct reader of
// the large activity tables (direct.go). It reads with pread, never writes, and checks
// every offset against the page and the file; anything it does not handle or finds
// inconsistent is an *unhandledError, on which the reader reads through SQLite instead.

// An unhandledError says why the direct reader did not read a table: something it does
// not handle (a -wal file, a text encoding, a column layout) or finds inconsistent (a
// damaged page). The table is then read through SQLite, which decides.
type unhandledError struct{ why string }

func (e *unhandledError) Error() string { return e.why }

func unhandledf(format string, args ...any) error {
	return &unhandledError{fmt.Sprintf(format, args...)}
}

// isUnhandled reports whether err is (or wraps) an unhandledError.
func isUnhandled(err error) bool {
	var u *unhandledError
	return errors.As(err, &u)
}

// An sqliteFile is an SQLite database file opened for reading pages.
type sqliteFile struct {
	f        *os.File
	pageSize int
	usable   int    // page size less the reserved bytes at the end of each page
	npages   uint32 // pages in the file
}

// B-tree page types.
const (
	pageInteriorTable = 5
	pageLeafTable     = 13
)

// maxDepth bounds the depth of a B-tree walk (SQLite's own bound is 20).
const maxDepth = 20

// openSQLiteFile opens path and checks its header for what the direct reader handles:
// a rollback-journal or WAL database without WAL frames, UTF-8 text, schema format 1-4.
func openSQLiteFile(path string) (*sqliteFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	s, err := checkHeader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func checkHeader(f *os.File, path string) (*sqliteFile, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var h [100]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return nil, unhandledf("file header unreadable (%v)", err)
	}
	if string(h[:16]) != sqliteMagic {
		return nil, unhandledf("no SQLite header")
	}
	ps := int(binary.BigEndian.Uint16(h[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps&(ps-1) != 0 {
		return nil, unhandledf("page size %d", ps)
	}
	switch {
	case h[18] == 2 || h[19] == 2:
		if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 32 {
			return nil, unhandledf("a -wal file with frames sits beside it")
		}
		if h[18] != h[19] {
			return nil, unhandledf("file format versions %d/%d", h[18], h[19])
		}
	case h[18] != 1 || h[19] != 1:
		return nil, unhandledf("file format versions %d/%d", h[18], h[19])
	}
	usable := ps - int(h[20])
	if usable < 480 {
		return nil, unhandledf("%d reserved bytes per page", h[20])
	}
	if enc := binary.BigEndian.Uint32(h[56:60]); enc != 1 {
		return nil, unhandledf("text encoding %s, not UTF-8", map[uint32]string{2: "UTF-16le", 3: "UTF-16be"}[enc])
	}
	if sf := binary.BigEndian.Uint32(h[44:48]); sf < 1 || sf > 4 {
		return nil, unhandledf("schema format %d", sf)
	}
	n := fi.Size() / int64(ps)
	// The header's page count, when valid, is what SQLite reads (a file can be longer).
	if hp := int64(binary.BigEndian.Uint32(h[28:32])); hp > 0 && binary.BigEndian.Uint32(h[92:96]) == binary.BigEndian.Uint32(h[24:28]) {
		if hp > n {
			return nil, unhandledf("file shorter than its header says")
		}
		n = hp
	}
	if n > math.MaxUint32-1 {
		return nil, unhandledf("%d pages", n)
	}
	return &sqliteFile{f: f, pageSize: ps, usable: usable, npages: uint32(n)}, nil
}

func (s *sqliteFile) Close() error { return s.f.Close() }

// readPages reads n pages from page pg on into buf (which must hold them).
func (s *sqliteFile) readPages(pg uint32, n int, buf []byte) ([]byte, error) {
	if pg < 1 || n < 1 || uint64(pg)+uint64(n)-1 > uint64(s.npages) {
		return nil, unhandledf("page %d out of the file's %d", uint64(pg)+uint64(max(n, 1))-1, s.npages)
	}
	b := buf[:n*s.pageSize]
	if _, err := s.f.ReadAt(b, int64(pg-1)*int64(s.pageSize)); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, unhandledf("page %d past the end of the file", pg)
		}
		return nil, err
	}
	return b, nil
}

// A btreePage is one B-tree page of a table, its header checked.
type btreePage struct {
	data  []byte // the page, usable bytes only
	pgno  uint32
	typ   byte
	hdr   int // offset of the page header: 100 on page 1, else 0
	cells int
	first int // offset of the cell pointer array
}

// parsePage checks the header of a table B-tree page.
func (s *sqliteFile) parsePage(pgno uint32, b []byte) (btreePage, error) {
	p := btreePage{data: b[:s.usable], pgno: pgno}
	if pgno == 1 {
		p.hdr = 100
	}
	if len(p.data) < p.hdr+12 {
		return p, unhandledf("page %d too small", pgno)
	}
	p.typ = p.data[p.hdr]
	switch p.typ {
	case pageLeafTable:
		p.first = p.hdr + 8
	case pageInteriorTable:
		p.first = p.hdr + 12
	default:
		return p, unhandledf("page %d: page type %d is not a table B-tree page", pgno, p.typ)
	}
	p.cells = int(binary.BigEndian.Uint16(p.data[p.hdr+3:]))
	if p.first+2*p.cells > len(p.data) {
		return p, unhandledf("page %d: %d cells do not fit", pgno, p.cells)
	}
	return p, nil
}

// cell returns the offset of cell i, checked to lie past the pointer array and at least
// min bytes before the end of the usable area.
func (p *btreePage) cell(i, min int) (int, error) {
	pc := int(binary.BigEndian.Uint16(p.data[p.first+2*i:]))
	if pc < p.first+2*p.cells || pc > len(p.data)-min {
		return 0, unhandledf("page %d: cell %d at offset %d outside the page", p.pgno, i, pc)
	}
	return pc, nil
}

// A leafRef is a leaf page of a table B-tree and the bounds of the rowids it may hold:
// (lo, hi], from the keys of the interior pages above it.
type leafRef struct {
	pgno   uint32
	lo, hi int64
}

// leaves walks the table B-tree rooted at root and returns its leaf pages in rowid
// order. A B-tree is balanced: the depth of its leaves is found down the leftmost path,
// and the walk reads the interior pages only, once each; the leaves' own headers are
// checked when they are read (directTable.leaf). A page met twice, an interior page
// where a leaf should be or the reverse, a walk deeper than maxDepth and keys out of order
// are errors.
func (s *sqliteFile) leaves(root uint32) ([]leafRef, error) {
	seen := make([]uint64, (uint64(s.npages)+64)/64)
	buf := make([]byte, s.pageSize)
	leafDepth := 0
	for pg := root; ; leafDepth++ {
		if leafDepth >= maxDepth {
			return nil, unhandledf("B-tree deeper than %d at page %d", maxDepth, pg)
		}
		b, err := s.readPages(pg, 1, buf)
		if err != nil {
			return nil, err
		}
		p, err := s.parsePage(pg, b)
		if err != nil {
			return nil, err
		}
		if p.typ == pageLeafTable {
			break
		}
		if p.cells == 0 {
			return nil, unhandledf("page %d: an interior page without cells", pg)
		}
		pc, err := p.cell(0, 5)
		if err != nil {
			return nil, err
		}
		pg = binary.BigEndian.Uint32(p.data[pc:])
	}
	var out []leafRef
	var walk func(pg uint32, lo, hi int64, depth int) error
	walk = func(pg uint32, lo, hi int64, depth int) error {
		if pg < 1 || pg > s.npages {
			return unhandledf("page %d out of the file's %d", pg, s.npages)
		}
		if seen[pg/64]&(1<<(pg%64)) != 0 {
			return unhandledf("page %d met twice in one B-tree", pg)
		}
		seen[pg/64] |= 1 << (pg % 64)
		if depth == leafDepth {
			out = append(out, leafRef{pg, lo, hi})
			return nil
		}
		b, err := s.readPages(pg, 1, buf)
		if err != nil {
			return err
		}
		p, err := s.parsePage(pg, b)
		if err != nil {
			return err
		}
		if p.typ != pageInteriorTable {
			return unhandledf("page %d: a leaf above the B-tree's other leaves", pg)
		}
		if p.cells == 0 {
			return unhandledf("page %d: an interior page without cells", pg)
		}
		// Copy the children and keys out: buf is reused by the walk below.
		type child struct {
			pg  uint32
			key int64
		}
		kids := make([]child, 0, p.cells+1)
		prev := lo
		for i := 0; i < p.cells; i++ {
			pc, err := p.cell(i, 5)
			if err != nil {
				return err
			}
			key, n := getVarint(p.data[pc+4:])
			if n == 0 {
				return unhandledf("page %d: cell %d key unreadable", pg, i)
			}
			if key < prev || key > hi {
				return unhandledf("page %d: keys out of order", pg)
			}
			kids = append(kids, child{binary.BigEndian.Uint32(p.data[pc:]), key})
			prev = key
		}
		kids = append(kids, child{binary.BigEndian.Uint32(p.data[p.hdr+8:]), hi})
		l := lo
		for _, k := range kids {
			if err := walk(k.pg, l, k.key, depth+1); err != nil {
				return err
			}
			l = k.key
		}
		return nil
	}
	if err := walk(root, math.MinInt64, math.MaxInt64, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// getVarint decodes an SQLite varint (big-endian, 7 bits a byte, the ninth byte whole)
// from b; n is 0 when b ends first.
func getVarint(b []byte) (v int64, n int) {
	var u uint64
	for i := 0; i < 8; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		u = u<<7 | uint64(c&0x7f)
		if c < 0x80 {
			return int64(u), i + 1
		}
	}
	if len(b) < 9 {
		return 0, 0
	}
	return int64(u<<8 | uint64(b[8])), 9
}

// localPayload is the number of a leaf cell's P payload bytes stored on the page; the
// rest is on overflow pages.
func (s *sqliteFile) localPayload(p int64) int {
	u := int64(s.usable)
	x := u - 35
	if p <= x {
		return int(p)
	}
	m := (u-12)*32/255 - 23
	k := m + (p-m)%(u-4)
	if k <= x {
		return int(k)
	}
	return int(m)
}

// maxRecord bounds the bytes of one record the reader assembles from overflow pages.
const maxRecord = 64 << 20

// overflow returns the first n bytes of a payload whose first local bytes are local and
// whose rest starts on overflow page first, assembled in *scratch.
func (s *sqliteFile) overflow(local []byte, first uint32, total int64, n int, scratch *[]byte, page []byte) ([]byte, error) {
	if int64(n) > total || n > maxRecord {
		return nil, unhandledf("record of %d bytes", n)
	}
	out := append((*scratch)[:0], local...)
	pg := first
	for hops := uint32(0); len(out) < n; hops++ {
		if pg == 0 || hops >= s.npages {
			return nil, unhandledf("overflow chain ends early")
		}
		b, err := s.readPages(pg, 1, page)
		if err != nil {
			return nil, err
		}
		pg = binary.BigEndian.Uint32(b)
		take := min(s.usable-4, n-len(out))
		out = append(out, b[4:4+take]...)
	}
	*scratch = out
	return out, nil
}
