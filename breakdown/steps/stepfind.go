package steps

import (
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/nsys"
)

// The step finder (used when no NVTX step ranges are found, and by the forced graph and sync methods)
// finds the iterations of the serving loop. The host signals (cuts.go) cut the device's
// timeline into segments; a real loop iteration holds several such cuts (generate() reads
// back twice per token, an eager MoE loop once per expert), so the finder groups k
// consecutive segments into one step, k being the smallest at which the segments' kernel mix
// repeats over the second half of the trace (findRepeat). The groups are aligned to the
// start of the loop body (alignRepeat): per phase, the run of units like the most common one
// that starts earliest, preferring units that end with the token's sampling. Before the run:
// the prefill, and warm-up steps (eager units like the loop's, before the first graph
// replay) outside steps; after it, whole units while they run at least half a unit's
// kernels, then the rest outside steps (groupSegments). The forwards of the model then split
// every group that holds several, and join a draft's forwards into speculative rounds
// (forwards.go); without a repeating grouping, the forwards alone make the steps.

// repeatWindow bounds the work of finding the repeat: the last segments (or kernels) only,
// past any prefill and warm-up.
const repeatWindow = 8192

// findRepeat returns the smallest k (at most maxK) at which sigs repeat, sigs[i] ==
// sigs[i-k], almost as often as at the best k, over the second half of sigs (at most the
// last repeatWindow entries: past the prefill and warm-up, whose own repeats, per layer of
// a prefill, must not decide); ok is false when nothing repeats in at least 60% of them.
func findRepeat(sigs []uint64, maxK int) (k int, ok bool) {
	n := len(sigs)
	lo := max(n/2, n-repeatWindow)
	w := n - lo
	maxK = min(maxK, w/2)
	if maxK < 1 {
		return 0, false
	}
	scores := make([]float64, maxK+1)
	best := 0.0
	for k := 1; k <= maxK; k++ {
		m := 0
		for i := lo; i < n; i++ {
			if sigs[i] == sigs[i-k] {
				m++
			}
		}
		scores[k] = float64(m) / float64(w)
		best = max(best, scores[k])
	}
	if best < 0.6 {
		return 0, false
	}
	// Multiples of the step repeat as well, and a layer's period matches everywhere but at
	// step boundaries: the smallest k within 0.5% of the best.
	for k = 1; scores[k] < best-0.005; k++ {
	}
	return k, true
}

// unitHashes returns, for each i with i+k <= len(sigs), a hash of sigs[i:i+k] (rolling).
func unitHashes(sigs []uint64, k int) []uint64 {
	const b = 0x9e3779b97f4a7c15
	n := len(sigs) - k + 1
	if n <= 0 {
		return nil
	}
	top := uint64(1) // b^(k-1)
	for range k - 1 {
		top *= b
	}
	hs := make([]uint64, n)
	var h uint64
	for i := range k {
		h = h*b + sigs[i]
	}
	hs[0] = h
	for i := 1; i < n; i++ {
		h = (h-sigs[i-1]*top)*b + sigs[i+k-1]
		hs[i] = h
	}
	return hs
}

// alignRepeat places steps of k segments. In each phase (offset mod k), the most common
// unit (with kernels) among the last repeatWindow is the loop body; walking back from its
// last occurrence, the run of steps goes back to where two units in a row differ from it
// (a single odd step is kept). The phase whose run starts earliest is the loop's: its first
// unit starts right after the prefill, where any other phase cuts a unit in two; and when
// the units of some phases end in a segment that samples (argmax), only those count. It returns
// the run's first index and the end of its last unit; ok is false when no unit repeats.
func alignRepeat(segs []segment, sigs []uint64, k int) (e, end int, ok bool) {
	hs := unitHashes(sigs, k)
	withKernels := func(i int) bool { return kernelsIn(segs[i:i+k]) > 0 }
	e = len(sigs)
	endsSampling := false
	for r := 0; r < k && r < len(hs); r++ {
		lo := max(r, len(hs)-repeatWindow)
		lo += ((r-lo)%k + k) % k // the first index of phase r from there
		count := map[uint64]int{}
		var modal uint64
		best := 0
		for i := lo; i < len(hs); i += k {
			count[hs[i]]++
			if c := count[hs[i]]; c > best && withKernels(i) {
				modal, best = hs[i], c
			}
		}
		if best < 2 {
			continue
		}
		last := lo + (len(hs)-1-lo)/k*k
		for hs[last] != modal {
			last -= k
		}
		first := last
		for i := last - k; i >= 0; i -= k {
			if hs[i] == modal {
				first = i
			} else if i-k < 0 || hs[i-k] != modal {
				break
			}
		}
		// A step ends with its token's sampling: when some phase's unit ends in a segment
		// that samples, only such phases are the loop's.
		ends := segs[last+k-1].sampler
		if ends && !endsSampling {
			e, endsSampling = len(sigs), true
		}
		if first < e && ends == endsSampling {
			e, end, ok = first, last+k, true
		}
	}
	return e, end, ok
}

