package breakdown

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// A genTrace is a random timeline and the step option to analyse it with.
type genTrace struct {
	t    *nsys.Trace
	opt  Options
	desc string
}

// randomTimeline builds a random trace: 1-4 devices, 1-3 streams each that overlap,
// kernels of every category, memcpys and memsets, idle gaps of every size class, stray
// kernels without a launch call (also before the first step and overlapping it), a few
// zero-length activities, and step boundaries by NVTX ranges, synchronisation (D2H copy
// and cudaStreamSynchronize), CUDA graph launches (per node, or at graph level), or none.
func randomTimeline(tb testing.TB, seed uint64) genTrace {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := newTGen(tb)
	g.launchLat = nsys.Time(1000 + rng.IntN(4000))
	marker := []string{"nvtx", "sync", "graph", "graphexec", "none"}[rng.IntN(5)]
	ndev := 1 + rng.IntN(4)
	sharedThread := rng.IntN(3) == 0 // one host thread drives every device
	streams := []nsys.StreamID{7, 13, 21}
	dur := func() nsys.Time {
		switch r := rng.IntN(20); {
		case r == 0:
			return 0
		case r < 15:
			return nsys.Time(500 + rng.IntN(20_000))
		default:
			return nsys.Time(20_000 + rng.IntN(400_000))
		}
	}
	hostGap := func() nsys.Time {
		switch r := rng.IntN(20); {
		case r < 12:
			return nsys.Time(rng.IntN(8_000)) // < 10µs
		case r < 17:
			return nsys.Time(10_000 + rng.IntN(90_000)) // 10-100µs
		case r < 19:
			return nsys.Time(100_000 + rng.IntN(900_000)) // 100µs-1ms
		default:
			return nsys.Time(1_000_000 + rng.IntN(2_000_000)) // > 1ms
		}
	}
	var sharedH nsys.Time = nsys.Time(rng.IntN(1_000_000))
	for d := 0; d < ndev; d++ {
		dev := nsys.DeviceID(d)
		if ndev > 1 && rng.IntN(4) == 0 {
			dev = nsys.DeviceID(d * 2) // sparse device ids
		}
		thread := int64(100 + d)
		if sharedThread {
			thread = 100
		} else if rng.IntN(2) == 0 {
			g.threadIn(thread, int64(2000+d)) // one process per rank
		}
		ns := 1 + rng.IntN(3)
		free := map[nsys.StreamID]nsys.Time{}
		h := nsys.Time(rng.IntN(1_000_000))
		if sharedThread {
			h = sharedH
		}
		// Stray kernels before the first step, some still running when it starts.
		for i := rng.IntN(3); i > 0; i-- {
			s := h - nsys.Time(rng.IntN(200_000))
			g.kernelIn(thread, kspec{Cat: kernelCats[rng.IntN(len(kernelCats))], Dev: dev, Stream: streams[rng.IntN(ns)], Start: s, End: s + dur()})
		}
		nsteps := 1 + rng.IntN(6)
		// Without markers, half the devices repeat one kernel sequence every step (for
		// periodic step detection).
		var pattern []kernelclass.Category
		if marker == "none" && rng.IntN(2) == 0 {
			nsteps = 2 + rng.IntN(5)
			for i := 2 + rng.IntN(10); i > 0; i-- {
				pattern = append(pattern, kernelCats[rng.IntN(len(kernelCats))])
			}
		}
		for st := 0; st < nsteps; st++ {
			rs := h
			nk := 1 + rng.IntN(12)
			if pattern != nil {
				nk = len(pattern)
			}
			var graphKs []kspec
			graphAt := h
			for i := 0; i < nk; i++ {
				stream := streams[rng.IntN(ns)]
				start := max(h+g.launchLat+nsys.Time(rng.IntN(3000)), free[stream])
				if rng.IntN(8) == 0 { // a second stream overlapping work already queued
					start = h + g.launchLat
				}
				cat := kernelCats[rng.IntN(len(kernelCats))]
				if pattern != nil {
					cat = pattern[i]
				}
				s := kspec{Cat: cat, Dev: dev, Stream: stream, Start: start, End: start + dur()}
				free[stream] = max(free[stream], s.End)
				switch {
				case marker == "graph" && i > 0 && rng.IntN(4) != 0:
					graphKs = append(graphKs, s)
				case rng.IntN(10) == 0:
					g.kernelIn(thread, s) // no launch call seen
				default:
					g.launch(thread, h, s)
				}
				h += g.launchLat + hostGap()
				if rng.IntN(5) == 0 {
					kind := []nsys.MemKind{nsys.MemcpyHtoD, nsys.MemcpyDtoD, nsys.Memset}[rng.IntN(3)]
					ms := max(h+g.launchLat, free[stream])
					me := ms + nsys.Time(rng.IntN(5000))
					g.memcpy(thread, h, h+g.launchLat, kind, dev, stream, ms, me)
					free[stream] = max(free[stream], me)
					h += g.launchLat + hostGap()
				}
			}
			if len(graphKs) > 0 {
				g.graphLaunch(thread, graphAt, graphKs...)
			}
			if marker == "graphexec" {
				s := max(h+g.launchLat, free[streams[0]])
				e := s + nsys.Time(10_000+rng.IntN(500_000))
				g.graphExec(thread, h, dev, streams[0], s, e)
				free[streams[0]] = e
				h += g.launchLat + hostGap()
			}
			if marker == "sync" || (marker == "nvtx" && rng.IntN(2) == 0) {
				var last nsys.Time
				for _, f := range free {
					last = max(last, f)
				}
				ms := max(h+g.launchLat, last)
				me := ms + 2000
				g.memcpy(thread, h, h+g.launchLat, nsys.MemcpyDtoH, dev, streams[0], ms, me)
				free[streams[0]] = me
				g.sync(thread, h+g.launchLat, me+500)
				h = me + 500
			}
			h += hostGap()
			if marker == "nvtx" {
				text := fmt.Sprintf("decode_step %d", st)
				if st == 0 && rng.IntN(2) == 0 {
					text = "prefill"
				}
				g.nvtx(thread, rs, h, text)
			}
		}
		// Stray kernels after the last step.
		for i := rng.IntN(2); i > 0; i-- {
			s := h + nsys.Time(rng.IntN(200_000))
			g.kernelIn(thread, kspec{Cat: kernelCats[rng.IntN(len(kernelCats))], Dev: dev, Stream: streams[rng.IntN(ns)], Start: s, End: s + dur()})
		}
		if sharedThread {
			sharedH = h
		}
	}
	// The brute force classifies by name: context classification is checked elsewhere.
	opt := Options{NoContext: true}
	opt.Steps, _ = steps.ParseStepMethod([]string{"auto", "auto", "auto", "whole", "periodic", "sync", "graph", "nvtx", "nvtx:^decode"}[rng.IntN(9)])
	if opt.Steps.Method == MethodNVTX {
		if marker != "nvtx" {
			opt.Steps = StepMethod{Method: MethodAuto}
		}
	}
	opt.Skip = []int{0, 0, 0, 1, 2}[rng.IntN(5)]
	if rng.IntN(4) == 0 {
		opt.Phase = AllSteps
	}
	gt := genTrace{t: g.trace(), opt: opt, desc: fmt.Sprintf("seed %d: %d devices, markers %s, --steps %s --skip %d", seed, ndev, marker, opt.Steps, opt.Skip)}
	// A forced method (graph, sync, periodic) that finds no steps on any device fails, as
	// nvtx does (TestForcedMethodFindsNone); such a timeline is summarised as one step.
	var ns *NoStepsError
	if _, err := Summarize(gt.t, gt.opt); errors.As(err, &ns) && ns.Method == opt.Steps.Method {
		gt.opt.Steps = StepMethod{Method: MethodWhole}
		gt.desc += " (found no steps: whole)"
	}
	return gt
}

