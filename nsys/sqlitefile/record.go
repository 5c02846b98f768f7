package sqlitefile

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime/debug"
	"unsafe"
)

// Columns is what Scan decodes of each record of a table: integer output columns, each a
// record field or a constant; optionally only the rows whose filter column holds a value
// v with Kept[v] (SQL's WHERE col IN (...)); optionally one text column.
type Columns struct {
	Fields []int   // by output column: the record field, or -1 for the constant Defs[c]
	Defs   []int64 // by output column: the constant, or what a NULL reads as
	Nulls  []bool  // by output column: a NULL reads as 0 with the column's bit set in the mask
	Filter int     // the output column that filters the rows; -1: none
	Kept   []bool
	Text   int // the record field of the text column; -1: none
	// NullsOnly: the mask marks NULLs only, for a caller that tells a NULL from a value of
	// another type (a range never closed from a broken one): a REAL that is not a whole
	// number is then an *Unhandled error, not a bit of the mask.
	NullsOnly bool
}

// MaxColumns is the most output columns a scan decodes (one bit each in the row's mask).
const MaxColumns = 62

// MaxFields is the most record fields a scan parses: the highest one read + 1.
const MaxFields = 64

// runPages is the most leaf pages read (or handed out of the mapping) at once.
const runPages = 64

// progressRows is about how often Scan reports progress, in rows.
const progressRows = 1 << 20

// Scan decodes the records of the leaves [la, lb) of t in rowid order and calls fn with
// each row kept: v holds the output columns' values and, after them, the mask of those
// that held no INTEGER (bit c for output column c: a NULL of a column with Nulls[c]);
// text is the text column's bytes (NULL reads as empty). Both are valid during the call
// only. A REAL reads as its integer when it is a whole number within int64, else as no
// INTEGER (its bit set), as SQLite's reading does whatever the column's affinity. TEXT
// or BLOB in an integer column is an *Unhandled error, as is every inconsistency of the
// pages and records.
//
// progress, when not nil, is called with the rows read since its last call: about every
// million rows (last false: an error from it stops the scan) and once at the end (last
// true, also after an error).
func (t *Table) Scan(c *Columns, la, lb int, progress func(rows int64, last bool) error, fn func(v []int64, text []byte)) (err error) {
	var n int64
	if progress != nil {
		defer func() { progress(n, true) }()
	}
	d, err := newDecoder(t.file, c)
	if err != nil {
		return err
	}
	// A mapped file that shrinks under the reader faults: an error, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer guardFault(&err)
	f := t.file
	ps := f.pageSize
	var buf []byte
	if !f.Mapped() {
		buf = make([]byte, runPages*ps)
	}
	leaves := t.Leaves[la:lb]
	alone := len(t.Leaves) == 1
	for i := 0; i < len(leaves); {
		j := i + 1
		for j < len(leaves) && j-i < runPages && leaves[j].Page == leaves[j-1].Page+1 {
			j++
		}
		b, err := f.ReadPages(leaves[i].Page, j-i, buf)
		if err != nil {
			return err
		}
		for k := i; k < j; k++ {
			m, err := d.leaf(leaves[k], b[(k-i)*ps:(k-i+1)*ps], alone, fn)
			if err != nil {
				return err
			}
			n += int64(m)
		}
		f.Done(b)
		i = j
		if n >= progressRows && progress != nil {
			if err := progress(n, false); err != nil {
				return err
			}
			n = 0
		}
	}
	return nil
}

// A decoder is one scan's plan and scratch: the row, the record header parsed, overflow
// buffers.
type decoder struct {
	file   *File
	c      *Columns
	nfield int     // fields to parse: the highest read + 1
	order  []uint8 // the output columns in decoding order: the filter first
	v      []int64
	text   []byte
	// the record header: serial type and body offset by field
	types   []uint64
	offs    []int64
	types8  []uint8 // the fast path's
	offs8   []int32
	scratch []byte // a record assembled from overflow pages
	page    []byte // an overflow page read
	// The record being read by record: its bytes so far (pay: on the page, or assembled
	// with the overflow pages read so far), those on the page, its first overflow page
	// and its size.
	pay, local []byte
	ovfl       uint32
	size       int64
}

