package nsys

import (
	"database/sql"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/stepstat/stepstat/nsys/sqlitefile"
)

// scan runs query, whose columns are all integers (NULLs coalesced in SQL), and calls fn
// with each row's values, then one more: the mask of the columns that held no INTEGER
// (bit c for column c: NULL, text, blob or real, read as 0 or a made-up number). It is the
// one place rows cross from SQLite into Go.
func (r *reader) scan(table, query string, ncol int, fn func(v []int64)) error {
	return r.scanPart(r.newProgress(table, 1), query, ncol, fn)
}

// A tableProgress reports the rows read of one table, summed over the parts of it that
// are read at once.
type tableProgress struct {
	table string
	fn    func(table string, done, total int64)
	total int64
	mu    sync.Mutex
	done  int64
	parts int // parts still being read
}

func (r *reader) newProgress(table string, parts int) *tableProgress {
	total := r.rowCount(table)
	if total < 0 && r.opt.Progress != nil {
		total = int64(r.maxRowid(table)) // an upper bound, known at once
	}
	return &tableProgress{table: table, fn: r.opt.Progress, total: total, parts: parts}
}

// add counts n more rows read; last says a part is done. The table's last call says it
// is done: done == total.
func (p *tableProgress) add(n int64, last bool) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if last {
		if p.parts--; p.parts == 0 {
			p.total = p.done
		}
	}
	p.fn(p.table, p.done, p.total)
}

// scanPart runs a query over the table of p (all of it, or a rowid range of it).
func (r *reader) scanPart(p *tableProgress, query string, ncol int, fn func(v []int64)) error {
	var n int64 // rows not yet reported
	defer func() { p.add(n, true) }()
	rows, err := r.db.QueryContext(r.ctx, query)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p.table, err)
	}
	defer rows.Close()
	v := make([]int64, ncol+1)
	raw := make([]any, ncol)
	dest := make([]any, ncol)
	for i := range raw {
		dest[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("reading %s: %w", p.table, err)
		}
		v[ncol] = 0
		for i, x := range raw {
			iv, ok := x.(int64)
			if f, isF := x.(float64); isF {
				iv, ok = sqlitefile.WholeFloat(f) // as the direct reader reads a REAL
			}
			if !ok && i < 63 {
				v[ncol] |= 1 << i
			}
			v[i] = iv
		}
		fn(v)
		if n++; n == 1<<16 {
			p.add(n, false)
			n = 0
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", p.table, err)
	}
	return nil
}

// A part is a range [lo, hi) of a table's rowids, read on its own while other parts are.
// The zero part is the whole table.
// A part read by the direct reader is also a run of its leaves, [la, lb).
type part struct {
	lo, hi int64
	la, lb int
}

// whole reports whether the part is the whole table, its rows in a slice of their own.
func (p part) whole() bool { return p.lo == 0 && p.hi == 0 }

func (p part) where() string {
	if p.whole() {
		return ""
	}
	return fmt.Sprintf(" WHERE rowid >= %d AND rowid < %d", p.lo, p.hi)
}

// and is where for a query that has a WHERE clause already.
func (p part) and() string {
	if p.whole() {
		return ""
	}
	return fmt.Sprintf(" AND rowid >= %d AND rowid < %d", p.lo, p.hi)
}

// A partOut is the rows one part of a table kept, in the slots of the table's array
// from off on (rows of rowid id go from slot id-lo of the first part), with the count of
// the rows it dropped.
type partOut[T any] struct {
	rows []T
	off  int
	drop dropCounter
}

// begin points the part at its slots of all (p: the part, first: the table's first).
func (o *partOut[T]) begin(all []T, p, first part) {
	if p.whole() {
		o.rows = all[:0] // the whole table: grows past the bound if it must
		return
	}
	o.off = int(p.lo - first.lo)
	o.rows = all[o.off:o.off:int(p.hi-first.lo)]
}

