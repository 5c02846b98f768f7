package nsys

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/stepstat/stepstat/nsys/sqlitefile"
)

// The direct reader: the large activity tables are read by walking their B-trees in the
// file (package sqlitefile) instead of stepping SQLite through them, in parallel over the
// leaf pages. It yields exactly the rows SQLite would for the same query (tableQuery,
// query.go): the same values, the same mask of columns that held no INTEGER, in rowid
// order, so that every table reader's row checks run unchanged on either path. What it
// does not handle it leaves to SQLite (a table at plan time, the whole read when met
// while reading), and says why in Trace.Reads.

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
	name  string
	table *sqlitefile.Table
	cols  sqlitefile.Columns
}

// planDirect plans the direct read of q, or says why it reads through SQLite; damage
// found in the table's B-tree is a *tableDamage error instead (damage.go).
func (r *reader) planDirect(q *tableQuery) (*directTable, string, error) {
	if r.opt.directFailed != "" {
		return nil, "the direct read stopped (" + r.opt.directFailed + ")", nil
	}
	if r.opt.SQLiteOnly {
		return nil, "asked for (Options.SQLiteOnly)", nil
	}
	if r.shared.file == nil {
		return nil, r.shared.fileWhy, nil
	}
	ti, ok := r.schema.infos[q.table]
	if !ok || ti.root <= 0 || ti.root > int64(r.shared.file.Pages()) {
		return nil, "not a table with a B-tree of its own", nil
	}
	if strings.Contains(strings.ToUpper(ti.sql), "WITHOUT ROWID") {
		return nil, "a WITHOUT ROWID table", nil
	}
	if ti.generated {
		return nil, "it has generated columns", nil
	}
	c := sqlitefile.Columns{Filter: -1, Kept: q.kept, Text: -1, NullsOnly: q.nullsOnly}
	nfield := 0
	if q.text != "" {
		ci, has := ti.cols[strings.ToLower(q.text)]
		if !has || ci.alias || ci.dflt || ci.special {
			return nil, "text column " + q.text + " missing, a rowid alias, with a default or generated", nil
		}
		c.Text = ci.field
		nfield = ci.field + 1
	}
	for i, col := range q.cols {
		ci, has := ti.cols[strings.ToLower(col.name)]
		field, def, null := -1, col.def, !col.opt
		switch {
		case col.name == "" || (col.opt && !has):
		case !has:
			return nil, "no column " + col.name, nil
		case ci.alias || ci.dflt || ci.special:
			return nil, "column " + col.name + " is a rowid alias, has a default or is generated", nil
		default:
			field = ci.field
			nfield = max(nfield, field+1)
		}
		c.Fields, c.Defs, c.Nulls = append(c.Fields, field), append(c.Defs, def), append(c.Nulls, null)
		if q.in != "" && col.name == q.in {
			if field < 0 {
				return nil, "filter column " + q.in + " not in the records", nil
			}
			c.Filter = i
		}
	}
	if q.in != "" && c.Filter < 0 {
		return nil, "filter column " + q.in + " not read", nil
	}
	if nfield > sqlitefile.MaxFields || len(c.Fields) > sqlitefile.MaxColumns {
		return nil, "more than 62 columns", nil
	}
	t, err := r.shared.file.Table(uint32(ti.root))
	if err == nil && testDamage != nil {
		err = testDamage(q.table)
	}
	if err != nil {
		if dmg := damageIn(q.table, err); dmg != nil {
			return nil, "", dmg
		}
		if errors.Is(err, sqlitefile.ErrChanged) { // SQLite would read the changed file
			return nil, "", err
		}
		return nil, err.Error(), nil
	}
	return &directTable{name: q.table, table: t, cols: c}, "", nil
}

// scan reads the leaves of part p and calls fn with each row kept: the output columns'
// values, then the mask of those that held no INTEGER (as reader.scan), and the text
// column's bytes (valid during the call).
func (d *directTable) scan(ctx context.Context, p part, prog *tableProgress, fn func(v []int64, text []byte)) error {
	err := d.table.Scan(&d.cols, p.la, p.lb, func(n int64, last bool) error {
		if !last {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		prog.add(n, last)
		return nil
	}, fn)
	if dmg := damageIn(d.name, err); dmg != nil {
		return dmg
	}
	return err
}

// rows turns a row function of reader.scan into one of directTable.scan.
func rows(fn func(v []int64)) func(v []int64, text []byte) {
	return func(v []int64, _ []byte) { fn(v) }
}

// parts splits the table into runs of leaves of about partRows rowids each, as parts
// that index the slots of one array by rowid (see readParts), and returns the slots. A
// table whose rowids are too sparse to index, or empty, is one part that grows its own
// slice.
func (d *directTable) parts(r *reader, partRows int) ([]part, int, error) {
	leaves := d.table.Leaves
	whole := []part{{la: 0, lb: len(leaves)}}
	first, last, ok, err := d.table.RowidBounds()
	if dmg := damageIn(d.name, err); dmg != nil {
		return nil, 0, dmg
	}
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return whole, 0, nil
	}
	span := last + 1 - first
	// A row takes more than 8 bytes of a leaf (its cell pointer, lengths, rowid and a
	// byte of header per column): more slots than the table's leaves can hold rows means
	// sparse rowids, whose slots would each cost a page of memory (a huge page in mapped
	// arrays) for one row; the file's size alone bounds nothing when other tables fill it.
	rows := int64(len(leaves))*int64(r.shared.file.Usable())/8 + 1
	if first < 1 || span > r.schema.size/16+1 || span > rows || span > 1<<31 {
		return whole, int(min(int64(len(leaves))*int64(r.shared.file.Usable()/16), 1<<24)), nil
	}
	var ps []part
	lo, la := first, 0
	for i, l := range leaves {
		end := i == len(leaves)-1
		if !end && l.Hi+1-lo < int64(partRows) {
			continue
		}
		hi := last + 1
		if !end {
			hi = l.Hi + 1
		}
		if hi < lo || hi > last+1 {
			return nil, 0, damageIn(d.name, sqlitefile.Damagedf(l.Page, "page %d: keys out of the table's rowids", l.Page))
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
		r.shared.reads.mu.Lock()
		if r.shared.reads.lost == nil {
			r.shared.reads.lost = map[string]string{}
		}
		r.shared.reads.lost[q.table+"."+c.name] = msg
		r.shared.reads.mu.Unlock()
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
// when the table is read through SQLite, and a *tableDamage error for damage found in
// its B-tree.
func (r *reader) direct(q *tableQuery) (*directTable, error) {
	r.noteLost(q)
	d, why, err := r.planDirect(q)
	if err != nil {
		return nil, err
	}
	r.shared.reads.add(TableRead{Table: q.table, Direct: d != nil, Why: why})
	return d, nil
}

// scanTable reads the rows of q (all of the table) and calls fn with each, as scan.
func (r *reader) scanTable(q *tableQuery, fn func(v []int64)) error {
	prog := r.newProgress(q.table, 1)
	d, err := r.direct(q)
	if err != nil {
		return err
	}
	if d != nil {
		if err := d.scan(r.ctx, part{lb: len(d.table.Leaves)}, prog, rows(fn)); err != nil {
			return fmt.Errorf("reading %s: %w", q.table, err)
		}
		return nil
	}
	return r.scanPart(prog, q.sql(r, part{}), len(q.cols), fn)
}