func newDecoder(f *File, c *Columns) (*decoder, error) {
	nc := len(c.Fields)
	if nc > MaxColumns || len(c.Defs) != nc || len(c.Nulls) != nc || c.Filter >= nc {
		return nil, Unhandledf("%d columns", nc)
	}
	d := &decoder{file: f, c: c, v: make([]int64, nc+1), page: make([]byte, f.pageSize)}
	d.nfield = c.Text + 1
	for _, fi := range c.Fields {
		d.nfield = max(d.nfield, fi+1)
	}
	if d.nfield > MaxFields {
		return nil, Unhandledf("field %d read", d.nfield-1)
	}
	if c.Filter >= 0 {
		d.order = append(d.order, uint8(c.Filter))
	}
	for i := range c.Fields {
		if i != c.Filter {
			d.order = append(d.order, uint8(i))
		}
	}
	d.types, d.offs = make([]uint64, d.nfield), make([]int64, d.nfield)
	d.types8, d.offs8 = make([]uint8, d.nfield), make([]int32, d.nfield)
	return d, nil
}

// leaf decodes the rows of one leaf page; it returns the number of rows on it. alone:
// the page is the table's only leaf (the one leaf that may have no cells).
func (d *decoder) leaf(l Leaf, b []byte, alone bool, fn func(v []int64, text []byte)) (int, error) {
	f := d.file
	p, err := f.parsePage(l.Page, b)
	if err != nil {
		return 0, err
	}
	if p.typ != pageLeafTable {
		return 0, Damagedf(l.Page, "page %d: an interior page among the leaves", l.Page)
	}
	if p.cells == 0 && !alone {
		return 0, Damagedf(l.Page, "page %d: a leaf page without cells", l.Page)
	}
	if p.cells > (f.pageSize-8)/6 {
		return 0, Damagedf(l.Page, "page %d: %d cells", l.Page, p.cells)
	}
	data := p.data
	prev := l.Lo
	for i := 0; i < p.cells; i++ {
		pc, err := p.cell(i, 2)
		if err != nil {
			return 0, err
		}
		size, n1 := Varint(data[pc:])
		if n1 == 0 || n1 == 9 || size < 0 || size > 1<<30 {
			return 0, Damagedf(l.Page, "page %d: cell %d: payload size unreadable", l.Page, i)
		}
		rowid, n2 := Varint(data[pc+n1:])
		if n2 == 0 {
			return 0, Damagedf(l.Page, "page %d: cell %d: rowid unreadable", l.Page, i)
		}
		if rowid <= prev || rowid > l.Hi {
			return 0, Damagedf(l.Page, "page %d: rowids out of order", l.Page)
		}
		prev = rowid
		off := pc + n1 + n2
		local := f.localPayload(size)
		if off+local > len(data) {
			return 0, Damagedf(l.Page, "page %d: cell %d runs past the page", l.Page, i)
		}
		pay := data[off : off+local]
		keep, ok := false, false
		if int64(local) == size {
			keep, ok = d.fast(pay)
		}
		if !ok {
			var ovfl uint32
			if int64(local) < size {
				if off+local+4 > len(data) {
					return 0, Damagedf(l.Page, "page %d: cell %d runs past the page", l.Page, i)
				}
				ovfl = binary.BigEndian.Uint32(data[off+local:])
			}
			if keep, err = d.record(pay, ovfl, size); err != nil {
				if IsDamaged(err) {
					return 0, Damagedf(l.Page, "page %d: cell %d: %v", l.Page, i, err)
				}
				return 0, Unhandledf("page %d: cell %d: %v", l.Page, i, err)
			}
		}
		if keep {
			fn(d.v, d.text)
		}
	}
	return p.cells, nil
}

