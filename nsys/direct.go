package nsys

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The direct reader: the large activity tables are read by walking their B-trees in the
// file (sqlitefile.go) instead of stepping SQLite through them, in parallel over the leaf
// pages. It yields exactly the rows SQLite would for the same query (tableQuery): the
// same values, the same mask of columns that held no INTEGER, in rowid order, so that
// every table reader's row checks run unchanged on either path. What it does not handle
// it leaves to SQLite (a table at plan time, the whole read when met while reading), and
// says why in Trace.Reads.

// A tableCol is a column a table read asks for: a column the table must have (opt
// false), one it may have (opt: COALESCE(name, def), or the constant def when the table
// lacks it), or a constant (name "").
type tableCol struct {
	name string
	def  int64
	opt  bool
}

func needCol(name string) tableCol           { return tableCol{name: name} }
func optCol(name string, def int64) tableCol { return tableCol{name: name, def: def, opt: true} }
func constCol(v int64) tableCol              { return tableCol{def: v, opt: true} }

// A tableQuery is the integer columns read of one table, optionally only the rows whose
// column in has a value kept[value] (WHERE in IN (...)).
type tableQuery struct {
	table string
	cols  []tableCol
	in    string
	kept  []bool
}

// sql returns the query for SQLite, for part p of the table.
func (q *tableQuery) sql(r *reader, p part) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range q.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case c.name == "":
			b.WriteString(itoa(c.def))
		case c.opt:
			b.WriteString(r.colOr(q.table, c.name, itoa(c.def)))
		default:
			b.WriteString(c.name)
		}
	}
	b.WriteString(" FROM " + q.table)
	if q.in != "" {
		b.WriteString(" WHERE " + q.in + " IN (")
		n := 0
		for v, ok := range q.kept {
			if ok {
				if n > 0 {
					b.WriteByte(',')
				}
				b.WriteString(itoa(int64(v)))
				n++
			}
		}
		b.WriteString(")" + p.and())
	} else {
		b.WriteString(p.where())
	}
	return b.String()
}

// A TableRead says how the reader read one of the large tables.
type TableRead struct {
	Table  string
	Direct bool   // decoded from the file by stepstat's own reader
	Why    string // when not Direct: why it was read through SQLite
}

// A colInfo is what the reader knows of one column of a table's schema.
type colInfo struct {
	field   int  // index of the column's value in the table's records
	alias   bool // INTEGER PRIMARY KEY: the rowid, stored as NULL
	dflt    bool // has a DEFAULT clause (a record without the value reads the default)
	special bool // generated or hidden: not one value per record field
}

// A tableInfo is a table's place in the file and its columns.
type tableInfo struct {
	root      int64
	sql       string
	cols      map[string]colInfo
	generated bool // has generated columns: record fields do not follow the columns
}

// A directTable is a planned direct read of one table.
type directTable struct {
	file   *sqliteFile
	table  string
	fields []int   // by output column: record field, or -1 for a constant
	defs   []int64 // by output column: the constant, or the value of a NULL
	nulls  []bool  // by output column: a NULL counts as "no INTEGER" (not COALESCE'd)
	nfield int     // fields to parse: the highest read + 1
	in     int     // output column that filters the rows, -1 none
	kept   []bool
	leaves []leafRef
}