// groupSegments turns segments into step boundaries: k segments a step from e on. Before
// e, the prefill (one step; outside when it runs under a quarter of a step's kernels: setup),
// after any segments without kernels that precede it (outside).
// Past end (the end of the last unit like the loop body), whole units are steps while they
// launch at least half the kernels of the unit before; the rest is outside.
func groupSegments(segs []segment, k, e, end int) []Boundary {
	var b []Boundary
	first := 0
	for first < e && segs[first].kernels == 0 {
		first++
	}
	if first > 0 {
		b = append(b, Boundary{Start: segs[0].start, Outside: true})
	}
	unitKernels := func(i int) int32 { return kernelsIn(segs[i : i+k]) }
	warm := warmupStart(segs, k, first, e)
	if first < warm {
		// The prefill runs at least as much as a decode step; a few kernels before the
		// loop body are setup, in no step.
		// Against a loop of graph replays traced at graph level (a replay counts one), the
		// setup is eager work that runs under a quarter of a step's time.
		pre := kernelsIn(segs[first:warm])
		setup := e+k <= len(segs) && (4*pre < unitKernels(e) ||
			graphsIn(segs[first:warm]) == 0 && graphsIn(segs[e:e+k]) > 0 && 4*spanOf(segs[first:warm]) < spanOf(segs[e:e+k]))
		b = append(b, Boundary{Start: segs[first].start, Outside: setup})
	}
	if warm < e {
		b = append(b, Boundary{Start: segs[warm].start, Outside: true})
	}
	i := e
	for ; i+k <= end; i += k {
		b = append(b, Boundary{Start: segs[i].start})
	}
	// A unit that replays the graphs the unit before replayed is an iteration too (the
	// capture's last replay, without the eager work that follows each of the others).
	graphs := func(i int) int32 { return graphsIn(segs[i : i+k]) }
	for ; i+k <= len(segs) && i >= k && (2*unitKernels(i) >= unitKernels(i-k) || graphs(i) > 0 && graphs(i) >= graphs(i-k)); i += k {
		b = append(b, Boundary{Start: segs[i].start})
	}
	if i < len(segs) {
		// The window outside starts where the last step's work ended (its own idle tail
		// is not the wait for post-loop work).
		at := segs[i].start
		if i >= k && len(b) > 0 {
			var end nsys.Time
			for _, s := range segs[i-k : i] {
				end = max(end, s.end)
			}
			if end > b[len(b)-1].Start && end < at {
				at = end
			}
		}
		b = append(b, Boundary{Start: at, Outside: true})
	}
	return b
}

// warmupStart returns where warm-up steps begin in the segments [first, e) before the loop
// body: a run of at least two identical units of k segments, each with as many kernels as
// the loop body's unit, that ends at e or one unit before it (the graph capture's own work,
// say); e when there is none. Warm-up steps (eager decode steps before the first graph
// replay) are outside steps, kept apart from the prefill before them; a prefill that syncs
// once per layer repeats too, but with other units than the loop body's.
func warmupStart(segs []segment, k, first, e int) int {
	kernels := func(i int) int32 { return kernelsIn(segs[i : i+k]) }
	if e+k > len(segs) || segs[e].cut&cutGraph == 0 {
		return e // warm-up is eager work before the first graph replay: an eager loop has none
	}
	body := kernels(e) // a warm-up step runs the loop body's kernels, launched eagerly
	same := func(i, j int) bool {
		if kernels(i) != body || segs[i].cut&cutGraph != 0 {
			return false
		}
		for d := range k {
			if segs[i+d].sig != segs[j+d].sig {
				return false
			}
		}
		return true
	}
	for _, end := range []int{e, e - k} {
		w := end
		for w-2*k >= first && same(w-k, w-2*k) {
			w -= k
		}
		if w < end && w-k > first { // a run of two or more, with the prefill before it
			return w - k
		}
	}
	return e
}

