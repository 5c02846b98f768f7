package sqlitefile

import (
	"encoding/binary"
	"math"
	"runtime/debug"
)

// B-tree page types.
const (
	pageInteriorTable = 5
	pageLeafTable     = 13
)

// maxDepth bounds the depth of a B-tree walk (SQLite's own bound is 20).
const maxDepth = 20

// A page is one B-tree page of a table, its header checked.
type page struct {
	data  []byte // the page, usable bytes only
	pgno  uint32
	typ   byte
	hdr   int // offset of the page header: 100 on page 1, else 0
	cells int
	first int // offset of the cell pointer array
}

// parsePage checks the header of a table B-tree page.
func (s *File) parsePage(pgno uint32, b []byte) (page, error) {
	p := page{data: b[:s.usable], pgno: pgno}
	if pgno == 1 {
		p.hdr = 100
	}
	if len(p.data) < p.hdr+12 {
		return p, Damagedf(pgno, "page %d too small", pgno)
	}
	p.typ = p.data[p.hdr]
	switch p.typ {
	case pageLeafTable:
		p.first = p.hdr + 8
	case pageInteriorTable:
		p.first = p.hdr + 12
	default:
		return p, Damagedf(pgno, "page %d: page type %d is not a table B-tree page", pgno, p.typ)
	}
	p.cells = int(binary.BigEndian.Uint16(p.data[p.hdr+3:]))
	if p.first+2*p.cells > len(p.data) {
		return p, Damagedf(pgno, "page %d: %d cells do not fit", pgno, p.cells)
	}
	return p, nil
}

// cell returns the offset of cell i, checked to lie past the pointer array and at least
// min bytes before the end of the usable area.
func (p *page) cell(i, min int) (int, error) {
	pc := int(binary.BigEndian.Uint16(p.data[p.first+2*i:]))
	if pc < p.first+2*p.cells || pc > len(p.data)-min {
		return 0, Damagedf(p.pgno, "page %d: cell %d at offset %d outside the page", p.pgno, i, pc)
	}
	return pc, nil
}

// A pageSet is a set of page numbers, a bitmap allocated in chunks of 32,768 pages as
// pages are added: its memory follows the pages a walk reaches, not the page count the
// file's size or header claims (a sparse file of 2 TiB claims 4 G pages: 512 MB of
// bitmap per table when sized by the count).
type pageSet struct {
	chunks map[uint32]*[512]uint64
}

// add adds pg and reports whether it was not in the set yet.
func (ps *pageSet) add(pg uint32) bool {
	if ps.chunks == nil {
		ps.chunks = map[uint32]*[512]uint64{}
	}
	c := ps.chunks[pg>>15]
	if c == nil {
		c = new([512]uint64)
		ps.chunks[pg>>15] = c
	}
	w, bit := (pg>>6)&511, uint64(1)<<(pg&63)
	if c[w]&bit != 0 {
		return false
	}
	c[w] |= bit
	return true
}

// A Leaf is a leaf page of a table B-tree and the bounds of the rowids it may hold:
// (Lo, Hi], from the keys of the interior pages above it.
type Leaf struct {
	Page   uint32
	Lo, Hi int64
}

// A Table is a rowid table's B-tree: its leaf pages in rowid order.
type Table struct {
	file   *File
	Leaves []Leaf
}

// Table walks the table B-tree rooted at page root and returns its leaves in rowid
// order (a fault of the mapped file that shrank is ErrChanged, here and in RowidBounds and
// Scan). A B-tree is balanced: the depth of its leaves is found down the leftmost path,
// and the walk reads the interior pages only, once each; the leaves' own headers are
// checked when they are read (Scan). A page met twice, an interior page where a leaf
// should be or the reverse, a walk deeper than maxDepth and keys out of order are errors.
func (s *File) Table(root uint32) (_ *Table, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer guardFault(&err)
	w := &treeWalk{s: s, buf: make([]byte, s.pageSize)}
	if w.leafDepth, err = w.depth(root); err != nil {
		return nil, err
	}
	if err := w.walk(root, math.MinInt64, math.MaxInt64, 0); err != nil {
		return nil, err
	}
	return &Table{file: s, Leaves: w.out}, nil
}

// A treeWalk is Table's walk of one B-tree.
type treeWalk struct {
	s         *File
	seen      pageSet
	buf       []byte // one page, reused
	leafDepth int
	out       []Leaf
}

// depth returns the depth of the leaves of the B-tree rooted at page root, down its
// leftmost path.
func (w *treeWalk) depth(root uint32) (int, error) {
	s := w.s
	leafDepth := 0
	for pg := root; ; leafDepth++ {
		if leafDepth >= maxDepth {
			return 0, Damagedf(pg, "B-tree deeper than %d at page %d", maxDepth, pg)
		}
		b, err := s.ReadPages(pg, 1, w.buf)
		if err != nil {
			return 0, err
		}
		p, err := s.parsePage(pg, b)
		if err != nil {
			return 0, err
		}
		if p.typ == pageLeafTable {
			return leafDepth, nil
		}
		if p.cells == 0 {
			return 0, Damagedf(pg, "page %d: an interior page without cells", pg)
		}
		pc, err := p.cell(0, 5)
		if err != nil {
			return 0, err
		}
		pg = binary.BigEndian.Uint32(p.data[pc:])
	}
}