// planDirect plans the direct read of q, or says why it reads through SQLite.
func (r *reader) planDirect(q *tableQuery) (*directTable, string) {
	if r.opt.directFailed != "" {
		return nil, "the direct read stopped (" + r.opt.directFailed + ")"
	}
	if r.opt.SQLiteOnly {
		return nil, "asked for (Options.SQLiteOnly)"
	}
	if r.file == nil {
		return nil, r.fileWhy
	}
	ti, ok := r.infos[q.table]
	if !ok || ti.root <= 0 || ti.root > int64(r.file.npages) {
		return nil, "not a table with a B-tree of its own"
	}
	if strings.Contains(strings.ToUpper(ti.sql), "WITHOUT ROWID") {
		return nil, "a WITHOUT ROWID table"
	}
	if ti.generated {
		return nil, "it has generated columns"
	}
	d := &directTable{file: r.file, table: q.table, in: -1, kept: q.kept}
	for i, c := range q.cols {
		ci, has := ti.cols[c.name]
		field, def, null := -1, c.def, !c.opt
		switch {
		case c.name == "" || (c.opt && !has):
		case !has:
			return nil, "no column " + c.name
		case ci.alias || ci.dflt || ci.special:
			return nil, "column " + c.name + " is a rowid alias, has a default or is generated"
		default:
			field = ci.field
			d.nfield = max(d.nfield, field+1)
		}
		d.fields, d.defs, d.nulls = append(d.fields, field), append(d.defs, def), append(d.nulls, null)
		if q.in != "" && c.name == q.in {
			if field < 0 {
				return nil, "filter column " + q.in + " not in the records"
			}
			d.in = i
		}
	}
	if q.in != "" && d.in < 0 {
		return nil, "filter column " + q.in + " not read"
	}
	if d.nfield > 64 {
		return nil, "more than 64 columns"
	}
	var err error
	if d.leaves, err = r.file.leaves(uint32(ti.root)); err != nil {
		return nil, err.Error()
	}
	return d, ""
}

// rowidBounds returns the first and the last rowid of the table (ok false when empty).
func (d *directTable) rowidBounds() (first, last int64, ok bool, err error) {
	if len(d.leaves) == 0 {
		return 0, 0, false, nil
	}
	buf := make([]byte, d.file.pageSize)
	read := func(l leafRef, lastCell bool) (int64, bool, error) {
		b, err := d.file.readPages(l.pgno, 1, buf)
		if err != nil {
			return 0, false, err
		}
		p, err := d.file.parsePage(l.pgno, b)
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
		_, n := getVarint(p.data[pc:])
		id, m := getVarint(p.data[pc+n:])
		if n == 0 || m == 0 {
			return 0, false, unhandledf("page %d: cell %d unreadable", l.pgno, i)
		}
		return id, true, nil
	}
	first, ok1, err := read(d.leaves[0], false)
	if err != nil {
		return 0, 0, false, err
	}
	last, ok2, err := read(d.leaves[len(d.leaves)-1], true)
	if err != nil {
		return 0, 0, false, err
	}
	return first, last, ok1 && ok2 && last >= first, nil
}

// parts splits the table into runs of leaves of about partRows rowids each, as parts
// that index the slots of one array by rowid (see readParts), and returns the slots. A
// table whose rowids are too sparse to index, or empty, is one part that grows its own
// slice.
func (d *directTable) parts(r *reader, partRows int) ([]part, int, error) {
	whole := []part{{la: 0, lb: len(d.leaves)}}
	first, last, ok, err := d.rowidBounds()
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return whole, 0, nil
	}
	span := last + 1 - first
	if first < 1 || span > r.size/16+1 || span > 1<<31 {
		return whole, int(min(int64(len(d.leaves))*int64(d.file.usable/16), 1<<24)), nil
	}
	var ps []part
	lo, la := first, 0
	for i, l := range d.leaves {
		end := i == len(d.leaves)-1
		if !end && l.hi+1-lo < int64(partRows) {
			continue
		}
		hi := last + 1
		if !end {
			hi = l.hi + 1
		}
		if hi < lo || hi > last+1 {
			return nil, 0, unhandledf("page %d: keys out of the table's rowids", l.pgno)
		}
		ps = append(ps, part{lo: lo, hi: hi, la: la, lb: i + 1})
		lo, la = hi, i+1
	}
	return ps, int(span), nil
}

// runPages is the most leaf pages read with one pread.
const runPages = 64