// act is an activity as the test sees it, straight from the trace.
type act struct {
	start, end nsys.Time
	cat        kernelclass.Category
	proc       nsys.ProcID
}

// deviceActs lists the device's kernels, memory operations and graph executions with
// their categories (kernels by the default classifier, memory operations as memory, graph
// executions as other), independently of the package's timeline.
func deviceActs(t *nsys.Trace, dev nsys.DeviceID, cls *kernelclass.Classifier) []act {
	var out []act
	for _, k := range t.Kernels {
		if st := t.SiteOf(k); st.Device == dev {
			c, _ := cls.Classify(t.Names[st.Name])
			out = append(out, act{k.Start, k.End, c, st.Proc})
		}
	}
	for _, m := range t.Memops {
		if m.Device == dev {
			out = append(out, act{m.Start, m.End, kernelclass.Memory, m.Proc})
		}
	}
	for _, gr := range t.Graphs {
		if gr.Device == dev {
			out = append(out, act{gr.Start, gr.End, kernelclass.UntracedGraph, gr.Proc})
		}
	}
	return out
}

// unionIn returns the length of the union of the activities' intervals inside [s, e),
// by merging sorted intervals.
func unionIn(acts []act, s, e nsys.Time) time.Duration {
	type iv struct{ a, b nsys.Time }
	var ivs []iv
	for _, x := range acts {
		a, b := max(x.start, s), min(x.end, e)
		if b > a {
			ivs = append(ivs, iv{a, b})
		}
	}
	slices.SortFunc(ivs, func(x, y iv) int { return cmp.Compare(x.a, y.a) })
	var total time.Duration
	var cur iv
	open := false
	for _, x := range ivs {
		if open && x.a <= cur.b {
			cur.b = max(cur.b, x.b)
			continue
		}
		if open {
			total += cur.b.Sub(cur.a)
		}
		cur, open = x, true
	}
	if open {
		total += cur.b.Sub(cur.a)
	}
	return total
}

