package nsys

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/nsys/sqlitefile"
)

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
	x := &nvtxRead{r: r, texts: newInterner[string, uint32](&r.t.RangeTexts), idIdx: map[int64]uint32{}}
	if err := r.scanNVTX(x.row); err != nil {
		return err
	}
	if err := x.resolve(); err != nil {
		return err
	}
	r.t.Ranges = dropUnclosed(r.t.Ranges, r.t.RangeTexts, &x.drop)
	x.drop.warn(r, "NVTX", nvtxTable, len(r.t.Ranges))
	slices.SortStableFunc(r.t.Ranges, rangeOrder)
	r.t.Ranges = nestRanges(r.t.Ranges)
	return nil
}

// An nvtxRead is readNVTX's state: the ranges' texts numbered so far, the textIds to
// resolve once the table is read, and the domains met.
type nvtxRead struct {
	r     *reader
	texts *interner[string, uint32] // numbers Trace.RangeTexts
	// Ranges named through textId are resolved after the scan; until then Text holds
	// ^idIndex with the high bit set (pending).
	idIdx   map[int64]uint32
	idOrder []int64
	domains []domainRow
	drop    dropCounter
}

// pending marks a Range.Text that is an index of nvtxRead.idOrder, not of RangeTexts.
const pending = 1 << 31

// A domainRow is a domain-create row of NVTX_EVENTS: the domain's name, or its textId.
type domainRow struct {
	id     uint32
	text   string
	textID int64
}

// row keeps one row of the table: a domain, or a range that passes the row checks.
func (x *nvtxRead) row(nr *nvtxRow, text []byte) {
	if nr.typ == nvtxDomainCreate {
		x.domains = append(x.domains, domainRow{uint32(nr.domain), string(text), nr.textID})
		return
	}
	s, e, ok := x.drop.keepRange(nr.start, nr.startKind, nr.end, nr.endKind)
	if !ok {
		return
	}
	rg := Range{Start: s, End: e, Thread: nr.tid, Domain: uint32(nr.domain), Proc: x.r.proc(nr.tid)}
	if len(text) == 0 && nr.textID != 0 {
		i, ok := x.idIdx[nr.textID]
		if !ok {
			i = uint32(len(x.idOrder))
			x.idIdx[nr.textID] = i
			x.idOrder = append(x.idOrder, nr.textID)
		}
		rg.Text = pending | i
	} else {
		rg.Text = internBytes(x.texts, text)
	}
	if nr.typ == nvtxPushPop {
		rg.Depth = 0
	} else {
		rg.Depth = -1
	}
	x.r.t.Ranges = append(x.r.t.Ranges, rg)
}