// scan reads the leaves of part p and calls fn with each row kept: the output columns'
// values, then the mask of those that held no INTEGER (as reader.scan).
func (d *directTable) scan(ctx context.Context, p part, prog *tableProgress, fn func(v []int64)) error {
	f := d.file
	ps := f.pageSize
	buf := make([]byte, runPages*ps)
	st := &rowState{
		v:     make([]int64, len(d.fields)+1),
		types: make([]uint64, d.nfield),
		offs:  make([]int64, d.nfield+1),
		page:  make([]byte, ps),
	}
	var n int64
	defer func() { prog.add(n, true) }()
	leaves := d.leaves[p.la:p.lb]
	for i := 0; i < len(leaves); {
		j := i + 1
		for j < len(leaves) && j-i < runPages && leaves[j].pgno == leaves[j-1].pgno+1 {
			j++
		}
		b, err := f.readPages(leaves[i].pgno, j-i, buf)
		if err != nil {
			return err
		}
		for k := i; k < j; k++ {
			m, err := d.leaf(leaves[k], b[(k-i)*ps:(k-i+1)*ps], st, fn)
			if err != nil {
				return err
			}
			n += int64(m)
		}
		i = j
		if n >= 1<<20 {
			if err := ctx.Err(); err != nil {
				return err
			}
			prog.add(n, false)
			n = 0
		}
	}
	return nil
}

// rowState is one scan's scratch: the row, the record header parsed, overflow buffers.
type rowState struct {
	v       []int64
	types   []uint64
	offs    []int64
	scratch []byte
	page    []byte
}

// leaf decodes the rows of one leaf page; it returns the number of rows on it.
func (d *directTable) leaf(l leafRef, b []byte, st *rowState, fn func(v []int64)) (int, error) {
	f := d.file
	p, err := f.parsePage(l.pgno, b)
	if err != nil {
		return 0, err
	}
	if p.typ != pageLeafTable {
		return 0, unhandledf("page %d: not a leaf page any more", l.pgno)
	}
	if p.cells == 0 && len(d.leaves) > 1 {
		return 0, unhandledf("page %d: a leaf page without cells", l.pgno)
	}
	if p.cells > (f.pageSize-8)/6 {
		return 0, unhandledf("page %d: %d cells", l.pgno, p.cells)
	}
	data := p.data
	prev := l.lo
	for i := 0; i < p.cells; i++ {
		pc, err := p.cell(i, 2)
		if err != nil {
			return 0, err
		}
		size, n1 := getVarint(data[pc:])
		if n1 == 0 || n1 == 9 || size < 0 || size > 1<<30 {
			return 0, unhandledf("page %d: cell %d: payload size unreadable", l.pgno, i)
		}
		rowid, n2 := getVarint(data[pc+n1:])
		if n2 == 0 {
			return 0, unhandledf("page %d: cell %d: rowid unreadable", l.pgno, i)
		}
		if rowid <= prev || rowid > l.hi {
			return 0, unhandledf("page %d: rowids out of order", l.pgno)
		}
		prev = rowid
		off := pc + n1 + n2
		local := f.localPayload(size)
		if off+local > len(data) {
			return 0, unhandledf("page %d: cell %d runs past the page", l.pgno, i)
		}
		var ovfl uint32
		if int64(local) < size {
			if off+local+4 > len(data) {
				return 0, unhandledf("page %d: cell %d runs past the page", l.pgno, i)
			}
			ovfl = binary.BigEndian.Uint32(data[off+local:])
		}
		keep, err := d.record(data[off:off+local], ovfl, size, st)
		if err != nil {
			return 0, unhandledf("page %d: cell %d: %v", l.pgno, i, err)
		}
		if keep {
			fn(st.v)
		}
	}
	return p.cells, nil
}

