package breakdown

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// GraphReplayName is the name of the StepKernels row of graph replays traced at graph level
// (nsys --cuda-graph-trace=graph): their kernels have no rows, so they count as one.
const GraphReplayName = "CUDA graph replays (traced at graph level)"

// summarisedWindows returns the windows of the steps a device's summary covers: the
// phase selected (Summary.Selected), outliers left out (Summary.Outliers), in time order.
func summarisedWindows(steps []Step, sum *Summary) []Span {
	out := map[int]bool{}
	for _, i := range sum.Outliers.Steps {
		out[i] = true
	}
	ws := make([]Span, 0, len(sum.Selected))
	for _, k := range sum.Selected {
		if s := &steps[k]; !out[s.Index] {
			ws = append(ws, Span{s.Start, s.End})
		}
	}
	return ws
}

// stepKernels totals the device's GPU work per name and category over the windows, each
// activity's time clipped to the windows as Step.Busy is (so the totals add up to the
// windows' busy time of every category but idle), counting an activity in the window it
// starts in (as Step.Kernels). Kernels are rows by name; memory operations by kind ("[CUDA
// memcpy HtoD]"); graph replays traced at graph level one row, GraphReplayName.
func stepKernels(t *nsys.Trace, tl *steps.Timeline, ws []Span, split func(steps, kernels int) []int) []KernelStat {
	if len(ws) == 0 {
		return nil
	}
	if split == nil {
		split = splitSteps
	}
	// Long timelines are read in pieces at once, by the activities' start (from window
	// starts on), and the pieces' counts and times summed: the same whatever the pieces.
	firsts := pieceFirsts(split(len(ws), len(t.Kernels)), len(ws))
	if !slices.IsSortedFunc(ws, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) }) {
		firsts = firsts[:1]
	}
	pers := make([]map[kernelKey]*kernelAcc, len(firsts))
	last := ws[len(ws)-1].End
	inPieces(firsts, len(ws), func(p, lo, hi int) {
		per := map[kernelKey]*kernelAcc{}
		from, until := nsys.Time(math.MinInt64), last
		if lo > 0 {
			from = ws[lo].Start
		}
		if hi < len(ws) {
			until = min(until, ws[hi].Start)
		}
		tl.EachFrom(from, func(a *steps.Activity) bool {
			if a.Start >= until {
				return false
			}
			d, counted := inWindows(ws, a)
			if d == 0 && !counted {
				return true
			}
			k := kernelKey{src: a.Src, cat: a.Cat}
			switch a.Src {
			case steps.SrcKernel:
				k.name = a.Name
			case steps.SrcMemop:
				k.mem = a.MemKind
			}
			x := per[k]
			if x == nil {
				x = &kernelAcc{}
				per[k] = x
			}
			if counted {
				x.n++
			}
			x.total += d
			return true
		})
		pers[p] = per
	})
	per := pers[0]
	for _, o := range pers[1:] {
		for k, x := range o {
			if y := per[k]; y != nil {
				y.n += x.n
				y.total += x.total
			} else {
				per[k] = x
			}
		}
	}
	return windowKernelStats(t, per)
}

// kernelKey is a StepKernels row: a kernel name, a memory operation kind or graph replays,
// with its category.
type kernelKey struct {
	src  uint8
	name nsys.NameID
	mem  nsys.MemKind
	cat  kernelclass.Category
}

// kernelAcc is a row's count and time.
type kernelAcc struct {
	n     int
	total time.Duration
}

// inWindows returns the activity's time inside the windows (in start order, each
// clipped) and whether it starts in one of them.
func inWindows(ws []Span, a *steps.Activity) (d time.Duration, counted bool) {
	// The first window that ends after the activity starts.
	j := sort.Search(len(ws), func(j int) bool { return ws[j].End > a.Start })
	for ; j < len(ws) && ws[j].Start < a.End; j++ {
		s, e := max(a.Start, ws[j].Start), min(a.End, ws[j].End)
		if e > s {
			d += e.Sub(s)
		}
		if a.Start >= ws[j].Start && a.Start < ws[j].End {
			counted = true
		}
	}
	return d, counted
}

// windowKernelStats turns the rows into KernelStats, named and sorted.
func windowKernelStats(t *nsys.Trace, per map[kernelKey]*kernelAcc) []KernelStat {
	out := make([]KernelStat, 0, len(per))
	for k, x := range per {
		ks := KernelStat{Category: k.cat, Count: x.n, Total: x.total}
		switch k.src {
		case steps.SrcKernel:
			ks.Name = t.Names[k.name]
			if nk, ok := kernelclass.DecodeNCCL(ks.Name); ok {
				ks.NCCL = &nk
			}
		case steps.SrcMemop:
			ks.Name = "[CUDA " + k.mem.String() + "]"
		case steps.SrcGraph:
			ks.Name = GraphReplayName
		}
		out = append(out, ks)
	}
	sortKernelStats(out)
	return out
}

// mergeKernelStats sums per-device tables by name and category, sorted as KernelStats.
func mergeKernelStats(tables ...[]KernelStat) []KernelStat {
	type key struct {
		name string
		cat  kernelclass.Category
	}
	at := map[key]int{}
	var out []KernelStat
	for _, tab := range tables {
		for _, ks := range tab {
			k := key{ks.Name, ks.Category}
			if i, ok := at[k]; ok {
				out[i].Count += ks.Count
				out[i].Total += ks.Total
				continue
			}
			at[k] = len(out)
			out = append(out, ks)
		}
	}
	sortKernelStats(out)
	return out
}