// resolve names the ranges and domains named through textId, from StringIds.
func (x *nvtxRead) resolve() error {
	r := x.r
	var domainIDs []int64
	for _, d := range x.domains {
		if d.text == "" && d.textID != 0 {
			domainIDs = append(domainIDs, d.textID)
		}
	}
	strs, err := r.loadStrings(nvtxTable, append(slices.Clone(x.idOrder), domainIDs...))
	if err != nil {
		return err
	}
	for i := range r.t.Ranges {
		if t := r.t.Ranges[i].Text; t&pending != 0 {
			r.t.Ranges[i].Text = x.texts.id(strs[x.idOrder[t&^pending]])
		}
	}
	for _, d := range x.domains {
		name := d.text
		if name == "" {
			name = strs[d.textID]
		}
		r.t.Domains[d.id] = name
	}
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

// An nvtxRow is the columns of one NVTX_EVENTS row the reader uses.
type nvtxRow struct {
	start, end               int64
	startKind, endKind       valueKind
	typ, textID, tid, domain int64
}

// scanNVTX reads the push/pop, start/end and domain rows of NVTX_EVENTS and calls row
// with each, with its text (valid during the call only): directly from the file when the
// direct reader handles the table, else through SQLite.
func (r *reader) scanNVTX(row func(nr *nvtxRow, text []byte)) error {
	q := nvtxQuery(r.hasCol(nvtxTable, "text"))
	var d *directTable
	if r.hasCol(nvtxTable, "end") {
		var err error
		if d, err = r.direct(q); err != nil {
			return err
		}
	} else {
		r.noteLost(q)
		r.shared.reads.add(TableRead{Table: nvtxTable, Why: "no end column"})
	}
	if d != nil {
		return r.scanNVTXDirect(d, row)
	}
	return r.scanNVTXSQL(row)
}

// The NVTX table's columns, by their place in a row of nvtxQuery; nvtxCols, their
// number, is the place of the row's mask.
const (
	nvtxStart = colStart
	nvtxEnd   = colEnd
	nvtxType  = iota // eventType
	nvtxTextID
	nvtxThread
	nvtxDomain
	nvtxCols
)

// nvtxQuery is the direct read of the NVTX table's push/pop, start/end and domain rows,
// with their text column when the table has one (hasText).
func nvtxQuery(hasText bool) *tableQuery {
	kept := make([]bool, nvtxDomainCreate+1)
	kept[nvtxPushPop], kept[nvtxStartEnd], kept[nvtxDomainCreate] = true, true, true
	cols := [nvtxCols]tableCol{
		nvtxStart:  needCol("start"),
		nvtxEnd:    needCol("end"),
		nvtxType:   needCol("eventType"),
		nvtxTextID: optCol("textId", 0),
		nvtxThread: optCol("globalTid", 0),
		nvtxDomain: optCol("domainId", 0),
	}
	q := &tableQuery{table: nvtxTable, cols: cols[:], in: "eventType", kept: kept,
		nullsOnly: true} // a NULL end is a range never closed, another type a broken one
	if hasText {
		q.text = "text"
	}
	return q
}

// scanNVTXDirect is scanNVTX's read through the direct reader.
func (r *reader) scanNVTXDirect(d *directTable, row func(nr *nvtxRow, text []byte)) error {
	var nr nvtxRow
	err := d.scan(r.ctx, part{lb: len(d.table.Leaves)}, r.newProgress(nvtxTable, 1), func(v []int64, text []byte) {
		// The direct reader gives INTEGER or NULL (bit set) start and end; other types
		// are left to SQLite.
		nr = nvtxRow{start: v[nvtxStart], end: v[nvtxEnd], typ: v[nvtxType], textID: v[nvtxTextID],
			tid: v[nvtxThread], domain: v[nvtxDomain]}
		nr.startKind, nr.endKind = valueInt, valueInt
		if v[nvtxCols]&(1<<nvtxStart) != 0 {
			nr.startKind = valueNull
		}
		if v[nvtxCols]&(1<<nvtxEnd) != 0 {
			nr.endKind = valueNull
		}
		row(&nr, text)
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", nvtxTable, err)
	}
	return nil
}

// scanNVTXSQL is scanNVTX's read through SQLite.
func (r *reader) scanNVTXSQL(row func(nr *nvtxRow, text []byte)) error {
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
	sq := fmt.Sprintf(`SELECT start, typeof(start), %s, %s, eventType, %s, %s, %s, %s FROM %s WHERE eventType IN (%d, %d, %d)`,
		endCol, endTypeCol, r.colOr(nvtxTable, "textId", "0"), r.colOr(nvtxTable, "globalTid", "0"),
		r.colOr(nvtxTable, "domainId", "0"), textCol, nvtxTable, nvtxPushPop, nvtxStartEnd, nvtxDomainCreate)
	rows, err := r.db.QueryContext(r.ctx, sq)
	if err != nil {
		return fmt.Errorf("reading %s: %w", nvtxTable, err)
	}
	defer rows.Close()
	var nr nvtxRow
	var start, end any
	var startType, endType, text string
	var n int64
	for rows.Next() {
		if err := rows.Scan(&start, &startType, &end, &endType, &nr.typ, &nr.textID, &nr.tid, &nr.domain, &text); err != nil {
			return fmt.Errorf("reading %s: %w", nvtxTable, err)
		}
		n++
		nr.start, nr.startKind = sqlKind(start, startType)
		nr.end, nr.endKind = sqlKind(end, endType)
		row(&nr, []byte(text))
		if r.opt.Progress != nil && n&0xFFFF == 0 {
			r.opt.Progress(nvtxTable, n, r.rowCount(nvtxTable))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", nvtxTable, err)
	}
	return nil
}

// sqlKind returns a timestamp read through SQLite, v of SQLite type typ, and its kind.
func sqlKind(v any, typ string) (int64, valueKind) {
	x, ok := v.(int64)
	if f, isF := v.(float64); isF && typ == "real" {
		if x, ok := sqlitefile.WholeFloat(f); ok {
			return x, valueInt
		}
	}
	switch {
	case typ == "integer" && ok:
		return x, valueInt
	case typ == "null":
		return 0, valueNull
	}
	return 0, valueOther
}

// dropUnclosed drops the ranges that were never closed (NULL end) although a later range
// of the same name (digits aside: "decode 7" and "decode 8" are one name) and domain
// starts on the same thread. A range open at the end of the capture is one that was
// still running when it stopped; one followed by the next of its kind is a bad row, and
// read as open it would swallow the rest of the thread's ranges (every later step nested
// in it). O(n) in the ranges.
func dropUnclosed(rs []Range, texts []string, d *dropCounter) []Range {
	anyOpen := false
	for i := range rs {
		if rs[i].Open() {
			anyOpen = true
			break
		}
	}
	if !anyOpen {
		return rs
	}
	shapeOf := make([]int32, len(texts)) // 1 + the shape's number; 0: not yet
	shapes := map[string]int32{}
	shape := func(text uint32) int32 {
		if text >= uint32(len(texts)) {
			return -1
		}
		if shapeOf[text] == 0 {
			k := digitless(texts[text])
			id, ok := shapes[k]
			if !ok {
				id = int32(len(shapes))
				shapes[k] = id
			}
			shapeOf[text] = id + 1
		}
		return shapeOf[text] - 1
	}
	type key struct {
		thread int64
		domain uint32
		shape  int32
	}
	last := map[key]Time{} // the latest start of each name on each thread
	for i := range rs {
		k := key{rs[i].Thread, rs[i].Domain, shape(rs[i].Text)}
		if t, ok := last[k]; !ok || rs[i].Start > t {
			last[k] = rs[i].Start
		}
	}
	out := rs[:0]
	for _, r := range rs {
		if r.Open() && last[key{r.Thread, r.Domain, shape(r.Text)}] > r.Start {
			d.unclosed++
			continue
		}
		out = append(out, r)
	}
	return out
}

// digitless returns s with each run of digits replaced by one '#'.
func digitless(s string) string {
	if !strings.ContainsAny(s, "0123456789") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	inRun := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			if !inRun {
				b.WriteByte('#')
			}
			inRun = true
			continue
		}
		inRun = false
		b.WriteByte(c)
	}
	return b.String()
}

// endHeap is a min-heap of the ends of the ranges open on one thread.
type endHeap []Time

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(Time)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