// kernelsIn counts the kernels of segments.
// graphsIn sums the segments' graph work (segment.graphs).
func graphsIn(segs []segment) int32 {
	var n int32
	for _, s := range segs {
		n += s.graphs
	}
	return n
}

// spanOf is the GPU time from the first segment's start to the latest end among them.
func spanOf(segs []segment) time.Duration {
	var end nsys.Time
	for _, s := range segs {
		end = max(end, s.end)
	}
	return end.Sub(segs[0].start)
}

func kernelsIn(segs []segment) int32 {
	var n int32
	for _, s := range segs {
		n += s.kernels
	}
	return n
}

// maxStepSegments bounds the segments one step may hold (cuts per loop iteration).
const maxStepSegments = 1024

// findSteps finds a device's steps from the cut signals in use (cutSync|cutGraph|cutH2D
// for auto), falling back, when no grouping of segments repeats, to one step per segment
// (when most segments launch kernels); nil when neither finds steps.
func findSteps(t *nsys.Trace, h *HostIndex, tl *Timeline, use uint8) *Detection {
	raw, cc := segmentTimeline(t, h, tl, use)
	segs := mergeEmpty(slices.Clone(raw))
	if len(segs) < 3 {
		return nil
	}
	fwds := countForwards(segs)
	ends := forwardTimes(segs)
	sigs := make([]uint64, len(segs))
	for i, s := range segs {
		sigs[i] = s.sig
	}
	k, ok := findRepeat(sigs, maxStepSegments)
	var e, end int
	if ok {
		e, end, ok = alignRepeat(segs, sigs, k)
	}
	if ok {
		var added int
		if segs, added = splitDeep(segs, k, e); added > 0 {
			e, end = e+added, end+added
			fwds, ends = countForwards(segs), forwardTimes(segs)
		}
	}
	if ok {
		d := &Detection{Method: segmentMethod(segs, k, e), Bounds: groupSegments(segs, k, e, end), Detail: cc.describe(k), Forwards: ends}
		if fwds >= 2 {
			d.Bounds = groupRounds(segs, separateRequests(segs, splitForwards(segs, d.Bounds, segs[e].start)))
		}
		d.Detail += roundsDetail(d.Bounds)
		if d.steps() >= 2 {
			labelCuts(segs, d.Bounds)
			return d
		}
	}
	if fwds >= 2 {
		d := &Detection{Method: segmentMethod(segs, 1, 0), Detail: cc.describe(0), Bounds: groupRounds(segs, separateRequests(segs, forwardSteps(segs))), Forwards: ends}
		d.Detail += roundsDetail(d.Bounds)
		if d.steps() >= 2 {
			labelCuts(segs, d.Bounds)
			return d
		}
	}
	d := oneStepPerSegment(raw, cc)
	if d != nil {
		labelCuts(raw, d.Bounds)
	}
	return d
}

// labelCuts fills what started each boundary of segments (boundary.by) from the cut of the
// segment that starts there: the signals that cut it, after the forward end that split the
// window when it did (boundary.split); the device's first activity is the window's start.
func labelCuts(segs []segment, bounds []Boundary) {
	at := make(map[nsys.Time]uint8, len(segs))
	for i, s := range segs {
		c := s.cut
		if i == 0 {
			c = 1 << 7 // the first activity
		}
		if _, ok := at[s.start]; !ok {
			at[s.start] = c
		}
	}
	for i := range bounds {
		b := &bounds[i]
		if b.By != "" || b.Outside {
			continue
		}
		var ids []string
		if b.split {
			ids = append(ids, CutForwardEnd)
		}
		c, ok := at[b.Start]
		switch {
		case !ok:
		case c == 1<<7:
			ids = append(ids, CutWindowStart)
		default:
			if c&cutForward != 0 && !b.split {
				ids = append(ids, CutForwardEnd)
			}
			if c&cutReadBack != 0 {
				ids = append(ids, CutReadBack)
			} else if c&cutSync != 0 {
				ids = append(ids, CutSync)
			}
			if c&cutGraph != 0 {
				ids = append(ids, CutGraphLaunch)
			}
			if c&cutH2D != 0 {
				ids = append(ids, CutInputCopy)
			}
		}
		if len(ids) == 0 {
			ids = append(ids, CutForwardEnd) // a step that starts inside a segment
		}
		b.By = strings.Join(ids, "+")
	}
}