// fast is record for the common record (every row of nsys' activity tables): wholly on
// its page, a one-byte header size, one-byte serial types for the fields read (integers,
// NULLs, short text), no TEXT or REAL in an integer column. ok is false for any other
// record, which record then reads (and finds what is wrong with it, if anything).
func (d *decoder) fast(pay []byte) (keep, ok bool) {
	size := len(pay)
	if size == 0 {
		return false, false
	}
	hs := int(pay[0])
	if hs >= 0x80 || hs > size || hs < 1 {
		return false, false
	}
	nf := min(d.nfield, hs-1)
	offs := d.offs8[:nf]
	types := d.types8[:nf]
	hdr := pay[1 : 1+nf]
	body := hs
	for i, t := range hdr {
		if t >= 0x80 {
			return false, false
		}
		types[i], offs[i] = t, int32(body)
		body += int(fastLens[t])
	}
	if body > size || (nf == hs-1 && body != size) {
		return false, false
	}
	d.pay = pay
	keep, err := columns(d, types, offs)
	return keep, err == nil
}

// record decodes the output columns of one record into d.v and the text column into
// d.text; it reports whether the row passes the filter. pay is the payload's bytes on
// the page; the rest of its size bytes start on overflow page ovfl.
func (d *decoder) record(pay []byte, ovfl uint32, size int64) (bool, error) {
	d.pay, d.local, d.ovfl, d.size = pay, pay, ovfl, size
	nf, err := d.header()
	if err != nil {
		return false, err
	}
	return columns(d, d.types[:nf], d.offs[:nf])
}

// need makes d.pay hold the first n bytes of the record, from its overflow pages.
func (d *decoder) need(n int64) error {
	if n <= int64(len(d.pay)) {
		return nil
	}
	b, err := d.file.overflow(d.local, d.ovfl, d.size, int(n), &d.scratch, d.page)
	if err != nil {
		return err
	}
	d.pay = b
	return nil
}

// header parses the record header of d.pay into d.types and d.offs, up to the last field
// read, and returns the number of fields parsed.
func (d *decoder) header() (int, error) {
	size := d.size
	if err := d.need(min(9, size)); err != nil {
		return 0, err
	}
	hs, n := Varint(d.pay)
	if n == 0 || hs < int64(n) || hs > 98307 || hs > size {
		return 0, Damagedf(0, "record header of %d bytes", hs)
	}
	if err := d.need(hs); err != nil {
		return 0, err
	}
	// Parse the serial types of the fields read, as SQLite does: up to the last one
	// needed, the body offsets checked against the payload; a header that ends first
	// must account for the whole payload.
	pay := d.pay
	at, body := n, hs
	nf := 0
	for nf < d.nfield && int64(at) < hs {
		t, m := Varint(pay[at:hs])
		if m == 0 {
			return 0, Damagedf(0, "record header unreadable")
		}
		at += m
		d.types[nf] = uint64(t)
		d.offs[nf] = body
		body += serialLen(uint64(t))
		nf++
		if body > size {
			return 0, Damagedf(0, "record body does not match its header")
		}
	}
	if body > size || (int64(at) >= hs && (int64(at) > hs || body != size)) {
		return 0, Damagedf(0, "record body does not match its header")
	}
	return nf, nil
}

// errNotFast is columns' answer to fast for a record it leaves to record.
var errNotFast = errors.New("not a record for the fast path")

