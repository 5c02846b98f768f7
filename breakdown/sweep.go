package breakdown

import (
	"math"
	"math/bits"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// endHeap is a min-heap by end time of things running until then (activities with their
// category in the sweep, CUDA calls with their API group in the host-gap attribution). It
// is typed (not container/heap) so that a push does not allocate.
type endHeap[T any] []ending[T]

type ending[T any] struct {
	end nsys.Time
	val T
}

// runningAct is an activity running until end, with its category.
type runningAct = ending[kernelclass.Category]

func (h *endHeap[T]) push(x ending[T]) {
	*h = append(*h, x)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].end <= a[i].end {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *endHeap[T]) pop() ending[T] {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a[l].end < a[m].end {
			m = l
		}
		if r < n && a[r].end < a[m].end {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// account sweeps the device's activities once and fills the steps' exclusive and busy time,
// kernel and launch counts, and idle gaps. Step i covers [bound i, bound i+1); the last step
// ends at the last end of the activities that start in it. Long timelines are swept in
// pieces at once, split at step boundaries (see accountPieces); split says where (nil:
// splitSteps).
func account(t *nsys.Trace, h *steps.HostIndex, tl *steps.Timeline, det *steps.Detection, split func(steps, kernels int) []int) ([]Step, []stepShape) {
	if split == nil {
		split = splitSteps
	}
	return accountPieces(t, h, tl, det, split(len(det.Bounds), len(t.Kernels)))
}

// splitSteps returns the steps where the pieces of a parallel pass start, for steps steps
// over kernels kernels: from 2^20 kernels and 4 steps on, one piece per core Go may use
// (GOMAXPROCS, at least 2) of about as many steps each, at least 2 steps a piece; else
// none (one piece). The result of every pass is the same whatever the pieces.
func splitSteps(steps, kernels int) []int {
	if steps < 4 || kernels < 1<<20 {
		return nil
	}
	n := min(max(2, runtime.GOMAXPROCS(0)), steps/2)
	cuts := make([]int, 0, n-1)
	for i := 1; i < n; i++ {
		cuts = append(cuts, steps*i/n)
	}
	return cuts
}

// accountPieces is account with steps [0, cuts[0]), [cuts[0], cuts[1]), ... swept each on
// its own goroutine (no cuts: one sweep). A piece after the first starts at B, the start
// of its first step, knowing the activities still running then, so that it gives every
// instant the owner one sweep would; a piece before the last stops at the next piece's B
// and hands over the busy time of activities that run past it. Graph launches whose
// kernels fall in several pieces are counted once, in the first, as one sweep would. The
// result is the same as one sweep's, to the nanosecond (TestAccountSplit).
func accountPieces(t *nsys.Trace, h *steps.HostIndex, tl *steps.Timeline, det *steps.Detection, cuts []int) ([]Step, []stepShape) {
	ss := make([]Step, len(det.Bounds))
	shapes := make([]stepShape, len(det.Bounds))
	for i, b := range det.Bounds {
		ss[i] = Step{Index: i, Phase: b.Phase, Label: b.Label, Start: b.Start, Batch: b.Batch, DraftForwards: b.Drafts,
			CutBy: b.By, DraftDepth: int(b.DraftDepth), VerifyDepth: int(b.VerifyDepth)}
		if b.Phase != Unknown && b.By == CutNVTX {
			ss[i].PhaseEvidence = EvidenceNVTX
		}
		if b.Why != "" {
			ss[i].PhaseEvidence = b.Why
		}
		if i+1 < len(det.Bounds) {
			ss[i].End = det.Bounds[i+1].Start
		}
	}
	last := &ss[len(ss)-1]
	last.End = last.Start
	firsts := pieceFirsts(cuts, len(ss))
	if len(firsts) == 1 {
		w := newSweep(t, h, tl, ss, shapes, 0, len(ss))
		tl.Each(w.add)
		w.finish(math.MaxInt64)
		return ss, shapes
	}
	tl.Procs() // built once, before the goroutines read it
	long := steps.Longest(t)
	callsFrom := callsRunningFrom(t.APICalls)
	ws := make([]*sweep, len(firsts))
	var wg sync.WaitGroup
	for p, lo := range firsts {
		hi, until := len(ss), nsys.Time(math.MaxInt64)
		if p+1 < len(firsts) {
			hi, until = firsts[p+1], ss[firsts[p+1]].Start
		}
		ws[p] = newSweep(t, h, tl, ss, shapes, lo, hi)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := ws[p]
			if p == 0 {
				tl.Each(func(a *steps.Activity) bool { return a.Start < until && w.add(a) })
			} else {
				b := ss[lo].Start
				w.host.skipTo(callsFrom(b))
				w.startAt(b, tl.RunningAt(b, long))
				tl.EachFrom(b, func(a *steps.Activity) bool { return a.Start < until && w.add(a) })
			}
			w.finish(until)
		}()
	}
	wg.Wait()
	for p, w := range ws {
		for _, x := range w.beyond {
			ss[x.step].Busy[x.cat] += x.d
		}
		last.End = max(last.End, w.lastEnd)
		if p == 0 {
			continue
		}
		for _, g := range w.counted {
			for _, e := range ws[:p] {
				if e.graphSeen[g.key] {
					ss[g.step].Launches-- // counted at its first kernel, in an earlier piece
					break
				}
			}
		}
	}
	return ss, shapes
}

// callsRunningFrom returns a function that gives, for a time b, an index of calls (sorted
// by start) before which no call runs past b: the calls that start a longest call's
// duration before b or earlier end by then.
func callsRunningFrom(calls []nsys.APICall) func(b nsys.Time) int {
	var longest nsys.Time
	for i := range calls {
		longest = max(longest, calls[i].End-calls[i].Start)
	}
	return func(b nsys.Time) int {
		return sort.Search(len(calls), func(i int) bool { return calls[i].Start >= b-longest })
	}
}

// A sweep accounts steps [lo, hi) of a device, seeing its activities in start order.
type sweep struct {
	h      *steps.HostIndex
	steps  []Step
	shapes []stepShape
	lo, hi int
	host   *hostGaps

	active  [kernelclass.NumCategories]int
	live    uint32 // bit Priority(c) set while a category c activity runs
	running endHeap[kernelclass.Category]
	now     nsys.Time
	started bool
	si      int // step of the current instant (for exclusive time)
	ai      int // step of the latest activity start
	// lastGraphKey is the graph launch whose kernels are being seen: its kernels are
	// mostly consecutive, so this spares a map lookup per kernel.
	lastGraphKey uint64
	// graphSeen holds the graph launches already counted: a graph launch counts once
	// however many kernels it ran.
	graphSeen map[uint64]bool
	counted   []graphCount // launches counted, when not the first half
	beyond    []busyBeyond // busy time in steps from hi on (the first half)
	lastEnd   nsys.Time    // the latest end of an activity in the last step (the first half)
}

type graphCount struct {
	key  uint64
	step int
}

type busyBeyond struct {
	step int
	cat  kernelclass.Category
	d    time.Duration
}

func newSweep(t *nsys.Trace, h *steps.HostIndex, tl *steps.Timeline, steps []Step, shapes []stepShape, lo, hi int) *sweep {
	return &sweep{h: h, steps: steps, shapes: shapes, lo: lo, hi: hi, host: newHostGaps(t, tl),
		si: lo, ai: lo, lastGraphKey: 1<<64 - 1, graphSeen: map[uint64]bool{}}
}

// startAt begins a sweep that is not the first at b, with the activities running then:
// they own instants from b on, and their busy time and counts belong to the first half.
func (w *sweep) startAt(b nsys.Time, running []steps.Activity) {
	w.now, w.started = b, true
	for i := range running {
		w.start(running[i].Cat)
		w.running.push(runningAct{running[i].End, running[i].Cat})
	}
}

func (w *sweep) start(c kernelclass.Category) {
	if w.active[c]++; w.active[c] == 1 {
		w.live |= 1 << c.Priority()
	}
}

func (w *sweep) stop(c kernelclass.Category) {
	if w.active[c]--; w.active[c] == 0 {
		w.live &^= 1 << c.Priority()
	}
}

// byPriority gives the category of each priority (they are distinct and below 32,
// TestPriorities checks), for the bitmask of running categories in the sweep.
var byPriority = func() (b [32]kernelclass.Category) {
	for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
		b[c.Priority()] = c
	}
	return b
}()

// owner is the category of the highest priority running (priorities are distinct, below 32).
func (w *sweep) owner() kernelclass.Category {
	if w.live == 0 {
		return kernelclass.Idle
	}
	return byPriority[bits.Len32(w.live)-1]
}

// advance attributes [now, to) to the current owner, split at step boundaries.
func (w *sweep) advance(to nsys.Time) {
	if !w.started || to <= w.now {
		if to > w.now {
			w.now = to
		}
		return
	}
	steps := w.steps
	c := w.owner()
	for w.now < to {
		for w.si < len(steps) && steps[w.si].End <= w.now && w.si+1 < len(steps) {
			w.si++
		}
		if w.si >= len(steps) || w.now < steps[w.si].Start {
			// Before the first step: skip ahead.
			next := to
			if w.si < len(steps) && steps[w.si].Start < next {
				next = steps[w.si].Start
			}
			w.now = next
			continue
		}
		end := to
		if w.si+1 < len(steps) && steps[w.si].End < end {
			end = steps[w.si].End
		}
		st := &steps[w.si]
		d := end.Sub(w.now)
		st.Exclusive[c] += d
		if c == kernelclass.Idle {
			st.Busy[kernelclass.Idle] += d
			st.Gaps.Count++
			st.Gaps.Total += d
			sz := gapSize(d)
			st.Gaps.Sizes[sz]++
			st.Gaps.SizeNS[sz] += d
			var api [NumAPIGroups]time.Duration
			w.host.attribute(w.now, end, &api)
			long := sz != GapUnder10us
			for i, x := range api {
				st.Gaps.API[i] += x
				st.Gaps.Host[hostOf(APIGroup(i))] += x
				if long {
					st.Gaps.APILong[i] += x
					st.Gaps.HostLong[hostOf(APIGroup(i))] += x
				}
			}
			if d > st.LongGap.Dur() {
				st.LongGap = Gap{Start: w.now, End: end, Next: NoKernel, API: api}
			}
		}
		w.now = end
	}
}

func (w *sweep) stepOf(at nsys.Time) int {
	for w.ai+1 < len(w.steps) && w.steps[w.ai+1].Start <= at {
		w.ai++
	}
	return w.ai
}

// add sees the next activity; it returns true (for timeline.each).
func (w *sweep) add(a *steps.Activity) bool {
	ss := w.steps
	for len(w.running) > 0 && w.running[0].end <= a.Start {
		r := w.running.pop()
		w.advance(r.end)
		w.stop(r.val)
	}
	if !w.started {
		w.now, w.started = a.Start, true
	}
	w.advance(a.Start)
	i := w.stepOf(a.Start)
	if a.Start >= ss[i].Start {
		st := &ss[i]
		st.Kernels[a.Cat]++
		if g := &st.LongGap; a.Src == steps.SrcKernel && g.Next == NoKernel && g.End > g.Start && a.Start >= g.End {
			g.Next, g.NextCat = a.Name, a.Cat // the kernel the step's longest gap waited for
		}
		switch a.Src {
		case steps.SrcKernel:
			w.shapes[i].add(a)
			if d := a.End.Sub(a.Start); d < ShortKernel {
				st.ShortKernels++
				st.ShortBusy += d
			}
			k := a.Key()
			switch {
			case k == w.lastGraphKey:
				// another kernel of the graph launch counted just before
			case !w.h.Graphs[k]:
				st.Launches++
			default:
				w.lastGraphKey = k
				if !w.graphSeen[k] {
					w.graphSeen[k] = true
					st.Launches++
					if w.lo > 0 {
						w.counted = append(w.counted, graphCount{k, i})
					}
				}
			}
		case steps.SrcGraph:
			st.Launches++
		}
		if i == len(ss)-1 && a.End > st.End {
			st.End = a.End
		}
	}
	// Busy time, clipped to each step window the activity overlaps; also for an activity
	// that starts before the first step and runs into it, whose time in the steps is
	// accounted as exclusive time too. The first half keeps what falls in the second's
	// steps apart (the last step's end moves as the second half runs).
	for j := i; j < len(ss); j++ {
		s, e := max(a.Start, ss[j].Start), a.End
		if j+1 < len(ss) {
			e = min(e, ss[j].End)
		} else if j >= w.hi {
			w.lastEnd = max(w.lastEnd, e)
		} else if e > ss[j].End {
			ss[j].End = e
		}
		if e <= s {
			break
		}
		if j >= w.hi {
			w.beyond = append(w.beyond, busyBeyond{j, a.Cat, e.Sub(s)})
		} else {
			ss[j].Busy[a.Cat] += e.Sub(s)
		}
	}
	w.start(a.Cat)
	w.running.push(runningAct{a.End, a.Cat})
	return true
}

// finish ends the sweep at until: the running activities that end by then are seen to
// their end, and the time up to until attributed (math.MaxInt64: the end of all).
func (w *sweep) finish(until nsys.Time) {
	for len(w.running) > 0 && w.running[0].end <= until {
		r := w.running.pop()
		w.advance(r.end)
		w.stop(r.val)
	}
	if until != math.MaxInt64 {
		w.advance(until)
	}
}

func gapSize(d time.Duration) int {
	switch {
	case d < 10*time.Microsecond:
		return GapUnder10us
	case d < 100*time.Microsecond:
		return Gap10to100us
	case d < time.Millisecond:
		return Gap100usTo1ms
	}
	return GapOver1ms
}