// record decodes the output columns of one record into st.v; it reports whether the row
// passes the filter. pay is the payload's bytes on the page; the rest of its size bytes
// start on overflow page ovfl.
func (d *directTable) record(pay []byte, ovfl uint32, size int64, st *rowState) (bool, error) {
	if int64(len(pay)) == size {
		return d.recordLocal(pay, st)
	}
	local := pay
	need := func(n int64) error {
		if n <= int64(len(pay)) {
			return nil
		}
		b, err := d.file.overflow(local, ovfl, size, int(n), &st.scratch, st.page)
		if err != nil {
			return err
		}
		pay = b
		return nil
	}
	if err := need(min(9, size)); err != nil {
		return false, err
	}
	hs, n := getVarint(pay)
	if n == 0 || hs < int64(n) || hs > 98307 || hs > size {
		return false, unhandledf("record header of %d bytes", hs)
	}
	if err := need(hs); err != nil {
		return false, err
	}
	// Parse the serial types of the fields read, as SQLite does: up to the last one
	// needed, the body offsets checked against the payload; a header that ends first
	// must account for the whole payload.
	at, body := n, hs
	nf := 0
	for nf < d.nfield && int64(at) < hs {
		t, m := getVarint(pay[at:hs])
		if m == 0 {
			return false, unhandledf("record header unreadable")
		}
		at += m
		st.types[nf] = uint64(t)
		st.offs[nf] = body
		body += serialLen(uint64(t))
		nf++
		if body > size {
			return false, unhandledf("record body does not match its header")
		}
	}
	if body > size || (int64(at) >= hs && (int64(at) > hs || body != size)) {
		return false, unhandledf("record body does not match its header")
	}
	v := st.v
	var bad int64
	for c, fi := range d.fields {
		if fi < 0 {
			v[c] = d.defs[c]
			continue
		}
		if fi >= nf {
			v[c], bad = d.null(c, bad)
			continue
		}
		t, o := st.types[fi], st.offs[fi]
		switch {
		case t == 0:
			v[c], bad = d.null(c, bad)
			continue
		case t == 8:
			v[c] = 0
			continue
		case t == 9:
			v[c] = 1
			continue
		case t > 6:
			return false, unhandledf("column %d holds a %s", c, serialName(t))
		}
		l := serialLen(t)
		if err := need(o + l); err != nil {
			return false, err
		}
		v[c] = intValue(pay[o : o+l])
	}
	v[len(d.fields)] = bad
	if d.in >= 0 {
		x := v[d.in]
		if bad&(1<<d.in) != 0 || x < 0 || x >= int64(len(d.kept)) || !d.kept[x] {
			return false, nil
		}
	}
	return true, nil
}

// recordLocal is record for a payload wholly on its page (all rows of nsys' activity
// tables): the same checks, the filter column first.
func (d *directTable) recordLocal(pay []byte, st *rowState) (bool, error) {
	size := len(pay)
	if size == 0 {
		return false, unhandledf("empty record")
	}
	hs, at := int(pay[0]), 1
	if hs >= 0x80 {
		h, n := getVarint(pay)
		if n == 0 || h > 98307 {
			return false, unhandledf("record header of %d bytes", h)
		}
		hs, at = int(h), n
	}
	if hs < at || hs > size {
		return false, unhandledf("record header of %d bytes", hs)
	}
	types, offs := st.types[:d.nfield], st.offs[:d.nfield]
	body, nf := hs, 0
	for nf < len(types) && at < hs {
		t := uint64(pay[at])
		if t < 0x80 {
			at++
		} else {
			x, m := getVarint(pay[at:hs])
			if m == 0 {
				return false, unhandledf("record header unreadable")
			}
			t, at = uint64(x), at+m
		}
		types[nf], offs[nf] = t, int64(body)
		if t < 12 {
			body += int(serialLens[t])
		} else if l := serialLen(t); l <= int64(size) {
			body += int(l)
		} else {
			return false, unhandledf("record body does not match its header")
		}
		nf++
		if body > size {
			return false, unhandledf("record body does not match its header")
		}
	}
	if at >= hs && (at > hs || body != size) {
		return false, unhandledf("record body does not match its header")
	}
	v := st.v
	var bad int64
	get := func(c int) error {
		fi := d.fields[c]
		if fi < 0 {
			v[c] = d.defs[c]
			return nil
		}
		if fi >= nf {
			v[c], bad = d.null(c, bad)
			return nil
		}
		o := offs[fi]
		switch types[fi] {
		case 0:
			v[c], bad = d.null(c, bad)
		case 1:
			v[c] = int64(int8(pay[o]))
		case 2:
			v[c] = int64(int16(binary.BigEndian.Uint16(pay[o:])))
		case 3:
			v[c] = int64(int8(pay[o]))<<16 | int64(pay[o+1])<<8 | int64(pay[o+2])
		case 4:
			v[c] = int64(int32(binary.BigEndian.Uint32(pay[o:])))
		case 5:
			v[c] = int64(int16(binary.BigEndian.Uint16(pay[o:])))<<32 | int64(binary.BigEndian.Uint32(pay[o+2:]))
		case 6:
			v[c] = int64(binary.BigEndian.Uint64(pay[o:]))
		case 8:
			v[c] = 0
		case 9:
			v[c] = 1
		default:
			return unhandledf("column %d holds a %s", c, serialName(types[fi]))
		}
		return nil
	}
	if d.in >= 0 {
		if err := get(d.in); err != nil {
			return false, err
		}
		x := v[d.in]
		if bad != 0 || x < 0 || x >= int64(len(d.kept)) || !d.kept[x] {
			return false, nil
		}
	}
	for c := range d.fields {
		if c == d.in {
			continue
		}
		if err := get(c); err != nil {
			return false, err
		}
	}
	v[len(d.fields)] = bad
	return true, nil
}

