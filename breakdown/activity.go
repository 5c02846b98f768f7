package breakdown

import (
	"math"
	"sort"
	"time"

	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// Activity sources.
const (
	srcKernel uint8 = iota
	srcMemop
	srcGraph
)

// An activity is one unit of GPU work on a device: a kernel, a memory operation or a
// graph execution traced at graph level.
type activity struct {
	start, end nsys.Time
	idx        int32 // index into the source slice of the trace
	corr       uint32
	proc       nsys.ProcID
	src        uint8
	cat        kernelclass.Category
	name       nsys.NameID // kernels only
	memKind    nsys.MemKind
}

// KernelCats gives kernels (index into Trace.Kernels) a category other than their name's:
// 0 for none, else the category plus one.
type KernelCats []uint8

// Category returns the category c gives kernel i, if any.
func (c KernelCats) Category(i int32) (kernelclass.Category, bool) {
	if c == nil || c[i] == 0 {
		return 0, false
	}
	return kernelclass.Category(c[i] - 1), true
}

// key identifies the host call that launched work: correlation ids are per process.
func actKey(proc nsys.ProcID, corr uint32) uint64 { return uint64(proc)<<32 | uint64(corr) }

func (a *activity) key() uint64 { return actKey(a.proc, a.corr) }

// A timeline gives the activities of one device in start order, merging the trace's
// kernels, memory operations and graph executions without copying them.
type timeline struct {
	t    *nsys.Trace
	dev  nsys.DeviceID
	cats []kernelclass.Category // category per kernel NameID
	// kernel gives kernels a category other than their name's (NVTX category rules, their
	// place in their step); nil when none does.
	kernel KernelCats
	// procSet caches procs().
	procSet []bool
	// done, when closed, stops every pass over the timeline within a few thousand
	// activities (Summarize's context); nil never stops.
	done <-chan struct{}
}

// cancelled reports whether done is closed.
func (tl *timeline) cancelled() bool {
	select {
	case <-tl.done:
		return true
	default:
		return false
	}
}

// each calls fn for every activity of the device in start order; fn returns false to stop.
func (tl *timeline) each(fn func(a *activity) bool) { tl.eachFrom(math.MinInt64, fn) }

// eachFrom is each for the activities that start at from or later.
func (tl *timeline) eachFrom(from nsys.Time, fn func(a *activity) bool) {
	ks, ms, gs, sites := tl.t.Kernels, tl.t.Memops, tl.t.Graphs, tl.t.Sites
	var i, j, k int
	if from != math.MinInt64 {
		i = sort.Search(len(ks), func(i int) bool { return ks[i].Start >= from })
		j = sort.Search(len(ms), func(j int) bool { return ms[j].Start >= from })
		k = sort.Search(len(gs), func(k int) bool { return gs[k].Start >= from })
	}
	var a activity
	for n := 1; ; n++ {
		if n&(1<<14-1) == 0 && tl.cancelled() {
			return
		}
		// Advance each source to its next activity on this device.
		for i < len(ks) && sites[ks[i].Site].Device != tl.dev {
			i++
		}
		for j < len(ms) && ms[j].Device != tl.dev {
			j++
		}
		for k < len(gs) && gs[k].Device != tl.dev {
			k++
		}
		best := -1
		var bs nsys.Time
		if i < len(ks) {
			best, bs = 0, ks[i].Start
		}
		if j < len(ms) && (best < 0 || ms[j].Start < bs) {
			best, bs = 1, ms[j].Start
		}
		if k < len(gs) && (best < 0 || gs[k].Start < bs) {
			best = 2
		}
		switch best {
		case -1:
			return
		case 0:
			tl.kernelAct(i, &a)
			i++
		case 1:
			tl.memopAct(j, &a)
			j++
		case 2:
			tl.graphAct(k, &a)
			k++
		}
		if !fn(&a) {
			return
		}
	}
}

func (tl *timeline) kernelAct(i int, a *activity) {
	kk := &tl.t.Kernels[i]
	st := &tl.t.Sites[kk.Site]
	*a = activity{start: kk.Start, end: kk.End, idx: int32(i), corr: kk.Correlation, proc: st.Proc,
		src: srcKernel, cat: tl.cats[st.Name], name: st.Name}
	if c, ok := tl.kernel.Category(int32(i)); ok {
		a.cat = c
	}
}

func (tl *timeline) memopAct(j int, a *activity) {
	m := &tl.t.Memops[j]
	*a = activity{start: m.Start, end: m.End, idx: int32(j), corr: m.Correlation, proc: m.Proc,
		src: srcMemop, cat: kernelclass.Memory, memKind: m.Kind}
}

func (tl *timeline) graphAct(k int, a *activity) {
	g := &tl.t.Graphs[k]
	*a = activity{start: g.Start, end: g.End, idx: int32(k), corr: g.Correlation, proc: g.Proc,
		src: srcGraph, cat: kernelclass.UntracedGraph}
}

// longest returns the longest duration of any kernel, memory operation or graph execution.
func longest(t *nsys.Trace) time.Duration {
	var d nsys.Time
	for i := range t.Kernels {
		d = max(d, t.Kernels[i].End-t.Kernels[i].Start)
	}
	for _, m := range t.Memops {
		d = max(d, m.End-m.Start)
	}
	for _, g := range t.Graphs {
		d = max(d, g.End-g.Start)
	}
	return time.Duration(d)
}

// runningAt returns the device's activities that start before at and end after it.
// longest bounds every activity's duration: only activities that start within it of at
// are looked at.
func (tl *timeline) runningAt(at nsys.Time, longest time.Duration) []activity {
	var out []activity
	var a activity
	from := at - nsys.Time(longest)
	ks := tl.t.Kernels
	for i := sort.Search(len(ks), func(i int) bool { return ks[i].Start >= at }) - 1; i >= 0 && ks[i].Start >= from; i-- {
		if ks[i].End > at && tl.t.Sites[ks[i].Site].Device == tl.dev {
			tl.kernelAct(i, &a)
			out = append(out, a)
		}
	}
	for j, m := range tl.t.Memops {
		if m.Start < at && m.End > at && m.Device == tl.dev {
			tl.memopAct(j, &a)
			out = append(out, a)
		}
	}
	for k, g := range tl.t.Graphs {
		if g.Start < at && g.End > at && g.Device == tl.dev {
			tl.graphAct(k, &a)
			out = append(out, a)
		}
	}
	return out
}

// procs returns, by ProcID, whether the process runs work on the device: kernels (from the
// trace's sites, without a pass over the kernels), memory operations or graph executions.
func (tl *timeline) procs() []bool {
	if tl.procSet == nil {
		// Size for every ProcID in use, even in traces built without Trace.Procs.
		n := len(tl.t.Procs)
		for _, w := range tl.t.Callers {
			n = max(n, int(w.Proc)+1)
		}
		tl.procSet = make([]bool, max(n, 1))
		mark := func(p nsys.ProcID) {
			if int(p) >= len(tl.procSet) {
				tl.procSet = append(tl.procSet, make([]bool, int(p)+1-len(tl.procSet))...)
			}
			tl.procSet[p] = true
		}
		for _, st := range tl.t.Sites {
			if st.Device == tl.dev {
				mark(st.Proc)
			}
		}
		for _, m := range tl.t.Memops {
			if m.Device == tl.dev {
				mark(m.Proc)
			}
		}
		for _, g := range tl.t.Graphs {
			if g.Device == tl.dev {
				mark(g.Proc)
			}
		}
	}
	return tl.procSet
}

// hasProc reports whether process p runs work on the device.
func (tl *timeline) hasProc(p nsys.ProcID) bool {
	ps := tl.procs()
	return int(p) < len(ps) && ps[p]
}