// columns decodes the output columns of the record d.pay into d.v, in d.order, and the
// text column into d.text; it reports whether the row passes the filter. Field fi of
// the record, for fi < len(types), has serial type types[fi] at offset offs[fi]; a field
// past them is NULL. For fast (one-byte types) it reads INTEGERs and NULLs only, its
// records wholly in d.pay, and returns errNotFast for any other value. For record
// (uint64 types) it reads a REAL too, says what else a column holds (an *Unhandled
// error), and fetches the bytes of the overflow pages as the columns read reach them
// (d.need). Which of the two is known when the function is compiled (the size of T),
// so the fast path's loop carries none of record's branches.
func columns[T uint8 | uint64, O int32 | int64](d *decoder, types []T, offs []O) (bool, error) {
	var t0 T
	slow := unsafe.Sizeof(t0) == 8
	pay, nf := d.pay, len(types)
	c := d.c
	v := d.v
	var bad int64
	for _, oc := range d.order {
		oc := int(oc)
		fi := c.Fields[oc]
		switch {
		case fi < 0:
			v[oc] = c.Defs[oc]
		case fi >= nf || types[fi] == 0:
			v[oc], bad = d.null(oc, bad)
		default:
			t, o := uint64(types[fi]), int64(offs[fi])
			if slow {
				if t > 9 {
					return false, Unhandledf("column %d holds a %s", oc, serialName(t))
				}
				if err := d.need(o + serialLen(t)); err != nil {
					return false, err
				}
				pay = d.pay
				if t == 7 {
					x, whole, err := d.real(oc, pay[o:])
					if err != nil {
						return false, err
					}
					v[oc] = x
					if !whole {
						bad |= 1 << oc
					}
					break
				}
			}
			x, isInt := intValue(t, pay[o:])
			if !isInt {
				return false, errNotFast
			}
			v[oc] = x
		}
		if oc == c.Filter && !d.kept(bad) {
			return false, nil
		}
	}
	v[len(c.Fields)] = bad
	d.text = nil
	if fi := c.Text; fi >= 0 && fi < nf {
		t, o := uint64(types[fi]), int64(offs[fi])
		if t != 0 && (t < 13 || t%2 == 0) {
			if slow {
				return false, Unhandledf("text column holds a %s", serialName(t))
			}
			return false, errNotFast
		}
		l := serialLen(t)
		if slow {
			if l == 0 {
				return true, nil
			}
			if err := d.need(o + l); err != nil {
				return false, err
			}
			pay = d.pay
		}
		d.text = pay[o : o+l]
	}
	return true, nil
}

// real reads the REAL at b as SQLite's query of output column oc gives it to its reader:
// a whole number within int64 as that integer (a column of REAL affinity stores its
// whole numbers as integers and returns them as REALs), any other as no INTEGER (whole
// false: the column's bit in the mask), or an *Unhandled error where the mask marks
// NULLs only.
func (d *decoder) real(oc int, b []byte) (int64, bool, error) {
	x, whole := WholeFloat(math.Float64frombits(binary.BigEndian.Uint64(b)))
	if !whole && d.c.NullsOnly {
		return 0, false, Unhandledf("column %d holds a REAL that is not a whole number", oc)
	}
	return x, whole, nil
}

// WholeFloat returns f as an int64 when it is a whole number within int64; ok is false
// (and the value 0) for any other REAL (a fraction, inf, NaN, beyond int64).
func WholeFloat(f float64) (v int64, ok bool) {
	if !(f >= -9223372036854775808.0 && f < 9223372036854775808.0) || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}

// kept reports whether the filter column's value (decoded into d.v; bad: the mask so
// far) is one of the kept values.
func (d *decoder) kept(bad int64) bool {
	c := d.c
	x := d.v[c.Filter]
	return bad&(1<<c.Filter) == 0 && x >= 0 && x < int64(len(c.Kept)) && c.Kept[x]
}

// null returns the value of a NULL in output column c and the mask with c's bit set
// when the column has Nulls[c].
func (d *decoder) null(c int, bad int64) (int64, int64) {
	if d.c.Nulls[c] {
		return 0, bad | 1<<c
	}
	return d.c.Defs[c], bad
}
