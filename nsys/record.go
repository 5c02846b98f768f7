package nsys

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
)

// runPages is the most leaf pages read with one pread.
const runPages = 64

// scan reads the leaves of part p and calls fn with each row kept: the output columns'
// values, then the mask of those that held no INTEGER (as reader.scan).
func (d *directTable) scan(ctx context.Context, p part, prog *tableProgress, fn func(v []int64)) error {
	f := d.file
	ps := f.pageSize
	buf := make([]byte, runPages*ps)
	st := &rowState{
		v:      make([]int64, len(d.fields)+1),
		types:  make([]uint64, d.nfield),
		offs:   make([]int64, d.nfield+1),
		types8: make([]uint8, d.nfield),
		offs8:  make([]int32, d.nfield),
		page:   make([]byte, ps),
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
	types8  []uint8 // recordFast's
	offs8   []int32
}

// leaf decodes the rows of one leaf page; it returns the number of rows on it.
func (d *directTable) leaf(l leafRef, b []byte, st *rowState, fn func(v []int64)) (int, error) {
	f := d.file
	p, err := f.parsePage(l.pgno, b)
	if err != nil {
		return 0, err
	}
	if p.typ != pageLeafTable {
		return 0, unhandledf("page %d: an interior page among the leaves", l.pgno)
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
		if keep, ok := d.recordFast(pay, st); ok {
			return keep, nil
		}
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
	if d.textField >= 0 {
		d.text = nil
		if fi := d.textField; fi < nf {
			t, o := st.types[fi], st.offs[fi]
			if t != 0 && (t < 13 || t%2 == 0) {
				return false, unhandledf("text column holds a %s", serialName(t))
			}
			if l := serialLen(t); l > 0 {
				if err := need(o + l); err != nil {
					return false, err
				}
				d.text = pay[o : o+l]
			}
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
	if d.textField >= 0 {
		d.text = nil
		if fi := d.textField; fi < nf {
			t, o := types[fi], offs[fi]
			if t != 0 && (t < 13 || t%2 == 0) {
				return false, unhandledf("text column holds a %s", serialName(t))
			}
			d.text = pay[o : o+serialLen(t)]
		}
	}
	return true, nil
}

// recordFast is recordLocal for the common record: a one-byte header size and one-byte
// serial types for the fields read (integers, NULLs, short text), no TEXT or REAL in an
// integer column. ok is false for any other record, which recordLocal then reads (and
// finds what is wrong with it, if anything).
func (d *directTable) recordFast(pay []byte, st *rowState) (keep, ok bool) {
	size := len(pay)
	if size == 0 {
		return false, false
	}
	hs := int(pay[0])
	if hs >= 0x80 || hs > size || hs < 1 {
		return false, false
	}
	nf := min(d.nfield, hs-1)
	offs := st.offs8[:nf]
	types := st.types8[:nf]
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
	v := st.v
	var bad int64
	for c := range d.order {
		c := int(d.order[c])
		fi := d.fields[c]
		if fi < 0 {
			v[c] = d.defs[c]
			continue
		}
		t := uint8(0)
		o := 0
		if fi < nf {
			t, o = types[fi], int(offs[fi])
		}
		switch t {
		case 0:
			if d.nulls[c] {
				v[c] = 0
				bad |= 1 << c
			} else {
				v[c] = d.defs[c]
			}
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
			return false, false
		}
		if c == d.in {
			x := v[c]
			if bad != 0 || x < 0 || x >= int64(len(d.kept)) || !d.kept[x] {
				return false, true
			}
		}
	}
	v[len(d.fields)] = bad
	if d.textField >= 0 {
		d.text = nil
		if fi := d.textField; fi < nf {
			t, o := types[fi], int(offs[fi])
			if t != 0 && (t < 13 || t%2 == 0) {
				return false, false
			}
			d.text = pay[o : o+int(fastLens[t])]
		}
	}
	return true, true
}

// fastLens are the body lengths of the serial types of one byte.
var fastLens = func() (l [128]uint8) {
	for t := range l {
		l[t] = uint8(serialLen(uint64(t)))
	}
	return l
}()

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
