package steps

import (
	"math"
	"sort"
	"time"

	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// Activity sources.
const (
	SrcKernel uint8 = iota
	SrcMemop
	SrcGraph
)

// An Activity is one unit of GPU work on a device: a kernel, a memory operation or a
// graph execution traced at graph level.
type Activity struct {
	Start, End nsys.Time
	Idx        int32 // index into the source slice of the trace
	corr       uint32
	proc       nsys.ProcID
	Src        uint8
	Cat        kernelclass.Category
	Name       nsys.NameID // kernels only
	MemKind    nsys.MemKind
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

// actKey identifies the host call that launched work: correlation ids are per process.
func actKey(proc nsys.ProcID, corr uint32) uint64 { return uint64(proc)<<32 | uint64(corr) }

// Key identifies the host call that launched a.
func (a *Activity) Key() uint64 { return actKey(a.proc, a.corr) }

// A Timeline gives the activities of one device in start order, merging the trace's
// kernels, memory operations and graph executions without copying them.
type Timeline struct {
	Trace *nsys.Trace
	Dev   nsys.DeviceID
	// OneProc keeps the timeline to the work of process Proc on the device: a device
	// shared by several processes (two servers, a draft server beside its target) has one
	// timeline, and so one loop, per process (breakdown/procs.go); Sharers counts the
	// processes with work on the device then.
	OneProc bool
	Proc    nsys.ProcID
	Sharers int
	Cats    []kernelclass.Category // category per kernel NameID
	// Kernel gives kernels a category other than their name's (NVTX category rules, their
	// place in their step); nil when none does.
	Kernel KernelCats
	// procSet caches procs().
	procSet []bool
	// Done, when closed, stops every pass over the timeline within a few thousand
	// activities (Summarize's context); nil never stops.
	Done <-chan struct{}
	// rows, when set (IndexRows), lists the timeline's own kernels, memory operations and
	// graph executions (Owns), so that a pass walks them and not every device's.
	rows *deviceRows
}

// deviceRows are the indexes, in the trace's arrays, of one device's kernels, memory
// operations and graph executions, in array (start) order.
type deviceRows struct{ k, m, g []int32 }

// IndexRows lists each timeline's own rows (Owns) in one pass over the trace's arrays,
// for timelines of one trace: without it, each timeline's passes walk every device's
// rows, a cost of devices x rows (quadratic in the files of a run). With one timeline it
// does nothing: its passes walk its rows either way.
func IndexRows(tls []*Timeline) {
	if len(tls) < 2 {
		return
	}
	t := tls[0].Trace
	byDev := map[nsys.DeviceID][]*Timeline{}
	for _, tl := range tls {
		tl.rows = &deviceRows{}
		byDev[tl.Dev] = append(byDev[tl.Dev], tl)
	}
	add := func(dev nsys.DeviceID, p nsys.ProcID, i int, list func(*deviceRows) *[]int32) {
		for _, tl := range byDev[dev] {
			if tl.Owns(dev, p) {
				l := list(tl.rows)
				*l = append(*l, int32(i))
			}
		}
	}
	for i := range t.Kernels {
		st := &t.Sites[t.Kernels[i].Site]
		add(st.Device, st.Proc, i, func(r *deviceRows) *[]int32 { return &r.k })
	}
	for i := range t.Memops {
		add(t.Memops[i].Device, t.Memops[i].Proc, i, func(r *deviceRows) *[]int32 { return &r.m })
	}
	for i := range t.Graphs {
		add(t.Graphs[i].Device, t.Graphs[i].Proc, i, func(r *deviceRows) *[]int32 { return &r.g })
	}
}

// Cancelled reports whether Done is closed.
func (tl *Timeline) Cancelled() bool {
	select {
	case <-tl.Done:
		return true
	default:
		return false
	}
}

// Each calls fn for every activity of the device in start order; fn returns false to stop.
func (tl *Timeline) Each(fn func(a *Activity) bool) { tl.EachFrom(math.MinInt64, fn) }

// EachFrom is Each for the activities that start at from or later.
func (tl *Timeline) EachFrom(from nsys.Time, fn func(a *Activity) bool) {
	if tl.rows != nil {
		tl.eachIndexed(from, fn)
		return
	}
	ks, ms, gs, sites := tl.Trace.Kernels, tl.Trace.Memops, tl.Trace.Graphs, tl.Trace.Sites
	var i, j, k int
	if from != math.MinInt64 {
		i = sort.Search(len(ks), func(i int) bool { return ks[i].Start >= from })
		j = sort.Search(len(ms), func(j int) bool { return ms[j].Start >= from })
		k = sort.Search(len(gs), func(k int) bool { return gs[k].Start >= from })
	}
	var a Activity
	for n := 1; ; n++ {
		if n&(1<<14-1) == 0 && tl.Cancelled() {
			return
		}
		// Advance each source to its next activity on this device.
		for i < len(ks) && !tl.Owns(sites[ks[i].Site].Device, sites[ks[i].Site].Proc) {
			i++
		}
		for j < len(ms) && !tl.Owns(ms[j].Device, ms[j].Proc) {
			j++
		}
		for k < len(gs) && !tl.Owns(gs[k].Device, gs[k].Proc) {
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

// eachIndexed is EachFrom over the device's own rows (IndexRows), in the same order:
// by start, a kernel before a memory operation before a graph execution of one start.
func (tl *Timeline) eachIndexed(from nsys.Time, fn func(a *Activity) bool) {
	ks, ms, gs := tl.Trace.Kernels, tl.Trace.Memops, tl.Trace.Graphs
	rk, rm, rg := tl.rows.k, tl.rows.m, tl.rows.g
	var i, j, k int
	if from != math.MinInt64 {
		i = sort.Search(len(rk), func(i int) bool { return ks[rk[i]].Start >= from })
		j = sort.Search(len(rm), func(j int) bool { return ms[rm[j]].Start >= from })
		k = sort.Search(len(rg), func(k int) bool { return gs[rg[k]].Start >= from })
	}
	var a Activity
	for n := 1; ; n++ {
		if n&(1<<14-1) == 0 && tl.Cancelled() {
			return
		}
		best := -1
		var bs nsys.Time
		if i < len(rk) {
			best, bs = 0, ks[rk[i]].Start
		}
		if j < len(rm) && (best < 0 || ms[rm[j]].Start < bs) {
			best, bs = 1, ms[rm[j]].Start
		}
		if k < len(rg) && (best < 0 || gs[rg[k]].Start < bs) {
			best = 2
		}
		switch best {
		case -1:
			return
		case 0:
			tl.kernelAct(int(rk[i]), &a)
			i++
		case 1:
			tl.memopAct(int(rm[j]), &a)
			j++
		case 2:
			tl.graphAct(int(rg[k]), &a)
			k++
		}
		if !fn(&a) {
			return
		}
	}
}

func (tl *Timeline) kernelAct(i int, a *Activity) {
	kk := &tl.Trace.Kernels[i]
	st := &tl.Trace.Sites[kk.Site]
	*a = Activity{Start: kk.Start, End: kk.End, Idx: int32(i), corr: kk.Correlation, proc: st.Proc,
		Src: SrcKernel, Cat: tl.Cats[st.Name], Name: st.Name}
	if c, ok := tl.Kernel.Category(int32(i)); ok {
		a.Cat = c
	}
}

func (tl *Timeline) memopAct(j int, a *Activity) {
	m := &tl.Trace.Memops[j]
	*a = Activity{Start: m.Start, End: m.End, Idx: int32(j), corr: m.Correlation, proc: m.Proc,
		Src: SrcMemop, Cat: kernelclass.Memory, MemKind: m.Kind}
}

func (tl *Timeline) graphAct(k int, a *Activity) {
	g := &tl.Trace.Graphs[k]
	*a = Activity{Start: g.Start, End: g.End, Idx: int32(k), corr: g.Correlation, proc: g.Proc,
		Src: SrcGraph, Cat: kernelclass.UntracedGraph}
}

// Longest returns the longest duration of any kernel, memory operation or graph execution.
func Longest(t *nsys.Trace) time.Duration {
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

// RunningAt returns the device's activities that start before at and end after it.
// longest bounds every activity's duration: only activities that start within it of at
// are looked at.
func (tl *Timeline) RunningAt(at nsys.Time, longest time.Duration) []Activity {
	var out []Activity
	var a Activity
	from := at - nsys.Time(longest)
	ks := tl.Trace.Kernels
	for i := sort.Search(len(ks), func(i int) bool { return ks[i].Start >= at }) - 1; i >= 0 && ks[i].Start >= from; i-- {
		if st := &tl.Trace.Sites[ks[i].Site]; ks[i].End > at && tl.Owns(st.Device, st.Proc) {
			tl.kernelAct(i, &a)
			out = append(out, a)
		}
	}
	for j, m := range tl.Trace.Memops {
		if m.Start < at && m.End > at && tl.Owns(m.Device, m.Proc) {
			tl.memopAct(j, &a)
			out = append(out, a)
		}
	}
	for k, g := range tl.Trace.Graphs {
		if g.Start < at && g.End > at && tl.Owns(g.Device, g.Proc) {
			tl.graphAct(k, &a)
			out = append(out, a)
		}
	}
	return out
}

// Owns reports whether work of process p on device dev is on the timeline.
func (tl *Timeline) Owns(dev nsys.DeviceID, p nsys.ProcID) bool {
	return dev == tl.Dev && (!tl.OneProc || p == tl.Proc)
}

// Procs returns, by ProcID, whether the process runs work on the device: kernels (from the
// trace's sites, without a pass over the kernels), memory operations or graph executions.
func (tl *Timeline) Procs() []bool {
	if tl.procSet == nil {
		// Size for every ProcID in use, even in traces built without Trace.Procs.
		n := len(tl.Trace.Procs)
		for _, w := range tl.Trace.Callers {
			n = max(n, int(w.Proc)+1)
		}
		tl.procSet = make([]bool, max(n, 1))
		mark := func(p nsys.ProcID) {
			if int(p) >= len(tl.procSet) {
				tl.procSet = append(tl.procSet, make([]bool, int(p)+1-len(tl.procSet))...)
			}
			tl.procSet[p] = true
		}
		for _, st := range tl.Trace.Sites {
			if tl.Owns(st.Device, st.Proc) {
				mark(st.Proc)
			}
		}
		for _, m := range tl.Trace.Memops {
			if tl.Owns(m.Device, m.Proc) {
				mark(m.Proc)
			}
		}
		for _, g := range tl.Trace.Graphs {
			if tl.Owns(g.Device, g.Proc) {
				mark(g.Proc)
			}
		}
	}
	return tl.procSet
}

// HasProc reports whether process p runs work on the device.
func (tl *Timeline) HasProc(p nsys.ProcID) bool {
	ps := tl.Procs()
	return int(p) < len(ps) && ps[p]
}