// bruteStep is what a step should hold, computed by brute force over elementary intervals.
type bruteStep struct {
	excl, busy [kernelclass.NumCategories]time.Duration
	gaps       Gaps
}

// A bruteCall is an API call as bruteForce sees it.
type bruteCall struct {
	Start, End nsys.Time
	Kind       nsys.APIKind
}

// bruteForce accounts [s, e): it cuts the window at every activity's start and end, gives
// each piece to the highest-priority category running over all of it (or idle), and
// attributes idle pieces to the host calls that cover them.
func bruteForce(acts []act, calls []bruteCall, s, e nsys.Time) bruteStep {
	var b bruteStep
	pts := []nsys.Time{s, e}
	for _, x := range acts {
		if x.start > s && x.start < e {
			pts = append(pts, x.start)
		}
		if x.end > s && x.end < e {
			pts = append(pts, x.end)
		}
		if lo, hi := max(x.start, s), min(x.end, e); hi > lo {
			b.busy[x.cat] += hi.Sub(lo)
		}
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	for i := 0; i+1 < len(pts); i++ {
		a, z := pts[i], pts[i+1]
		owner := kernelclass.Idle
		for _, x := range acts {
			if x.start <= a && x.end >= z && x.end > x.start && x.cat.Priority() > owner.Priority() {
				owner = x.cat
			}
		}
		b.excl[owner] += z.Sub(a)
		if owner != kernelclass.Idle {
			continue
		}
		d := z.Sub(a)
		b.gaps.Count++
		b.gaps.Total += d
		b.gaps.Sizes[gapSizeOf(d)]++
		b.gaps.SizeNS[gapSizeOf(d)] += d
		// Host attribution: cut the gap at call boundaries; sync > copy > launch > none.
		hp := []nsys.Time{a, z}
		for _, c := range calls {
			if c.Start > a && c.Start < z {
				hp = append(hp, c.Start)
			}
			if c.End > a && c.End < z {
				hp = append(hp, c.End)
			}
		}
		slices.Sort(hp)
		hp = slices.Compact(hp)
		for j := 0; j+1 < len(hp); j++ {
			who, grp := HostNone, APINone
			for _, c := range calls {
				if c.Start <= hp[j] && c.End >= hp[j+1] {
					var hk HostActivity
					var g APIGroup
					switch c.Kind {
					case nsys.APISync:
						hk, g = HostSync, APISynchronizing
					case nsys.APIMemcpy, nsys.APIMemset:
						hk, g = HostCopy, APICopying
					case nsys.APIGraphLaunch:
						hk, g = HostLaunch, APIGraphLaunching
					case nsys.APILaunch:
						hk, g = HostLaunch, APILaunching
						if c.End.Sub(c.Start) >= time.Millisecond { // a launch that loads a module
							hk, g = HostNone, APIModuleLoading
						}
					case nsys.APIModule:
						hk, g = HostNone, APIModuleLoading
					case nsys.APIMemMgmt:
						hk, g = HostNone, APIMemoryManagement
					case nsys.APIMisc:
						hk, g = HostNone, APIOther
					default:
						hk, g = HostNone, APINone
					}
					who, grp = min(who, hk), min(grp, g)
				}
			}
			b.gaps.Host[who] += hp[j+1].Sub(hp[j])
			b.gaps.API[grp] += hp[j+1].Sub(hp[j])
			if gapSizeOf(d) != GapUnder10us {
				b.gaps.HostLong[who] += hp[j+1].Sub(hp[j])
				b.gaps.APILong[grp] += hp[j+1].Sub(hp[j])
			}
		}
	}
	b.busy[kernelclass.Idle] = b.excl[kernelclass.Idle] // documented: Busy[Idle] equals Exclusive[Idle]
	return b
}

// gapSizeOf is the test's own copy of the size classes of product.md.
func gapSizeOf(d time.Duration) int {
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

// checkInvariants checks every step of every device of rep against the trace.
func checkInvariants(t *testing.T, tr *nsys.Trace, rep *Report, opt Options) {
	t.Helper()
	cls := opt.Classifier
	if cls == nil {
		cls = kernelclass.DefaultClassifier()
	}
	for di := range rep.Devices {
		d := &rep.Devices[di]
		acts := deviceActs(tr, d.Device, cls)
		if d.Processes > 1 { // one loop per process on a shared device: its process's work only
			acts = slices.DeleteFunc(acts, func(x act) bool { return PIDOf(tr, x.proc) != d.PID })
		}
		procs := map[nsys.ProcID]bool{}
		var lastEnd nsys.Time
		for _, x := range acts {
			procs[x.proc] = true
			lastEnd = max(lastEnd, x.end)
		}
		// The launching threads: those of the device's processes that launch, copy,
		// memset or synchronize; only their calls explain idle time.
		launching := map[int64]bool{}
		for _, c := range tr.APICalls {
			w := tr.CallerOf(c)
			switch w.Kind {
			case nsys.APILaunch, nsys.APIGraphLaunch, nsys.APIMemcpy, nsys.APIMemset, nsys.APISync:
				if procs[w.Proc] {
					launching[w.Thread] = true
				}
			}
		}
		var calls []bruteCall
		for _, c := range tr.APICalls {
			if w := tr.CallerOf(c); procs[w.Proc] && launching[w.Thread] {
				calls = append(calls, bruteCall{c.Start, c.End, w.Kind})
			}
		}
		if len(d.Steps) == 0 && d.Skipped == 0 {
			t.Errorf("device %d: no steps", d.Device)
			continue
		}
		// Steps and the windows outside steps tile the timeline from the first step on.
		type window struct {
			start, end nsys.Time
			step       int // index into d.Steps; -1 outside
		}
		var ws []window
		for i, s := range d.Steps {
			ws = append(ws, window{s.Start, s.End, i})
		}
		for _, sp := range d.Outside.Spans {
			if len(d.Steps) > 0 && sp.Start >= d.Steps[0].Start {
				ws = append(ws, window{sp.Start, sp.End, -1})
			}
		}
		slices.SortFunc(ws, func(a, b window) int { return cmp.Compare(a.start, b.start) })
		lastWindow := map[int]bool{}
		for wi, w := range ws {
			if wi+1 < len(ws) && w.end != ws[wi+1].start {
				t.Errorf("device %d: window [%d, %d) ends where the next starts at %d", d.Device, w.start, w.end, ws[wi+1].start)
			}
			if wi == len(ws)-1 {
				lastWindow[w.step] = true
				if w.end != max(w.start, lastEnd) {
					t.Errorf("device %d: last window [%d, %d) ends at %d, want the device's last activity end %d", d.Device, w.start, w.end, w.end, max(w.start, lastEnd))
				}
			}
		}
		// Activity outside steps is counted there, none lost: per category, the activities
		// that start in the outside windows.
		var outWant [kernelclass.NumCategories]int
		for _, sp := range d.Outside.Spans {
			lastOut := len(ws) > 0 && ws[len(ws)-1].step == -1 && ws[len(ws)-1].start == sp.Start
			for _, x := range acts {
				if x.start >= sp.Start && (x.start < sp.End || (lastOut && x.start == sp.End)) {
					outWant[x.cat]++
				}
			}
		}
		if d.Skipped == 0 && d.Outside.Kernels != outWant {
			t.Errorf("device %d: outside kernels\n got %v\nwant %v", d.Device, d.Outside.Kernels, outWant)
		}
		var outSum time.Duration
		for _, v := range d.Outside.Exclusive {
			outSum += v
		}
		if outSum != d.Outside.Wall {
			t.Errorf("device %d: outside exclusive times sum to %d, want its wall %d", d.Device, outSum, d.Outside.Wall)
		}
		for i := range d.Steps {
			s := &d.Steps[i]
			where := fmt.Sprintf("device %d step %d [%d, %d)", d.Device, s.Index, s.Start, s.End)
			if s.Index != d.Skipped+i {
				t.Errorf("%s: index %d, want %d", where, s.Index, d.Skipped+i)
			}
			if s.End < s.Start {
				t.Errorf("%s: ends before it starts", where)
			}
			last := lastWindow[i]
			// 1. Exclusive time sums exactly to the wall time.
			var sum time.Duration
			for _, v := range s.Exclusive {
				sum += v
			}
			if sum != s.Wall() {
				t.Errorf("%s: exclusive times sum to %d, want wall %d (%v)", where, sum, s.Wall(), s.Exclusive)
			}
			// 2. Busy >= Exclusive per category.
			for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
				if s.Busy[c] < s.Exclusive[c] {
					t.Errorf("%s: %v busy %d < exclusive %d", where, c, s.Busy[c], s.Exclusive[c])
				}
			}
			// 3. Idle is the complement of the union of activity intervals in the window.
			if want := s.Wall() - unionIn(acts, s.Start, s.End); s.Exclusive[kernelclass.Idle] != want {
				t.Errorf("%s: idle %d, want wall - union = %d", where, s.Exclusive[kernelclass.Idle], want)
			}
			// 4. The whole accounting matches brute force: owners by priority, busy time,
			// gaps by size and by host activity.
			bf := bruteForce(acts, calls, s.Start, s.End)
			if s.Exclusive != bf.excl {
				t.Errorf("%s: exclusive\n got %v\nwant %v", where, s.Exclusive, bf.excl)
			}
			if s.Busy != bf.busy {
				t.Errorf("%s: busy\n got %v\nwant %v", where, s.Busy, bf.busy)
			}
			if s.Gaps != bf.gaps {
				t.Errorf("%s: gaps\n got %+v\nwant %+v", where, s.Gaps, bf.gaps)
			}
			// Gap totals equal idle time, per size class and per host activity.
			var n int
			var sz, host time.Duration
			for j := range s.Gaps.Sizes {
				n += s.Gaps.Sizes[j]
				sz += s.Gaps.SizeNS[j]
			}
			for _, v := range s.Gaps.Host {
				host += v
			}
			if s.Gaps.Total != s.Exclusive[kernelclass.Idle] || sz != s.Gaps.Total || host != s.Gaps.Total || n != s.Gaps.Count {
				t.Errorf("%s: gaps %+v do not add up to idle %d", where, s.Gaps, s.Exclusive[kernelclass.Idle])
			}
			// Kernel counts: activities that start in the window.
			var want [kernelclass.NumCategories]int
			for _, x := range acts {
				if x.start >= s.Start && (x.start < s.End || (last && x.start == s.End)) {
					want[x.cat]++
				}
			}
			if s.Kernels != want {
				t.Errorf("%s: kernels\n got %v\nwant %v", where, s.Kernels, want)
			}
		}
		if sm := &d.Summary; sm.Steps > 0 {
			var share float64
			for _, cs := range sm.Categories {
				share += cs.Share
			}
			if math.Abs(share-1) > 1e-9 {
				t.Errorf("device %d: summary shares add up to %v", d.Device, share)
			}
			// The decode table's statistic: the categories' means per step add up exactly
			// to the mean step, each within a nanosecond of its total / steps.
			steps, _, _ := SelectSteps(d.Steps, opt.Phase)
			// Outliers (over 3x the median step of their phase, among 4 steps or more of
			// it) are left out and listed apart.
			var outIdx []int
			walls := map[Phase][]time.Duration{}
			for i := range steps {
				walls[steps[i].Phase] = append(walls[steps[i].Phase], steps[i].Wall())
			}
			var kept []Step
			for i := range steps {
				ws := walls[steps[i].Phase]
				if len(ws) >= 4 && steps[i].Wall() > 3*Quantile(ws, 0.5) {
					outIdx = append(outIdx, steps[i].Index)
				} else {
					kept = append(kept, steps[i])
				}
			}
			steps = kept
			if !slices.Equal(outIdx, sm.Outliers.Steps) {
				t.Errorf("device %d: outliers %v, want %v", d.Device, sm.Outliers.Steps, outIdx)
			}
			var wall, sum time.Duration
			for i := range steps {
				wall += steps[i].Wall()
			}
			n := time.Duration(len(steps))
			for c, cs := range sm.Categories {
				sum += cs.Mean
				var tot time.Duration
				for i := range steps {
					tot += steps[i].Exclusive[c]
				}
				if off := cs.Mean - tot/n; off < 0 || off > 1 {
					t.Errorf("device %d: %v mean %d, total %d over %d steps", d.Device, kernelclass.Category(c), cs.Mean, tot, n)
				}
			}
			if sm.Mean != wall/n || sum != sm.Mean {
				t.Errorf("device %d: category means add up to %d, summary mean %d, mean wall %d", d.Device, sum, sm.Mean, wall/n)
			}
		}
	}
}

// TestPropertyAccounting checks the time-accounting invariants of product.md on random
// timelines: per device and step, exclusive time sums to the wall time, busy time is at
// least exclusive time, idle is the complement of the union of activity, the highest-
// priority category owns overlaps, and idle gaps add up to idle time.
func TestPropertyAccounting(t *testing.T) {
	n := 500
	if testing.Short() {
		n = 100
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		gt := randomTimeline(t, seed)
		rep, err := Summarize(gt.t, gt.opt)
		if err != nil {
			t.Errorf("%s: Summarize: %v", gt.desc, err)
			continue
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkInvariants(t, gt.t, rep, gt.opt)
			if t.Failed() {
				t.Logf("%s", gt.desc)
			}
		})
	}
}