// joinParts puts the parts' rows together, in table order, at the start of all: in place
// when no part dropped a row, else moved down, and the slots emptied are given back at
// once, so that memory peaks near the rows kept, not twice that.
//
// A part that held more rows than its slots (SQLite's reads of rowid ranges of a damaged
// table can return rows outside the range) grew a slice of its own: then the parts are
// joined into a new slice, since moving rows down within all would overwrite the rows of
// the parts after it.
func joinParts[T any](t *Trace, all []T, parts []*partOut[T]) ([]T, dropCounter) {
	var drop dropCounter
	if len(parts) > 1 {
		n, outside := 0, false
		for _, d := range parts {
			n += len(d.rows)
			outside = outside || len(d.rows) > 0 && (d.off >= len(all) || &d.rows[0] != &all[d.off])
		}
		if outside {
			out := make([]T, 0, n)
			for _, d := range parts {
				out = append(out, d.rows...)
				drop.add(d.drop)
			}
			return out, drop
		}
	}
	out := all[:0]
	for _, d := range parts {
		switch {
		case len(parts) == 1:
			out = d.rows // the whole table, grown past all if it had to
		case len(d.rows) > 0 && len(out) < cap(out) && &out[:len(out)+1][len(out)] == &d.rows[0]:
			out = out[:len(out)+len(d.rows)] // already in place: no row before it was dropped
		default:
			out = append(out, d.rows...) // moves the part's rows down, within all
			releaseSlots(t, all[max(d.off, len(out)):d.off+len(d.rows)])
		}
		drop.add(d.drop)
	}
	return out, drop
}

// A tablePart is what one part of a partitioned read keeps: its rows (partOut) and its
// own numbering of what they refer to, which the finish renumbers for the whole table.
type tablePart[T any] interface {
	out() *partOut[T]
}

func (o *partOut[T]) out() *partOut[T] { return o }

// readParts plans the read of a large table in rowid parts (see parts), each a task on a
// lane: query(p) is stepped through scan's function for the part's state d (P), which
// keeps the rows in d's slots of one array. The job's finish joins the parts' rows in
// table order, warns of the rows dropped (what: "kernel"), and hands the rows and the
// parts to finish.
func readParts[T any, P any, PP interface {
	*P
	tablePart[T]
}](r *reader, q *tableQuery, what string,
	scan func(l *reader, d PP) func(v []int64), finish func(r *reader, rows []T, parts []P) error) *job {
	table := q.table
	dt, err := r.direct(q)
	if err != nil {
		return &job{tasks: []func(*reader) error{func(*reader) error { return err }}}
	}
	var ps []part
	var slots int
	if dt != nil {
		partRows := r.opt.partRows
		if partRows == 0 {
			partRows = directPartRows
			if q.in != "" {
				// A filtered table keeps a part's rows at the start of its slots: each
				// part leaves up to a page touched past them until the join.
				partRows = defaultPartRows
			}
			// At least four parts a lane, so that many lanes share a table evenly.
			if first, last, ok, err := dt.table.RowidBounds(); err == nil && ok {
				lanes := int64(max(1, runtime.GOMAXPROCS(0)))
				partRows = int(max(1<<18, min(int64(partRows), (last-first+1)/(4*lanes))))
			}
		}
		if ps, slots, err = dt.parts(r, partRows); err != nil {
			return &job{tasks: []func(*reader) error{func(*reader) error { return err }}}
		}
	} else {
		ps, slots = r.parts(table)
	}
	prog := r.newProgress(table, len(ps))
	// Each part fills its own slots of one slice: rows of rowid id go from slot id-lo on,
	// so no part waits for another and the rows need no copy when none was dropped.
	all := bigSlice[T](r.t, slots) // zeroed memory that no row lands in is never touched
	states := make([]P, len(ps))
	j := &job{}
	for i, p := range ps {
		j.tasks = append(j.tasks, func(l *reader) error {
			d := PP(&states[i])
			d.out().begin(all, p, ps[0])
			if dt != nil {
				if err := dt.scan(l.ctx, p, prog, rows(scan(l, d))); err != nil {
					return fmt.Errorf("reading %s: %w", table, err)
				}
				return nil
			}
			return l.scanPart(prog, q.sql(l, p), len(q.cols), scan(l, d))
		})
	}
	j.finish = func(r *reader) error {
		outs := make([]*partOut[T], len(states))
		for i := range states {
			outs[i] = PP(&states[i]).out()
		}
		rows, drop := joinParts(r.t, all, outs)
		drop.warn(r, what, table, len(rows))
		return finish(r, rows, states)
	}
	return j
}