// serialLens are the body lengths of serial types 0-11.
var serialLens = [12]int8{0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0}

// null returns the value of a NULL in output column c and the mask with c's bit set
// when the column is not COALESCE'd (SQLite's column_int64 of NULL is 0).
func (d *directTable) null(c int, bad int64) (int64, int64) {
	if d.nulls[c] {
		if c < 63 {
			bad |= 1 << c
		}
		return 0, bad
	}
	return d.defs[c], bad
}

// serialLen is the body length of a value of serial type t.
func serialLen(t uint64) int64 {
	switch {
	case t <= 4:
		return [...]int64{0, 1, 2, 3, 4}[t]
	case t == 5:
		return 6
	case t == 6 || t == 7:
		return 8
	case t < 12:
		return 0
	case t > math.MaxInt64/2:
		return math.MaxInt64 / 4 // no payload holds it: caught by the size check
	}
	return int64(t-12) / 2
}

func serialName(t uint64) string {
	switch {
	case t == 7:
		return "REAL"
	case t == 10 || t == 11:
		return "reserved serial type"
	case t%2 == 0:
		return "BLOB"
	}
	return "TEXT"
}

// intValue decodes a big-endian two's-complement integer of 1-8 bytes.
func intValue(b []byte) int64 {
	x := int64(int8(b[0]))
	for _, c := range b[1:] {
		x = x<<8 | int64(c)
	}
	return x
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// readLog collects how the tables were read, from the lanes.
type readLog struct {
	mu    sync.Mutex
	reads []TableRead
}

func (l *readLog) add(tr TableRead) {
	l.mu.Lock()
	l.reads = append(l.reads, tr)
	l.mu.Unlock()
}

func (l *readLog) sorted() []TableRead {
	slices.SortFunc(l.reads, func(a, b TableRead) int { return strings.Compare(a.Table, b.Table) })
	return l.reads
}

// direct plans the direct read of q and logs how the table is read: it returns nil
// when the table is read through SQLite.
func (r *reader) direct(q *tableQuery) *directTable {
	d, why := r.planDirect(q)
	r.reads.add(TableRead{Table: q.table, Direct: d != nil, Why: why})
	return d
}

// scanTable reads the rows of q (all of the table) and calls fn with each, as scan.
func (r *reader) scanTable(q *tableQuery, fn func(v []int64)) error {
	prog := r.newProgress(q.table, 1)
	if d := r.direct(q); d != nil {
		if err := d.scan(r.ctx, part{lb: len(d.leaves)}, prog, fn); err != nil {
			return fmt.Errorf("reading %s: %w", q.table, err)
		}
		return nil
	}
	return r.scanPart(prog, q.sql(r, part{}), len(q.cols), fn)
}
