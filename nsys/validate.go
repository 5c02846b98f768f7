package nsys

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
)

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

// keepRange holds an NVTX row to the rules of kernel rows (dropCounter.keep): its start
// and end must be integers within ±MaxTime, the end not before the start, not both zero
// (a range may start at 0, the session start).
// A NULL end is a range never closed: kept, with End < Start (Range.Open), and checked once
// all rows are read (dropUnclosed).
func (d *dropCounter) keepRange(s int64, sk valueKind, e int64, ek valueKind) (Time, Time, bool) {
	if sk != valueInt {
		d.badType++
		return 0, 0, false
	}
	if ek == valueNull {
		if s != 0 && !d.keep(s, s, 0) { // the start alone
			return 0, 0, false
		}
		end := Time(-1)
		if s < 0 {
			end = Time(s) - 1
		}
		return Time(s), end, true
	}
	if ek != valueInt {
		d.badType++
		return 0, 0, false
	}
	if s == 0 && e != 0 {
		// A range may start at the session start (hand-made exports do); only both
		// timestamps zero is the missing-value pattern for NVTX rows.
		if !d.keep(1, e, 0) {
			return 0, 0, false
		}
		return Time(s), Time(e), true
	}
	if !d.keep(s, e, 0) {
		return 0, 0, false
	}
	return Time(s), Time(e), true
}

// A valueKind is the SQLite type of an NVTX timestamp as keepRange tells them apart.
type valueKind uint8

const (
	valueInt   valueKind = iota // INTEGER
	valueNull                   // NULL
	valueOther                  // REAL, TEXT or BLOB
)

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

// dropSharedCorrelations drops the CUDA API calls whose correlation id was given to an
// earlier call of the same thread that had ended when the call started. CUPTI gives every
// call its own id (a runtime call and the driver call it makes inside it share one, and
// overlap); two calls one after the other with one id is a file that links every kernel
// of that id to two calls (a file with every id equal made 801 steps of a 13-step
// capture). Every call of a shared id is dropped, so kernels of it link to none; the
// warning says how many. O(n): one pass in time order with the last call of each thread.
func (r *reader) dropSharedCorrelations() {
	calls := r.t.APICalls
	if len(calls) < 2 {
		return
	}
	threadOf := make([]int32, len(r.t.Callers)) // caller -> thread number
	threads := map[int64]int32{}
	for i, c := range r.t.Callers {
		n, ok := threads[c.Thread]
		if !ok {
			n = int32(len(threads))
			threads[c.Thread] = n
		}
		threadOf[i] = n
	}
	type last struct {
		corr uint32
		end  Time
		ok   bool
	}
	lasts := make([]last, len(threads))
	type key struct {
		proc ProcID
		corr uint32
	}
	var shared map[key]bool
	for _, c := range calls {
		l := &lasts[threadOf[c.Caller]]
		if l.ok && l.corr == c.Correlation && c.Start >= l.end {
			if shared == nil {
				shared = map[key]bool{}
			}
			shared[key{r.t.Callers[c.Caller].Proc, c.Correlation}] = true
		}
		if !l.ok || c.Correlation != l.corr || c.End > l.end {
			*l = last{c.Correlation, c.End, true}
		}
	}
	if shared == nil {
		return
	}
	out := calls[:0]
	for _, c := range calls {
		if !shared[key{r.t.Callers[c.Caller].Proc, c.Correlation}] {
			out = append(out, c)
		}
	}
	n := len(calls) - len(out)
	r.t.APICalls = out
	r.warnf("dropped %d of %d CUDA API rows of %s (%.3g%%): %d sharing %d correlation ids with an earlier call of their thread (the kernels they launched are not linked to a call)",
		n, len(calls), runtimeTable, 100*float64(n)/float64(len(calls)), n, len(shared))
}

// MaxDevices is the most devices with GPU activity a trace may have: the cross-rank
// analysis keeps, per device, a wait split by every other device (devices² numbers), so a
// file of a few MB naming 10,000 device ids took gigabytes. 1024 is far past any single
// capture (an NVL72 rack has 72 GPUs). Past it Open fails with one line.
const MaxDevices = 1024

// countSeen returns how many flags are set, and the first and last set index.
func countSeen(seen []bool) (n, lo, hi int) {
	lo = -1
	for i, ok := range seen {
		if ok {
			if lo < 0 {
				lo = i
			}
			hi = i
			n++
		}
	}
	return n, lo, hi
}

// warnSidecars warns when a -wal or a hot -journal file sits beside the trace. SQLite
// looks for them beside the file a symbolic link names, so the link is resolved first.
// The reader opens the file immutably (it never changes the input or creates files beside
// it), so neither is applied: a WAL's frames are committed changes not yet in the file,
// and a hot journal holds the rollback of a write left unfinished (the file may hold part
// of it). A WAL without frames and a journal with a zeroed header hold nothing.
func warnSidecars(t *Trace, path string) {
	real := resolveLinks(path)
	via := ""
	if real != path && filepath.Base(real) != filepath.Base(path) {
		via = " (the file " + filepath.Base(path) + " links to)"
	}
	if walFrames(real) {
		t.Warnings = append(t.Warnings, fmt.Errorf("%s-wal sits beside the trace%s: it holds committed changes not yet written into the file, and the trace is read without them (open it once with sqlite3 to apply them)", filepath.Base(real), via))
	}
	if hotJournal(real) {
		t.Warnings = append(t.Warnings, fmt.Errorf("%s-journal sits beside the trace%s: a hot journal holds the rollback of a write left unfinished, and the trace is read as it is on disk, which may hold part of that write (open it once with sqlite3 to roll it back)", filepath.Base(real), via))
	}
}

// resolveLinks returns path with its symbolic links resolved, or path when they cannot be.
func resolveLinks(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// walFrames reports whether path-wal holds frames: a WAL header (32 bytes, its magic
// 0x377f0682 or 0x377f0683) and more. SQLite ignores a WAL of another magic.
func walFrames(path string) bool {
	h, size := sidecarHead(path+"-wal", 4)
	m := binary.BigEndian.Uint32(append(h, 0, 0, 0, 0))
	return size > 32 && (m == 0x377f0682 || m == 0x377f0683)
}

// hotJournal reports whether path-journal can be hot: it is not empty and its header is
// not zeroed (SQLite's hasHotJournal reads the first byte; a committed journal of
// journal_mode=PERSIST has its header zeroed).
func hotJournal(path string) bool {
	h, _ := sidecarHead(path+"-journal", 1)
	return len(h) == 1 && h[0] != 0
}

// sidecarHead returns up to the first n bytes of the regular file at path and its size.
func sidecarHead(path string, n int) ([]byte, int64) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0
	}
	b := make([]byte, n)
	k, _ := io.ReadFull(f, b)
	return b[:k], fi.Size()
}
