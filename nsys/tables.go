package nsys

import (
	"cmp"
	"container/heap"
	"database/sql"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
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
	if r.batch != nil {
		err := r.batch.scan(query, ncol, func(rows []int64, k int) error {
			w := ncol + 1
			for i := 0; i < k; i++ {
				fn(rows[i*w : (i+1)*w : (i+1)*w])
			}
			if n += int64(k); n >= 1<<20 {
				if err := r.ctx.Err(); err != nil {
					return err
				}
				p.add(n, false)
				n = 0
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading %s: %w", p.table, err)
		}
		return nil
	}
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
func joinParts[T any](t *Trace, all []T, parts []*partOut[T]) ([]T, dropCounter) {
	var drop dropCounter
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
	dt := r.direct(q)
	var ps []part
	var slots int
	if dt != nil {
		partRows := r.opt.partRows
		if partRows == 0 {
			partRows = directPartRows
		}
		var err error
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
				if err := dt.scan(l.ctx, p, prog, scan(l, d)); err != nil {
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
// gives it, called once per local id a part's rows use, in row order. rows are the parts'
// rows joined in part order; n(d) is the size of part d's local table.
func renumber[T any, P any, PP interface {
	*P
	tablePart[T]
}, ID ~uint32](rows []T, parts []P, id func(*T) *ID, n func(PP) int, global func(PP, ID) ID) {
	at := 0
	for i := range parts {
		d := PP(&parts[i])
		remap := make([]ID, n(d))
		for k := range remap {
			remap[k] = ^ID(0)
		}
		for k := at; k < at+len(d.out().rows); k++ {
			p := id(&rows[k])
			if remap[*p] == ^ID(0) {
				remap[*p] = global(d, *p)
			}
			*p = remap[*p]
		}
		at += len(d.out().rows)
	}
}

// defaultPartRows is about the number of rows of a part: small enough that the two lanes
// finish close together, large enough that each part's query and seek cost nothing.
const defaultPartRows = 1 << 21

// directPartRows is the same for the direct reader, whose parts cost nothing to start:
// smaller, so that many lanes share a table evenly.
const directPartRows = 1 << 19

// parts splits table into rowid ranges of about defaultPartRows rows (Options.partRows),
// to be read concurrently, and returns the number of slots they index (hi-lo of the
// whole): a part's rows can be stored at their rowid's offset without knowing how many
// rows the other parts hold. It returns the whole table as one part, and an upper bound of
// its row count, when the batch reader is unavailable, the table is small, or its rowids
// are too sparse to index.
func (r *reader) parts(table string) ([]part, int) {
	partRows := r.opt.partRows
	if partRows == 0 {
		partRows = defaultPartRows
	}
	whole := []part{{}}
	bound := r.maxRowid(table)
	if r.batch == nil || bound < 2*partRows {
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
	if span > r.size/16 || span > 1<<31 {
		return whole, bound
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
	return int(max(0, min(n.Int64, r.size/8, 1<<31)))
}

// colOr returns col when table has it, else the SQL literal def.
func (r *reader) colOr(table, col, def string) string {
	if r.hasCol(table, col) {
		return "COALESCE(" + col + ", " + def + ")"
	}
	return def
}

func (r *reader) require(table string, cols ...string) error {
	for _, c := range cols {
		if !r.hasCol(table, c) {
			return fmt.Errorf("table %s has no column %s (not an nsys export this tool knows)", table, c)
		}
	}
	return nil
}

// A dropCounter counts the rows of one table that the reader drops, by reason. Every
// timestamp of every table goes through keep (NVTX rows through keepRange), so that a bad
// row is dropped, and counted in the table's one warning, instead of read as time 0 or as
// a kernel of centuries.
type dropCounter struct {
	zero, reversed, badDevice int
	badType                   int // start or end not an INTEGER: NULL, text, blob or real (1e300, inf)
	outside                   int // a timestamp beyond ±MaxTime
	unclosed                  int // NVTX: no end, though a later range of the same name follows on the thread
}

// MaxTime bounds the timestamps the reader accepts: 2^62 ns, 146 years either side of the
// session start. Larger values are no time a capture can hold (an end of 1e300 or inf
// would otherwise make a kernel of 292 years, and durations would wrap).
const MaxTime Time = 1 << 62

// keep checks a row's start and end; bad is the row's mask of non-INTEGER columns, whose
// bits 0 and 1 are start and end.
func (d *dropCounter) keep(start, end, bad int64) bool {
	switch {
	case bad&3 != 0:
		d.badType++
		return false
	case start == 0 || end == 0:
		// nsys counts from the session start: a zero is a missing value, not an instant.
		d.zero++
		return false
	case start < -int64(MaxTime) || start > int64(MaxTime) || end < -int64(MaxTime) || end > int64(MaxTime):
		d.outside++
		return false
	case end < start:
		d.reversed++
		return false
	}
	return true
}

// keepDevice drops rows whose device id does not fit DeviceID (no CUDA device has one),
// or is no integer (bit 2 of bad).
func (d *dropCounter) keepDevice(dev, bad int64) bool {
	if dev < 0 || dev > math.MaxInt16 || bad&4 != 0 {
		d.badDevice++
		return false
	}
	return true
}

func (d *dropCounter) add(o dropCounter) {
	d.zero += o.zero
	d.reversed += o.reversed
	d.badDevice += o.badDevice
	d.badType += o.badType
	d.outside += o.outside
	d.unclosed += o.unclosed
}

func (d *dropCounter) total() int {
	return d.zero + d.reversed + d.badDevice + d.badType + d.outside + d.unclosed
}

// warn gives the table's one warning: how many rows were dropped, of which table, and why.
func (d *dropCounter) warn(r *reader, what, table string, kept int) {
	dropped := d.total()
	if dropped == 0 {
		return
	}
	total := kept + dropped
	var why []string
	for _, c := range []struct {
		n    int
		text string
	}{
		{d.badType, "with a missing or non-integer timestamp"},
		{d.zero, "with zero timestamps"},
		{d.outside, "with a timestamp beyond ±2^62 ns"},
		{d.badDevice, "with a device id out of range"},
		{d.reversed, "ending before they start"},
		{d.unclosed, "never closed though a later range of the same name follows on the thread"},
	} {
		if c.n > 0 {
			why = append(why, fmt.Sprintf("%d %s", c.n, c.text))
		}
	}
	r.warnf("dropped %d of %d %s rows of %s (%.3g%%): %s", dropped, total, what, table,
		100*float64(dropped)/float64(total), strings.Join(why, ", "))
}

const kernelTable = "CUPTI_ACTIVITY_KIND_KERNEL"

// planKernels plans the kernel table's read: one task per part of the table (readParts),
// then finishKernels.
func (r *reader) planKernels() (*job, error) {
	if !r.has(kernelTable) {
		r.warnf("no %s table: the capture has no CUDA kernels (profile with -t cuda)", kernelTable)
		return nil, nil
	}
	r.t.HasKernelTable = true
	if err := r.require(kernelTable, "start", "end", "deviceId", "streamId"); err != nil {
		return nil, err
	}
	nameCol := "demangledName"
	if !r.hasCol(kernelTable, nameCol) {
		if !r.hasCol(kernelTable, "shortName") {
			return nil, fmt.Errorf("table %s has neither demangledName nor shortName", kernelTable)
		}
		nameCol = "shortName"
		r.warnf("%s has no demangledName column; classifying short names", kernelTable)
	}
	q := &tableQuery{table: kernelTable, cols: []tableCol{needCol("start"), needCol("end"), needCol("deviceId"),
		needCol("streamId"), optCol("correlationId", 0), needCol(nameCol), optCol("globalPid", 0)}}
	// Kernel.Site indexes the part's own sites until finishKernels numbers them.
	scan := func(_ *reader, d *kernelPart) func(v []int64) {
		return func(v []int64) {
			if !d.drop.keep(v[0], v[1], v[7]) || !d.drop.keepDevice(v[2], v[7]) {
				return
			}
			site := d.site(rawSite{sid: v[5], stream: StreamID(v[3]), device: DeviceID(v[2]), pid: v[6]})
			d.rows = append(d.rows, Kernel{Start: Time(v[0]), End: Time(v[1]), Correlation: uint32(v[4]), Site: site})
		}
	}
	return readParts(r, q, "kernel", scan, finishKernels), nil
}

// finishKernels numbers the names and the sites of the parts' kernels, names the kernels
// and sorts them.
func finishKernels(r *reader, ks []Kernel, kp []kernelPart) error {
	// Number the names and the sites in order of first appearance, whichever part read
	// them. String ids are small, dense integers: a slice indexed by id (0 = not seen yet)
	// is several times faster than a map; a map takes the rare big ids.
	var dense []NameID
	sparse := map[int64]NameID{}
	var order []int64
	nameOf := func(sid int64) NameID {
		var id NameID
		if sid >= 0 && sid < 1<<22 {
			if sid >= int64(len(dense)) {
				dense = append(dense, make([]NameID, int(sid)+1-len(dense)+len(dense)/2)...)
			}
			if id = dense[sid]; id == 0 {
				order = append(order, sid)
				id = NameID(len(order))
				dense[sid] = id
			}
			return id - 1
		}
		var ok bool
		if id, ok = sparse[sid]; !ok {
			id = NameID(len(order))
			sparse[sid] = id
			order = append(order, sid)
		}
		return id
	}
	sites := map[Site]SiteID{}
	renumber(ks, kp, func(k *Kernel) *SiteID { return &k.Site },
		func(d *kernelPart) int { return len(d.sites) },
		func(d *kernelPart, local SiteID) SiteID {
			rs := &d.sites[local]
			st := Site{Name: nameOf(rs.sid), Stream: rs.stream, Device: rs.device, Proc: r.proc(rs.pid)}
			id, ok := sites[st]
			if !ok {
				id = SiteID(len(r.t.Sites))
				sites[st] = id
				r.t.Sites = append(r.t.Sites, st)
			}
			return id
		})
	strs, err := r.loadStrings(kernelTable, order)
	if err != nil {
		return err
	}
	r.t.Names = make([]string, len(order))
	for i, id := range order {
		r.t.Names[i] = strs[id]
	}
	sortKernels(ks, r.t.Sites)
	r.t.Kernels = ks
	return nil
}

// A kernelPart is the rows of one part of the kernel table, with the sites they name.
type kernelPart struct {
	partOut[Kernel]
	sites []rawSite // Kernel.Site indexes this until finish
	// head holds, by string id, 1 + the first site of that name (0: none yet); rawSite.next
	// chains the others. A name runs at one to a few sites, so this is a short walk.
	head []int32
	wide map[rawSite]SiteID // sites of string ids too big for head, or past a chain of maxChain
}

// A rawSite is a site as the table gives it: string id and globalPid not numbered yet.
type rawSite struct {
	sid    int64
	pid    int64
	stream StreamID
	device DeviceID
	next   int32 // 1 + the next site of the same name, 0 = none
}

// site returns the part's index of s, adding it when new.
func (d *kernelPart) site(s rawSite) SiteID {
	if s.sid >= 0 && s.sid < 1<<22 {
		if s.sid >= int64(len(d.head)) {
			d.head = append(d.head, make([]int32, int(s.sid)+1-len(d.head)+len(d.head)/2)...)
		}
		p := &d.head[s.sid]
		n := 0
		for i := *p; i != 0; i = d.sites[i-1].next {
			x := &d.sites[i-1]
			if x.stream == s.stream && x.device == s.device && x.pid == s.pid {
				return SiteID(i - 1)
			}
			p = &x.next
			n++
		}
		if n < maxChain {
			d.sites = append(d.sites, s)
			*p = int32(len(d.sites))
			return SiteID(len(d.sites) - 1)
		}
		// A name at more sites than a short walk covers (not seen in real traces, but a
		// file could hold one): the rest go through the map, so the read stays linear.
	}
	if d.wide == nil {
		d.wide = map[rawSite]SiteID{}
	}
	id, ok := d.wide[s]
	if !ok {
		id = SiteID(len(d.sites))
		d.wide[s] = id
		d.sites = append(d.sites, s)
	}
	return id
}

// maxChain is the longest walk of a chain of sites or callers before a map takes over.
const maxChain = 8

// kernelOrder orders kernels by start, then device, stream, end, process, correlation
// and name: a total order, so the unstable sort gives the same result every time.
func kernelOrder(sites []Site) func(a, b Kernel) int {
	return func(a, b Kernel) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		sa, sb := &sites[a.Site], &sites[b.Site]
		if c := cmp.Compare(sa.Device, sb.Device); c != 0 {
			return c
		}
		if c := cmp.Compare(sa.Stream, sb.Stream); c != 0 {
			return c
		}
		if c := cmp.Compare(a.End, b.End); c != 0 {
			return c
		}
		if c := cmp.Compare(sa.Proc, sb.Proc); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Correlation, b.Correlation); c != 0 {
			return c
		}
		return cmp.Compare(sa.Name, sb.Name)
	}
}

func sortKernels(ks []Kernel, sites []Site) { sortUnlessSorted(ks, kernelOrder(sites)) }

// SortKernels puts t.Kernels in the order Open gives them (start, then device, stream,
// end, process, correlation and name), for traces built by hand with AddKernel.
func (t *Trace) SortKernels() { sortKernels(t.Kernels, t.Sites) }

// sortUnlessSorted sorts s by cmp; tables come sorted most of the time, and checking costs
// a fraction of sorting.
func sortUnlessSorted[T any](s []T, cmp func(a, b T) int) {
	if !slices.IsSortedFunc(s, cmp) {
		slices.SortFunc(s, cmp)
	}
}

func (r *reader) readMemops() error {
	for _, tb := range []string{"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} {
		if !r.has(tb) {
			continue
		}
		if err := r.require(tb, "start", "end", "deviceId", "streamId"); err != nil {
			return err
		}
		kind := optCol("copyKind", 0)
		if tb == "CUPTI_ACTIVITY_KIND_MEMSET" {
			kind = constCol(int64(Memset))
		}
		q := &tableQuery{table: tb, cols: []tableCol{needCol("start"), needCol("end"), needCol("deviceId"),
			needCol("streamId"), optCol("correlationId", 0), optCol("bytes", 0), kind, optCol("globalPid", 0)}}
		var drop dropCounter
		before := len(r.t.Memops)
		r.t.Memops = slices.Grow(r.t.Memops, r.maxRowid(tb))
		err := r.scanTable(q, func(v []int64) {
			if !drop.keep(v[0], v[1], v[8]) || !drop.keepDevice(v[2], v[8]) {
				return
			}
			r.t.Memops = append(r.t.Memops, Memop{Start: Time(v[0]), End: Time(v[1]), Device: DeviceID(v[2]),
				Stream: StreamID(v[3]), Correlation: uint32(v[4]), Bytes: v[5], Kind: MemKind(v[6]), Proc: r.proc(v[7])})
		})
		if err != nil {
			return err
		}
		drop.warn(r, strings.ToLower(strings.TrimPrefix(tb, "CUPTI_ACTIVITY_KIND_")), tb, len(r.t.Memops)-before)
	}
	sortUnlessSorted(r.t.Memops, memopLess)
	return nil
}

const graphTable = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"

func (r *reader) readGraphs() error {
	if !r.has(graphTable) {
		return nil
	}
	if err := r.require(graphTable, "start", "end", "deviceId", "streamId"); err != nil {
		return err
	}
	q := &tableQuery{table: graphTable, cols: []tableCol{needCol("start"), needCol("end"), needCol("deviceId"),
		needCol("streamId"), optCol("correlationId", 0), optCol("globalPid", 0)}}
	var drop dropCounter
	err := r.scanTable(q, func(v []int64) {
		if !drop.keep(v[0], v[1], v[6]) || !drop.keepDevice(v[2], v[6]) {
			return
		}
		r.t.Graphs = append(r.t.Graphs, GraphExec{Start: Time(v[0]), End: Time(v[1]), Device: DeviceID(v[2]),
			Stream: StreamID(v[3]), Correlation: uint32(v[4]), Proc: r.proc(v[5])})
	})
	if err != nil {
		return err
	}
	drop.warn(r, "graph trace", graphTable, len(r.t.Graphs))
	slices.SortStableFunc(r.t.Graphs, func(a, b GraphExec) int { return cmp.Compare(a.Start, b.Start) })
	if len(r.t.Graphs) > 0 {
		r.warnf("%d CUDA graph executions were traced at graph level (nsys' default --cuda-graph-trace=graph): the kernels inside them have no rows of their own, so their time is one opaque block per replay (untraced_graph); re-capture with nsys profile --cuda-graph-trace=node to see the kernels", len(r.t.Graphs))
	}
	return nil
}

var (
	apiSuffix   = regexp.MustCompile(`(_v\d+|_ptsz|_ptds)+$`)
	apiPatterns = []struct {
		re   *regexp.Regexp
		kind APIKind
	}{
		{regexp.MustCompile(`^cu(da)?GraphLaunch`), APIGraphLaunch},
		{regexp.MustCompile(`^cu(da)?LaunchHostFunc`), APIOther},
		{regexp.MustCompile(`^cu(da)?Launch`), APILaunch},
		{regexp.MustCompile(`^cu(da)?(Stream|Device|Event|Ctx|Thread)Synchronize`), APISync},
		{regexp.MustCompile(`^cu(da)?Memcpy`), APIMemcpy},
		{regexp.MustCompile(`^cu(da)?Memset`), APIMemset},
	}
)

// APIKindOf returns the kind of a CUDA runtime or driver API function name.
func APIKindOf(name string) APIKind {
	name = apiSuffix.ReplaceAllString(name, "")
	for _, p := range apiPatterns {
		if p.re.MatchString(name) {
			return p.kind
		}
	}
	return APIOther
}

const runtimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME"

// apiPlan is the runtime-table scan, planned before the lanes start: which names to keep.
type apiPlan struct {
	names  []apiName // by StringIds id
	idList string    // the kept ids, for SQL
}

type apiName struct {
	idx  uint8
	kind APIKind
	ok   bool
}

// planAPI finds the API names the analysis uses (launch, graph launch, synchronize,
// memcpy, memset), so the runtime table's other rows are skipped as cheaply as possible.
func (r *reader) planAPI() error {
	if !r.has(runtimeTable) {
		return nil
	}
	if err := r.require(runtimeTable, "start", "end", "nameId"); err != nil {
		return err
	}
	rows, err := r.db.QueryContext(r.ctx, `SELECT id, value FROM StringIds WHERE value GLOB 'cu*'`)
	if err != nil {
		return fmt.Errorf("reading StringIds: %w", err)
	}
	p := &apiPlan{}
	idxOf := map[string]uint8{}
	var ids []string
	for rows.Next() {
		var id int64
		var v string
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return fmt.Errorf("reading StringIds: %w", err)
		}
		k := APIKindOf(v)
		if k == APIOther {
			continue
		}
		if id < 0 || id >= 1<<24 {
			continue // not a StringIds id this reader can index; such calls are skipped
		}
		base := apiSuffix.ReplaceAllString(v, "")
		idx, ok := idxOf[base]
		if !ok {
			if len(r.t.APINames) == math.MaxUint8 {
				base = "other CUDA calls" // more distinct names than APICall.Name holds
			}
			if idx, ok = idxOf[base]; !ok {
				idx = uint8(len(r.t.APINames))
				idxOf[base] = idx
				r.t.APINames = append(r.t.APINames, base)
			}
		}
		if int(id) >= len(p.names) {
			p.names = append(p.names, make([]apiName, int(id)+1-len(p.names))...)
		}
		p.names[id] = apiName{idx, k, true}
		ids = append(ids, fmt.Sprint(id))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading StringIds: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	p.idList = strings.Join(ids, ",")
	r.api = p
	return nil
}

// planCalls plans the runtime table's read: its launch, synchronize, memcpy and memset
// calls into Trace.APICalls, in time order, in rowid parts like the kernel table.
func (r *reader) planCalls() (*job, error) {
	p := r.api
	if p == nil {
		return nil, nil
	}
	// Filtered in SQL: SQLite then decodes the other columns of kept rows only. Against
	// stepping every row out and filtering in C, the 60 M-row table of the 2-GPU eager
	// bench trace took 8.1-8.6 s instead of 8.8-10.3 s (three runs each, one lane).
	kept := make([]bool, len(p.names))
	for id, n := range p.names {
		kept[id] = n.ok
	}
	q := &tableQuery{table: runtimeTable, cols: []tableCol{needCol("start"), needCol("end"), optCol("globalTid", 0),
		optCol("correlationId", 0), needCol("nameId")}, in: "nameId", kept: kept}
	// A part keeps only the calls the analysis uses (about a third of the rows of eager
	// traces): joining the parts moves them down. APICall.Caller indexes the part's own
	// callers until finishCalls numbers them.
	scan := func(l *reader, d *callPart) func(v []int64) {
		return func(v []int64) {
			if !d.drop.keep(v[0], v[1], v[5]) {
				return
			}
			var ni apiName
			if v[4] >= 0 && v[4] < int64(len(p.names)) {
				ni = p.names[v[4]]
			}
			if !ni.ok {
				return
			}
			d.rows = append(d.rows, APICall{Start: Time(v[0]), End: Time(v[1]), Correlation: uint32(v[3]),
				Caller: d.caller(l, v[2], ni)})
		}
	}
	return readParts(r, q, "CUDA API", scan, finishCalls), nil
}

// finishCalls numbers the callers of the parts' calls and sorts the calls.
func finishCalls(r *reader, calls []APICall, cp []callPart) error {
	// Number the callers in order of first appearance, whichever part met them.
	ids := map[Caller]CallerID{}
	renumber(calls, cp, func(c *APICall) *CallerID { return &c.Caller },
		func(d *callPart) int { return len(d.callers) },
		func(d *callPart, local CallerID) CallerID {
			w := d.callers[local]
			id, ok := ids[w]
			if !ok {
				id = CallerID(len(r.t.Callers))
				ids[w] = id
				r.t.Callers = append(r.t.Callers, w)
			}
			return id
		})
	sortCalls(calls, r.t.Callers)
	r.t.APICalls = calls
	return nil
}

// A callPart is the kept calls of one part of the runtime table, with their callers.
type callPart struct {
	partOut[APICall]
	callers []Caller // APICall.Caller indexes this until finish
	// head[name] is 1 + the first caller of that function (0: none), next chains the
	// others: a function is called from one to a few threads.
	head [256]int32
	next []int32
	wide map[callerKey]CallerID // callers past a chain of maxChain
}

// caller returns the part's index of the caller (tid, function), adding it when new.
func (d *callPart) caller(l *reader, tid int64, ni apiName) CallerID {
	p := &d.head[ni.idx]
	n := 0
	for i := *p; i != 0; i = d.next[i-1] {
		if d.callers[i-1].Thread == tid {
			return CallerID(i - 1)
		}
		p = &d.next[i-1]
		n++
	}
	if n >= maxChain { // a function called from many threads: the rest through the map
		if d.wide == nil {
			d.wide = map[callerKey]CallerID{}
		}
		k := callerKey{tid, ni.idx}
		id, ok := d.wide[k]
		if !ok {
			id = CallerID(len(d.callers))
			d.wide[k] = id
			d.callers = append(d.callers, Caller{Thread: tid, Proc: l.proc(tid), Name: ni.idx, Kind: ni.kind})
			d.next = append(d.next, 0)
		}
		return id
	}
	d.callers = append(d.callers, Caller{Thread: tid, Proc: l.proc(tid), Name: ni.idx, Kind: ni.kind})
	d.next = append(d.next, 0)
	*p = int32(len(d.callers))
	return CallerID(len(d.callers) - 1)
}

type callerKey struct {
	tid  int64
	name uint8
}

// NVTX event types (ENUM_NSYS_EVENT_TYPE).
const (
	nvtxPushPop      = 59
	nvtxStartEnd     = 60
	nvtxDomainCreate = 75
)

const nvtxTable = "NVTX_EVENTS"

func (r *reader) readNVTX() error {
	if !r.has(nvtxTable) {
		return nil
	}
	if err := r.require(nvtxTable, "start", "eventType"); err != nil {
		return err
	}
	textCol := "''"
	if r.hasCol(nvtxTable, "text") {
		textCol = "COALESCE(text, '')"
	}
	// start and end come with their SQLite types: rows are held to the kernel rows' rules
	// (keepRange), and a NULL end (a range never closed) is told from a text or blob one.
	endCol, endTypeCol := "NULL", "'null'"
	if r.hasCol(nvtxTable, "end") {
		endCol, endTypeCol = "end", "typeof(end)"
	}
	q := fmt.Sprintf(`SELECT start, typeof(start), %s, %s, eventType, %s, %s, %s, %s FROM %s WHERE eventType IN (%d, %d, %d)`,
		endCol, endTypeCol, r.colOr(nvtxTable, "textId", "0"), r.colOr(nvtxTable, "globalTid", "0"),
		r.colOr(nvtxTable, "domainId", "0"), textCol, nvtxTable, nvtxPushPop, nvtxStartEnd, nvtxDomainCreate)
	rows, err := r.db.QueryContext(r.ctx, q)
	if err != nil {
		return fmt.Errorf("reading %s: %w", nvtxTable, err)
	}
	defer rows.Close()
	textIdx := map[string]uint32{}
	intern := func(s string) uint32 {
		if i, ok := textIdx[s]; ok {
			return i
		}
		i := uint32(len(r.t.RangeTexts))
		textIdx[s] = i
		r.t.RangeTexts = append(r.t.RangeTexts, s)
		return i
	}
	// Ranges named through textId are resolved after the scan; until then Text holds
	// ^idIndex with the high bit set.
	const pending = 1 << 31
	idIdx := map[int64]uint32{}
	var idOrder []int64
	type domainRow struct {
		id     uint32
		text   string
		textID int64
	}
	var domains []domainRow
	var typ, textID, tid, domain int64
	var start, end any
	var startType, endType, text string
	var n int64
	var drop dropCounter
	for rows.Next() {
		if err := rows.Scan(&start, &startType, &end, &endType, &typ, &textID, &tid, &domain, &text); err != nil {
			return fmt.Errorf("reading %s: %w", nvtxTable, err)
		}
		n++
		if typ == nvtxDomainCreate {
			domains = append(domains, domainRow{uint32(domain), text, textID})
			continue
		}
		s, e, ok := drop.keepRange(start, startType, end, endType)
		if !ok {
			continue
		}
		rg := Range{Start: s, End: e, Thread: tid, Domain: uint32(domain), Proc: r.proc(tid)}
		if text == "" && textID != 0 {
			i, ok := idIdx[textID]
			if !ok {
				i = uint32(len(idOrder))
				idIdx[textID] = i
				idOrder = append(idOrder, textID)
			}
			rg.Text = pending | i
		} else {
			rg.Text = intern(text)
		}
		if typ == nvtxPushPop {
			rg.Depth = 0
		} else {
			rg.Depth = -1
		}
		r.t.Ranges = append(r.t.Ranges, rg)
		if r.opt.Progress != nil && n&0xFFFF == 0 {
			r.opt.Progress(nvtxTable, n, r.rowCount(nvtxTable))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", nvtxTable, err)
	}
	var domainIDs []int64
	for _, d := range domains {
		if d.text == "" && d.textID != 0 {
			domainIDs = append(domainIDs, d.textID)
		}
	}
	strs, err := r.loadStrings(nvtxTable, append(slices.Clone(idOrder), domainIDs...))
	if err != nil {
		return err
	}
	for i := range r.t.Ranges {
		if t := r.t.Ranges[i].Text; t&pending != 0 {
			r.t.Ranges[i].Text = intern(strs[idOrder[t&^pending]])
		}
	}
	for _, d := range domains {
		name := d.text
		if name == "" {
			name = strs[d.textID]
		}
		r.t.Domains[d.id] = name
	}
	r.t.Ranges = dropUnclosed(r.t.Ranges, r.t.RangeTexts, &drop)
	drop.warn(r, "NVTX", nvtxTable, len(r.t.Ranges))
	// Ranges that start together nest by length: the longer (or never closed) one first.
	slices.SortStableFunc(r.t.Ranges, func(a, b Range) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(rangeEnd(b), rangeEnd(a))
	})
	r.t.Ranges = nestRanges(r.t.Ranges)
	return nil
}

// rangeEnd returns r.End, or the largest Time for a range that was never closed.
func rangeEnd(r Range) Time {
	if r.Open() {
		return 1<<63 - 1
	}
	return r.End
}

// nestRanges sets Depth of push/pop ranges (Depth 0 on input) from their nesting on each
// thread; start/end ranges (Depth -1 on input) get depth 0. Ranges must be sorted by Start,
// then longest first.
func nestRanges(rs []Range) []Range {
	// A range's depth is the number of earlier ranges of its thread that have not ended
	// when it starts. Starts only grow, so an ended range never counts again: a min-heap of
	// the ends per thread drops them in O(log n) each (a never-closed range stays, without
	// keeping the ended ranges above it), so deep nesting costs n log n, not n x depth.
	stacks := map[int64]*endHeap{}
	for i := range rs {
		if rs[i].Depth < 0 {
			rs[i].Depth = 0
			continue
		}
		h := stacks[rs[i].Thread]
		if h == nil {
			h = &endHeap{}
			stacks[rs[i].Thread] = h
		}
		start := rs[i].Start
		for h.Len() > 0 && (*h)[0] <= start {
			heap.Pop(h)
		}
		rs[i].Depth = int16(min(h.Len(), 1<<14))
		heap.Push(h, rangeEnd(rs[i]))
	}
	return rs
}

// readDevices lists the devices with GPU activity and names them from the GPU tables.
func (r *reader) readDevices() error {
	// Device ids are 0..MaxInt16 (the reader drops other rows): a flag per id is cheaper
	// than a map lookup per kernel.
	seen := make([]bool, math.MaxInt16+1)
	for _, st := range r.t.Sites {
		seen[st.Device] = true
	}
	for _, m := range r.t.Memops {
		seen[m.Device] = true
	}
	for _, g := range r.t.Graphs {
		seen[g.Device] = true
	}
	info := map[DeviceID]Device{}
	var q string
	switch {
	case r.has("TARGET_INFO_CUDA_GPU") && r.hasCol("TARGET_INFO_CUDA_GPU", "deviceId"):
		q = `SELECT deviceId, COALESCE(name, ''), ` + r.colOr("TARGET_INFO_CUDA_GPU", "globalMemorySize", "0") + `, ` +
			r.colOr("TARGET_INFO_CUDA_GPU", "numMultiprocessors", "0") + `, ` +
			r.colOr("TARGET_INFO_CUDA_GPU", "globalMemoryBandwidth", "0") + ` FROM TARGET_INFO_CUDA_GPU`
	case r.has("TARGET_INFO_GPU") && r.hasCol("TARGET_INFO_GPU", "cuDevice"):
		q = `SELECT cuDevice, COALESCE(name, ''), ` + r.colOr("TARGET_INFO_GPU", "totalMemory", "0") + `, ` +
			r.colOr("TARGET_INFO_GPU", "smCount", "0") + `, ` + r.colOr("TARGET_INFO_GPU", "memoryBandwidth", "0") +
			` FROM TARGET_INFO_GPU WHERE cuDevice IS NOT NULL ORDER BY COALESCE(smCount, 0)`
	case r.has("TARGET_INFO_GPU") && r.hasCol("TARGET_INFO_GPU", "deviceId"):
		q = `SELECT deviceId, COALESCE(name, ''), 0, 0, 0 FROM TARGET_INFO_GPU`
	}
	if q != "" {
		rows, err := r.db.QueryContext(r.ctx, q)
		if err != nil {
			return fmt.Errorf("reading GPU info: %w", err)
		}
		for rows.Next() {
			var d Device
			var id int64
			if err := rows.Scan(&id, &d.Name, &d.Memory, &d.SMs, &d.Bandwidth); err != nil {
				rows.Close()
				return fmt.Errorf("reading GPU info: %w", err)
			}
			d.ID = DeviceID(id)
			// Several adapters can share a cuDevice number (Windows lists integrated GPUs
			// too); rows are ordered by SM count, so the CUDA GPU with most SMs wins.
			info[d.ID] = d
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reading GPU info: %w", err)
		}
	}
	if n, lo, hi := countSeen(seen); n > MaxDevices {
		return fmt.Errorf("GPU activity on %d devices (ids %d to %d), more than the %d stepstat analyses", n, lo, hi, MaxDevices)
	}
	for id, ok := range seen {
		if ok {
			d := info[DeviceID(id)]
			d.ID = DeviceID(id)
			r.t.Devices = append(r.t.Devices, d)
		}
	}
	return nil
}

// memopLess and apiLess are total orders (start first), so unstable sorts are deterministic.
func memopLess(a, b Memop) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Device, b.Device); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Stream, b.Stream); c != 0 {
		return c
	}
	if c := cmp.Compare(a.End, b.End); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Proc, b.Proc); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Correlation, b.Correlation); c != 0 {
		return c
	}
	return cmp.Compare(a.Kind, b.Kind)
}

func apiOrder(callers []Caller) func(a, b APICall) int {
	return func(a, b APICall) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		ca, cb := &callers[a.Caller], &callers[b.Caller]
		if c := cmp.Compare(ca.Thread, cb.Thread); c != 0 {
			return c
		}
		if c := cmp.Compare(a.End, b.End); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Correlation, b.Correlation); c != 0 {
			return c
		}
		return cmp.Compare(ca.Name, cb.Name)
	}
}

func sortCalls(cs []APICall, callers []Caller) { sortUnlessSorted(cs, apiOrder(callers)) }