// splitDeep cuts each segment before the loop body (before e) that holds several forwards
// of the loop's depth with no host signal between them (eager warm-up iterations before the
// first graph replay, launched back to back): when the loop's unit of k segments from e runs
// D attention kernels per forward and a segment runs m*D (m >= 2) with a forward-end
// candidate (a sampler after a GEMM) after each D-th, the segment is cut there, after the
// last such candidate before the next forward's first attention kernel. It returns the
// segments and how many were added.
func splitDeep(segs []segment, k, e int) ([]segment, int) {
	if e+k > len(segs) {
		return segs, 0
	}
	var attn int32
	fwds := int32(0)
	for _, s := range segs[e : e+k] {
		attn += s.attn
		if s.fwd {
			fwds++
		}
	}
	depth := attn / max(fwds, 1)
	if depth == 0 {
		return segs, 0
	}
	var out []segment
	added := 0
	for i, s := range segs {
		if i >= e || s.attn < 2*depth || s.attn%depth != 0 {
			out = append(out, s)
			continue
		}
		m := s.attn / depth
		cuts := make([]fwdCand, 0, m-1)
		for j := int32(1); j < m; j++ {
			var at *fwdCand
			for ci := range s.cands {
				if s.cands[ci].attn == j*depth {
					at = &s.cands[ci]
				}
			}
			if at == nil {
				break
			}
			cuts = append(cuts, *at)
		}
		if int32(len(cuts)) != m-1 {
			out = append(out, s)
			continue
		}
		prev := fwdCand{at: s.start}
		for j, c := range cuts {
			p := segment{start: prev.at, end: max(c.end, prev.at), sig: c.sig - prev.sig, kernels: c.kernels - prev.kernels,
				attn: c.attn - prev.attn, cut: cutForward, sampler: true, fwd: true, fwdAt: c.sampler, kstart: prev.at}
			if j == 0 {
				p.cut, p.kstart, p.leadEnd = s.cut, s.kstart, s.leadEnd
			}
			out = append(out, p)
			prev = c
		}
		out = append(out, segment{start: prev.at, end: s.end, sig: s.sig - prev.sig, kernels: s.kernels - prev.kernels,
			attn: s.attn - prev.attn, cut: cutForward, sampler: s.sampler, fwd: s.fwd, fwdAt: s.fwdAt, kstart: prev.at})
		added += len(cuts)
	}
	return out, added
}

// segmentMethod names the signal that starts most steps of k segments from e on: graph
// launches or synchronisation.
func segmentMethod(segs []segment, k, e int) Method {
	graph, n := 0, 0
	for i := e; i+k <= len(segs); i += k {
		n++
		if segs[i].cut&cutGraph != 0 {
			graph++
		}
	}
	if 2*graph > n {
		return MethodGraph
	}
	return MethodSync
}

// oneStepPerSegment makes each segment a step, unless most of them launch no kernel (a
// sync inside the step, or copies on their own: those are not steps).
func oneStepPerSegment(segs []segment, cc cutCounts) *Detection {
	empty := 0
	for _, s := range segs {
		if s.kernels == 0 {
			empty++
		}
	}
	if 2*empty > len(segs) {
		return nil
	}
	d := &Detection{Method: segmentMethod(segs, 1, 0), Detail: cc.describe(1)}
	for _, s := range segs {
		// A segment of copies alone is not a step: it is in no step.
		d.Bounds = append(d.Bounds, Boundary{Start: s.start, Outside: s.kernels == 0})
	}
	return d
}

// steps returns the number of steps (boundaries not outside) of the detection.
func (d *Detection) steps() int {
	n := 0
	for _, b := range d.Bounds {
		if !b.Outside {
			n++
		}
	}
	return n
}