// TestPriorityOverlap checks by hand that an all-reduce overlapping a GEMM on another
// stream owns the overlap, and that the priority order is the documented one.
func TestPriorityOverlap(t *testing.T) {
	g := newTGen(t)
	g.launch(1, 0, k(kernelclass.GEMM, 0, 7, 1000, 5000))
	g.launch(1, 10, k(kernelclass.AllReduce, 0, 13, 2000, 3000))
	rep := mustSummarize(t, g.trace(), Options{Steps: StepMethod{Method: MethodWhole}, NoContext: true})
	s := devReport(t, rep, 0).Steps[0]
	if s.Start != 1000 || s.End != 5000 {
		t.Fatalf("step [%d, %d), want [1000, 5000)", s.Start, s.End)
	}
	want := map[kernelclass.Category]time.Duration{kernelclass.GEMM: 3000, kernelclass.AllReduce: 1000}
	for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
		if s.Exclusive[c] != want[c] {
			t.Errorf("exclusive %v = %d, want %d", c, s.Exclusive[c], want[c])
		}
	}
	if s.Busy[kernelclass.GEMM] != 4000 || s.Busy[kernelclass.AllReduce] != 1000 {
		t.Errorf("busy gemm %d allreduce %d, want 4000 and 1000", s.Busy[kernelclass.GEMM], s.Busy[kernelclass.AllReduce])
	}

	// The documented order, highest first.
	order := []kernelclass.Category{kernelclass.AllReduce, kernelclass.Collective, kernelclass.Attention, kernelclass.MoEExpert, kernelclass.GEMM, kernelclass.MoERouting, kernelclass.Sampling, kernelclass.Elementwise, kernelclass.Other, kernelclass.UntracedGraph, kernelclass.Memory, kernelclass.Idle}
	for i := 1; i < len(order); i++ {
		if order[i-1].Priority() <= order[i].Priority() {
			t.Errorf("priority of %v (%d) not above %v (%d)", order[i-1], order[i-1].Priority(), order[i], order[i].Priority())
		}
	}
	// Every pair: the higher one owns the overlap, whichever stream started first.
	cats := append(slices.Clone(kernelCats), kernelclass.Memory, kernelclass.UntracedGraph)
	for _, hi := range cats {
		for _, lo := range cats {
			if hi.Priority() <= lo.Priority() {
				continue
			}
			for _, hiFirst := range []bool{false, true} {
				g := newTGen(t)
				add := func(c kernelclass.Category, s, e nsys.Time, stream nsys.StreamID) {
					switch c {
					case kernelclass.Memory:
						g.memcpy(1, s-10, s-5, nsys.MemcpyDtoD, 0, stream, s, e)
					case kernelclass.UntracedGraph: // a graph replay traced at graph level
						g.graphExec(1, s-10, 0, stream, s, e)
					default:
						g.launch(1, s-10, k(c, 0, stream, s, e))
					}
				}
				if hiFirst {
					add(hi, 100, 300, 1)
					add(lo, 200, 400, 2)
				} else {
					add(lo, 100, 300, 2)
					add(hi, 200, 400, 1)
				}
				s := mustSummarize(t, g.trace(), Options{Steps: StepMethod{Method: MethodWhole}, NoContext: true}).Devices[0].Steps[0]
				if s.Exclusive[hi] != 200 || s.Exclusive[lo] != 100 || s.Wall() != 300 {
					t.Errorf("%v over %v (high first: %v): exclusive %v %d, %v %d, wall %d; want 200, 100, 300",
						hi, lo, hiFirst, hi, s.Exclusive[hi], lo, s.Exclusive[lo], s.Wall())
				}
			}
		}
	}
}