// walk adds the leaves under page pg, at depth, whose rowids are in (lo, hi].
func (w *treeWalk) walk(pg uint32, lo, hi int64, depth int) error {
	s := w.s
	if pg < 1 || pg > s.npages {
		return Damagedf(pg, "page %d out of the file's %d", pg, s.npages)
	}
	if !w.seen.add(pg) {
		return Damagedf(pg, "page %d met twice in one B-tree", pg)
	}
	if depth == w.leafDepth {
		w.out = append(w.out, Leaf{pg, lo, hi})
		return nil
	}
	b, err := s.ReadPages(pg, 1, w.buf)
	if err != nil {
		return err
	}
	p, err := s.parsePage(pg, b)
	if err != nil {
		return err
	}
	if p.typ != pageInteriorTable {
		return Damagedf(pg, "page %d: a leaf above the B-tree's other leaves", pg)
	}
	if p.cells == 0 {
		return Damagedf(pg, "page %d: an interior page without cells", pg)
	}
	kids, err := children(&p, pg, lo, hi)
	if err != nil {
		return err
	}
	l := lo
	for _, k := range kids {
		if err := w.walk(k.pg, l, k.key, depth+1); err != nil {
			return err
		}
		l = k.key
	}
	return nil
}

// A child is a child page of an interior page, with the largest rowid under it.
type child struct {
	pg  uint32
	key int64
}

// children copies the children and keys out of interior page p (page pg, rowids in
// (lo, hi]), the right child last: the page's buffer is reused by the walk below it.
func children(p *page, pg uint32, lo, hi int64) ([]child, error) {
	kids := make([]child, 0, p.cells+1)
	prev := lo
	for i := 0; i < p.cells; i++ {
		pc, err := p.cell(i, 5)
		if err != nil {
			return nil, err
		}
		key, n := Varint(p.data[pc+4:])
		if n == 0 {
			return nil, Damagedf(pg, "page %d: cell %d key unreadable", pg, i)
		}
		if key < prev || key > hi {
			return nil, Damagedf(pg, "page %d: keys out of order", pg)
		}
		kids = append(kids, child{binary.BigEndian.Uint32(p.data[pc:]), key})
		prev = key
	}
	return append(kids, child{binary.BigEndian.Uint32(p.data[p.hdr+8:]), hi}), nil
}

// RowidBounds returns the first and the last rowid of the table (ok false when empty).
func (t *Table) RowidBounds() (first, last int64, ok bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer guardFault(&err)
	if len(t.Leaves) == 0 {
		return 0, 0, false, nil
	}
	s := t.file
	buf := make([]byte, s.pageSize)
	read := func(l Leaf, lastCell bool) (int64, bool, error) {
		b, err := s.ReadPages(l.Page, 1, buf)
		if err != nil {
			return 0, false, err
		}
		p, err := s.parsePage(l.Page, b)
		if err != nil {
			return 0, false, err
		}
		if p.cells == 0 {
			return 0, false, nil
		}
		i := 0
		if lastCell {
			i = p.cells - 1
		}
		pc, err := p.cell(i, 2)
		if err != nil {
			return 0, false, err
		}
		_, n := Varint(p.data[pc:])
		id, m := Varint(p.data[pc+n:])
		if n == 0 || m == 0 {
			return 0, false, Damagedf(l.Page, "page %d: cell %d unreadable", l.Page, i)
		}
		return id, true, nil
	}
	first, ok1, err := read(t.Leaves[0], false)
	if err != nil {
		return 0, 0, false, err
	}
	last, ok2, err := read(t.Leaves[len(t.Leaves)-1], true)
	if err != nil {
		return 0, 0, false, err
	}
	return first, last, ok1 && ok2 && last >= first, nil
}

// localPayload is the number of a leaf cell's P payload bytes stored on the page; the
// rest is on overflow pages.
func (s *File) localPayload(p int64) int {
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

// maxRecord bounds the bytes of one record assembled from overflow pages.
const maxRecord = 64 << 20

// overflow returns the first n bytes of a payload whose first bytes are local and whose
// rest starts on overflow page first, assembled in *scratch (page: a page's buffer).
func (s *File) overflow(local []byte, first uint32, total int64, n int, scratch *[]byte, page []byte) ([]byte, error) {
	if int64(n) > total || n > maxRecord {
		return nil, Unhandledf("record of %d bytes", n)
	}
	out := append((*scratch)[:0], local...)
	pg := first
	for hops := uint32(0); len(out) < n; hops++ {
		if pg == 0 || hops >= s.npages {
			return nil, Damagedf(pg, "overflow chain ends early")
		}
		b, err := s.ReadPages(pg, 1, page)
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
