package nsys

import (
	"errors"
	"fmt"
	"slices"
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
	// text, when set, is a TEXT column also read (COALESCE(text, '')): given to the row
	// function through directTable.text. Only for tables read in one part (scanTable).
	text string
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
	order  []uint8 // the output columns in decoding order: the filter first
	leaves []leafRef
	// textField is the record field of tableQuery.text (-1: none); text is its value in
	// the row being read: NULL reads as empty.
	textField int
	text      []byte
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
	d := &directTable{file: r.file, table: q.table, in: -1, kept: q.kept, textField: -1}
	if q.text != "" {
		ci, has := ti.cols[strings.ToLower(q.text)]
		if !has || ci.alias || ci.dflt || ci.special {
			return nil, "text column " + q.text + " missing, a rowid alias, with a default or generated"
		}
		d.textField = ci.field
		d.nfield = ci.field + 1
	}
	for i, c := range q.cols {
		ci, has := ti.cols[strings.ToLower(c.name)]
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
	if d.nfield > 64 || len(d.fields) > 62 {
		return nil, "more than 62 columns"
	}
	if d.in >= 0 {
		d.order = append(d.order, uint8(d.in))
	}
	for c := range d.fields {
		if c != d.in {
			d.order = append(d.order, uint8(c))
		}
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

// readLog collects how the tables were read, from the lanes.
type readLog struct {
	mu    sync.Mutex
	reads []TableRead
	lost  map[string]string // "table.column" of optional columns absent: what is lost
}

// lostWarnings returns a warning per optional column a table lacks, naming what is lost,
// sorted.
func (l *readLog) lostWarnings() []error {
	keys := make([]string, 0, len(l.lost))
	for k := range l.lost {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]error, len(keys))
	for i, k := range keys {
		out[i] = errors.New(l.lost[k])
	}
	return out
}

// lostWhat says what is lost when a table lacks an optional column ("table.column", or
// "*.column" for every table), for the warning.
var lostWhat = map[string]string{
	kernelTable + ".correlationId":  "kernels are not linked to the host calls that launched them: steps from NVTX ranges and host syncs, launches per step and what the host did in idle gaps are lost",
	runtimeTable + ".correlationId": "host calls are not linked to the GPU work they launched: steps from NVTX ranges and host syncs, launches per step and what the host did in idle gaps are lost",
	runtimeTable + ".globalTid":     "host calls have no thread: NVTX ranges cannot be mapped to the GPU work they launched",
	"*.correlationId":               "its rows are not linked to the host calls that made them",
	"*.globalPid":                   "every row is taken as one process's (correlation ids are per process)",
	"*.globalTid":                   "every range is taken as one thread's",
	"*.bytes":                       "sizes read as 0 (copies' sizes are evidence of a step's phase)",
	"*.copyKind":                    "copy directions are unknown",
	"*.textId":                      "ranges named by registered strings have no name",
	"*.domainId":                    "ranges of every NVTX domain are taken as the default domain's",
}

// noteLost records the optional columns of q that its table lacks.
func (r *reader) noteLost(q *tableQuery) {
	for _, c := range q.cols {
		if c.name == "" || !c.opt || !r.has(q.table) || r.hasCol(q.table, c.name) {
			continue
		}
		what, ok := lostWhat[q.table+"."+c.name]
		if !ok {
			what = lostWhat["*."+c.name]
		}
		msg := fmt.Sprintf("%s has no column %s, read as %d", q.table, c.name, c.def)
		if what != "" {
			msg += ": " + what
		}
		r.reads.mu.Lock()
		if r.reads.lost == nil {
			r.reads.lost = map[string]string{}
		}
		r.reads.lost[q.table+"."+c.name] = msg
		r.reads.mu.Unlock()
	}
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
	r.noteLost(q)
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