// TestAccountingEdges checks hand-built cases that random timelines hit rarely.
func TestAccountingEdges(t *testing.T) {
	t.Run("zero-length kernels", func(t *testing.T) {
		g := newTGen(t)
		g.launch(1, 0, k(kernelclass.GEMM, 0, 7, 100, 100))
		g.launch(1, 10, k(kernelclass.GEMM, 0, 7, 200, 300))
		g.launch(1, 20, k(kernelclass.Elementwise, 0, 7, 300, 300))
		tr := g.trace()
		rep := mustSummarize(t, tr, Options{Steps: StepMethod{Method: MethodWhole}, NoContext: true})
		checkInvariants(t, tr, rep, Options{})
		s := rep.Devices[0].Steps[0]
		if s.Wall() != 200 || s.Exclusive[kernelclass.GEMM] != 100 || s.Exclusive[kernelclass.Idle] != 100 || s.Kernels[kernelclass.GEMM] != 2 || s.Kernels[kernelclass.Elementwise] != 1 {
			t.Errorf("step %+v", s)
		}
	})
	t.Run("same start on two streams", func(t *testing.T) {
		g := newTGen(t)
		g.launch(1, 0, k(kernelclass.Elementwise, 0, 7, 100, 400))
		g.launch(1, 0, k(kernelclass.Attention, 0, 13, 100, 200))
		g.launch(1, 0, k(kernelclass.Sampling, 0, 21, 100, 300))
		tr := g.trace()
		rep := mustSummarize(t, tr, Options{Steps: StepMethod{Method: MethodWhole}, NoContext: true})
		checkInvariants(t, tr, rep, Options{})
		s := rep.Devices[0].Steps[0]
		if s.Exclusive[kernelclass.Attention] != 100 || s.Exclusive[kernelclass.Sampling] != 100 || s.Exclusive[kernelclass.Elementwise] != 100 {
			t.Errorf("exclusive %v", s.Exclusive)
		}
	})
	t.Run("kernel before the first step overlaps it", func(t *testing.T) {
		// An NVTX step starts at the first kernel its range launched; a long kernel
		// launched earlier, outside any step range, is still running then.
		g := newTGen(t)
		g.launch(1, 0, k(kernelclass.GEMM, 0, 7, 100, 5000))
		for i := 0; i < 2; i++ {
			base := nsys.Time(1000 + 3000*i)
			g.nvtx(1, base, base+2000, fmt.Sprintf("decode_step %d", i))
			g.launch(1, base+10, k(kernelclass.Elementwise, 0, 13, base+500, base+1500))
		}
		tr := g.trace()
		rep := mustSummarize(t, tr, Options{})
		d := devReport(t, rep, 0)
		if d.Method != MethodNVTX {
			t.Fatalf("method %v, want nvtx", d.Method)
		}
		checkInvariants(t, tr, rep, Options{})
	})
	t.Run("memcpy before the first kernel with periodic steps", func(t *testing.T) {
		g := newTGen(t)
		g.memcpy(1, 0, 10, nsys.MemcpyHtoD, 0, 7, 50, 10_000)
		at := nsys.Time(100)
		for i := 0; i < 4; i++ {
			for _, c := range []kernelclass.Category{kernelclass.GEMM, kernelclass.Attention, kernelclass.Elementwise} {
				g.launch(1, at, k(c, 0, 13, at+10, at+100))
				at += 200
			}
			at += 50_000
		}
		tr := g.trace()
		rep := mustSummarize(t, tr, Options{Steps: StepMethod{Method: MethodPeriodic}})
		if m := devReport(t, rep, 0).Method; m != MethodPeriodic {
			t.Fatalf("method %v, want periodic", m)
		}
		checkInvariants(t, tr, rep, Options{})
	})
	t.Run("graph-level execution", func(t *testing.T) {
		g := newTGen(t)
		for i := 0; i < 3; i++ {
			at := nsys.Time(i * 10_000)
			g.graphExec(1, at, 0, 7, at+100, at+5000)
			g.launch(1, at+50, k(kernelclass.AllReduce, 0, 13, at+1000, at+2000))
		}
		tr := g.trace()
		rep := mustSummarize(t, tr, Options{})
		d := devReport(t, rep, 0)
		if d.Method != MethodGraph || len(d.Steps) != 3 {
			t.Fatalf("method %v with %d steps, want graph with 3", d.Method, len(d.Steps))
		}
		checkInvariants(t, tr, rep, Options{})
		for _, s := range d.Steps {
			if s.Launches != 2 || s.Exclusive[kernelclass.AllReduce] != 1000 || s.Exclusive[kernelclass.UntracedGraph] != 3900 {
				t.Errorf("step %d: launches %d, exclusive %v", s.Index, s.Launches, s.Exclusive)
			}
		}
	})
}