// renumber replaces the part-local id of each row (id) with a global one: global(d, local)
// gives it, called once per local id a part's rows use, in the order the rows first use
// them. rows are the parts' rows joined in part order; n(d) is the size of part d's local
// table. A part numbers its local ids in the order its rows first use them (each is made
// for the row that needs it), so the global ids are given part by part, local id by local
// id, and the rows rewritten, part by part at once.
func renumber[T any, P any, PP interface {
	*P
	tablePart[T]
}, ID ~uint32](rows []T, parts []P, id func(*T) *ID, n func(PP) int, global func(PP, ID) ID) {
	remaps := make([][]ID, len(parts))
	for i := range parts {
		d := PP(&parts[i])
		remap := make([]ID, n(d))
		for k := range remap {
			remap[k] = global(d, ID(k))
		}
		remaps[i] = remap
	}
	var g errgroup.Group
	g.SetLimit(max(1, runtime.GOMAXPROCS(0)))
	at := 0
	for i := range parts {
		part := rows[at : at+len(PP(&parts[i]).out().rows)]
		at += len(part)
		remap := remaps[i]
		g.Go(func() error {
			for k := range part {
				p := id(&part[k])
				*p = remap[*p]
			}
			return nil
		})
	}
	g.Wait()
}

// defaultPartRows is about the number of rows of a part: small enough that the two lanes
// finish close together, large enough that each part's query and seek cost nothing.
const defaultPartRows = 1 << 21

// directPartRows is the same for the direct reader's unfiltered tables, whose parts cost
// nothing to start: smaller, so that many lanes share a table evenly.
const directPartRows = 1 << 19

// parts splits table into rowid ranges of about defaultPartRows rows (Options.partRows),
// to be read concurrently, and returns the number of slots they index (hi-lo of the
// whole): a part's rows can be stored at their rowid's offset without knowing how many
// rows the other parts hold. It returns the whole table as one part, and an upper bound of
// its row count, when the table is small, or its rowids
// are too sparse to index.
func (r *reader) parts(table string) ([]part, int) {
	partRows := r.opt.partRows
	if partRows == 0 {
		partRows = defaultPartRows
	}
	whole := []part{{}}
	bound := r.maxRowid(table)
	if bound < 2*partRows {
		return whole, bound
	}
	var lo, hi sql.NullInt64 // one query each: SQLite finds a lone min or max in O(log n)
	if r.db.QueryRowContext(r.ctx, `SELECT min(rowid) FROM "`+table+`"`).Scan(&lo) != nil ||
		r.db.QueryRowContext(r.ctx, `SELECT max(rowid) FROM "`+table+`"`).Scan(&hi) != nil ||
		!lo.Valid || !hi.Valid || lo.Int64 < 0 {
		return whole, bound
	}
	span := hi.Int64 + 1 - lo.Int64
	// A row takes more than 16 bytes of the file: more slots than that means rowids with
	// gaps, and slots that would cost memory for nothing.
	if span > r.schema.size/16 || span > 1<<31 {
		return whole, bound
	}
	// Rowids with gaps between the rows of a small table in a large file: slots that would
	// cost a page of memory each for one row (a huge page in mapped arrays). Counting is a
	// walk of the table's B-tree, for tables of parts only.
	var rows int64
	if r.db.QueryRowContext(r.ctx, `SELECT count(*) FROM "`+table+`"`).Scan(&rows) != nil || span > 2*rows+int64(partRows) {
		return whole, int(min(int64(bound), rows))
	}
	n := int((span + int64(partRows) - 1) / int64(partRows))
	ps := make([]part, n)
	for i := range ps {
		ps[i] = part{lo: lo.Int64 + span*int64(i)/int64(n), hi: lo.Int64 + span*int64(i+1)/int64(n)}
	}
	return ps, int(span)
}

// maxRowid returns an upper bound of a table's row count (its largest rowid), cheap to ask,
// used to size slices once instead of growing them.
// A row takes more than 8 bytes of the file, so a file of n bytes holds fewer than n/8
// rows whatever its rowids say: one row at rowid 3e9 must not size an array of 3e9.
func (r *reader) maxRowid(table string) int {
	var n sql.NullInt64
	if err := r.db.QueryRowContext(r.ctx, `SELECT max(rowid) FROM "`+table+`"`).Scan(&n); err != nil || !n.Valid {
		return 0
	}
	return int(max(0, min(n.Int64, r.schema.size/8, 1<<31)))
}
