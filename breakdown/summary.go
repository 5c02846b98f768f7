package breakdown

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// SelectSteps returns the steps a summary covers: those of the phase selected, or all
// steps (phase Unknown); never a window edge's piece (Partial) or a graph capture
// iteration other than a prefill. When no step has the phase, it returns every step (but those) and an error
// saying so.
func SelectSteps(steps []Step, sel PhaseSelection) ([]Step, Phase, error) {
	want := sel.Phase()
	in := func(s *Step) bool { return summarised(s, want) }
	n := 0
	for i := range steps {
		if in(&steps[i]) {
			n++
		}
	}
	if n == len(steps) {
		return steps, want, nil // every step has the phase: no copy
	}
	out := make([]Step, 0, n) // steps are large: copy each once
	for i := range steps {
		if in(&steps[i]) {
			out = append(out, steps[i])
		}
	}
	if want == Unknown {
		return out, Unknown, nil
	}
	if len(out) == 0 && len(steps) > 0 {
		all, _, _ := SelectSteps(steps, AllSteps)
		return all, Unknown, fmt.Errorf("no %s steps; summarising all %d steps", want, len(all))
	}
	return out, want, nil
}

// SummarizeSteps summarises the steps of the phase sel selects as Summarize does for a
// device (for callers that build steps themselves, such as render's tests). The error is
// SelectSteps's.
func SummarizeSteps(steps []Step, sel PhaseSelection) (Summary, error) {
	return summarize(steps, Options{Phase: sel})
}

// OutlierFactor: a step of the summarised phase longer than this many times the phase's
// median step is an outlier, left out of the summary (and so of the decode table and the
// findings) and reported apart (Summary.Outliers).
const OutlierFactor = 3

// OutlierMinSteps is the fewest steps of a phase among which outliers are looked for: the
// median of fewer says nothing about what is usual.
const OutlierMinSteps = 4

// SummarisedSteps returns the positions in steps (a device's steps, after Options.Skip)
// of the steps a summary of phase p covers (Unknown: every phase), and of the outliers it
// leaves out: the one choice of steps that report's summary and diff's comparison
// (package compare) both make. A step is covered when it has the phase and is neither a
// window edge's piece (Partial) nor a graph capture iteration other than a prefill
// (summarised); among those, a step longer than OutlierFactor times the median step of its
// phase (each phase apart, among OutlierMinSteps or more) is an outlier. kept and outliers
// are in order; their union is the covered steps.
func SummarisedSteps(steps []Step, p Phase) (kept, outliers []int) {
	sel := positions(steps, p)
	var byPhase [Decode + 2][]time.Duration
	for _, i := range sel {
		ph := min(int(steps[i].Phase), len(byPhase)-1)
		byPhase[ph] = append(byPhase[ph], steps[i].Wall())
	}
	var limits [len(byPhase)]time.Duration
	for ph, ws := range byPhase {
		limits[ph] = -1 // no outliers among too few steps
		if len(ws) >= OutlierMinSteps {
			limits[ph] = OutlierFactor * Quantile(ws, 0.5)
		}
	}
	kept = make([]int, 0, len(sel))
	for _, i := range sel {
		ph := min(int(steps[i].Phase), len(byPhase)-1)
		if limits[ph] > 0 && steps[i].Wall() > limits[ph] {
			outliers = append(outliers, i)
		} else {
			kept = append(kept, i)
		}
	}
	return kept, outliers
}

// outliersOf describes the outliers (positions in steps, SummarisedSteps'); Median and
// Limit are those of the first outlier's phase among the covered steps sel.
func outliersOf(steps []Step, sel, outliers []int) Outliers {
	var out Outliers
	if len(outliers) == 0 {
		return out
	}
	first := steps[outliers[0]].Phase
	var walls []time.Duration
	for _, i := range sel {
		if min(int(steps[i].Phase), int(Decode)+1) == min(int(first), int(Decode)+1) {
			walls = append(walls, steps[i].Wall())
		}
	}
	out.Median = Quantile(walls, 0.5)
	out.Limit = OutlierFactor * out.Median
	for _, i := range outliers {
		s := &steps[i]
		w := s.Wall()
		out.Steps = append(out.Steps, s.Index)
		out.Wall += w
		out.Idle += s.Exclusive[kernelclass.Idle]
		out.Longest = max(out.Longest, w)
		out.Gaps.add(&s.Gaps)
		if s.LongGap.Dur() > out.LongGap.Dur() {
			out.LongGap = s.LongGap
		}
	}
	return out
}

// StallGap is the length from which a step's longest idle gap counts as a stall (Summary.Stall).
const StallGap = time.Millisecond

// stallOf finds the recurring stall of steps: among the steps whose longest idle gap is
// StallGap or longer and ends at a kernel, the category of kernel that most of them wait
// for (ties: the longer total, then the lower category), with those gaps summed; Kernel is
// the most frequent kernel among them (ties: the lower name id).
func stallOf(steps []Step) Stall {
	type acc struct {
		n     int
		total time.Duration
	}
	var by [kernelclass.NumCategories]acc
	long := func(g *Gap) bool { return g.Dur() >= StallGap && g.Next != NoKernel }
	for i := range steps {
		if g := &steps[i].LongGap; long(g) {
			by[g.NextCat].n++
			by[g.NextCat].total += g.Dur()
		}
	}
	st := Stall{Kernel: NoKernel}
	best := -1
	for c := range by {
		if a := by[c]; a.n > 0 && (best < 0 || a.n > by[best].n || (a.n == by[best].n && a.total > by[best].total)) {
			best = c
		}
	}
	if best < 0 {
		return st
	}
	st.Category = kernelclass.Category(best)
	names := map[nsys.NameID]int{}
	for i := range steps {
		g := &steps[i].LongGap
		if !long(g) || g.NextCat != st.Category {
			continue
		}
		st.Steps++
		st.Total += g.Dur()
		for j, x := range g.API {
			st.API[j] += x
		}
		names[g.Next]++
	}
	for k, n := range names {
		if st.Kernel == NoKernel || n > names[st.Kernel] || (n == names[st.Kernel] && k < st.Kernel) {
			st.Kernel = k
		}
	}
	return st
}

// SelectedSteps returns the steps of Selected from steps, the steps summarised (the
// device's Steps): steps itself when every step is selected.
func (s *Summary) SelectedSteps(steps []Step) []Step {
	if len(s.Selected) == len(steps) {
		return steps
	}
	out := make([]Step, len(s.Selected)) // steps are large: copy each once
	for i, k := range s.Selected {
		out[i] = steps[k]
	}
	return out
}

// summarised reports whether a summary of phase want (Unknown: every phase) covers step s.
// A window edge's piece is no step of any summary, and a graph capture iteration none but
// the prefill's (a prefill that instantiates its graph, as XLA's first call does, is still
// the request's prefill).
func summarised(s *Step, want Phase) bool {
	return (want == Unknown || s.Phase == want) && s.Phase != Partial && (!s.GraphCapture || s.Phase == Prefill)
}

// positions returns the positions in steps of the steps a summary of phase p covers
// (SelectSteps' steps).
func positions(steps []Step, p Phase) []int {
	out := make([]int, 0, len(steps))
	for i := range steps {
		if summarised(&steps[i], p) {
			out = append(out, i)
		}
	}
	return out
}

func summarize(all []Step, opt Options) (Summary, error) {
	_, phase, err := SelectSteps(all, opt.Phase)
	kept, out := SummarisedSteps(all, phase)
	sel := positions(all, phase)
	steps := make([]Step, len(kept)) // steps are large: copy each once
	for i, k := range kept {
		steps[i] = all[k]
	}
	sum := Summary{Phase: phase, Steps: len(steps), Outliers: outliersOf(all, sel, out), Stall: Stall{Kernel: NoKernel}, Selected: sel}
	if len(steps) == 0 {
		return sum, err
	}
	walls := make([]time.Duration, len(steps))
	var totalWall time.Duration
	var launches, kernels, short int
	var shortBusy time.Duration
	for i := range steps {
		short += steps[i].ShortKernels
		shortBusy += steps[i].ShortBusy
		walls[i] = steps[i].Wall()
		totalWall += walls[i]
		launches += steps[i].Launches
		kernels += steps[i].TotalKernels()
		sum.Gaps.add(&steps[i].Gaps)
	}
	n := float64(len(steps))
	sum.Median, sum.P10, sum.P90 = Quantile(walls, 0.5), Quantile(walls, 0.1), Quantile(walls, 0.9)
	sum.Mean = totalWall / time.Duration(len(steps))
	sum.LaunchesPerStp = float64(launches) / n
	sum.KernelsPerStep = float64(kernels) / n
	sum.GapsPerStep = float64(sum.Gaps.Count) / n
	sum.ShortPerStep = float64(short) / n
	sum.ShortBusyPerStep = shortBusy / time.Duration(len(steps))
	per := make([]time.Duration, len(steps))
	calls := make([]float64, len(steps))
	var totals [kernelclass.NumCategories]time.Duration
	for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
		var excl, busy time.Duration
		var k int
		for i := range steps {
			per[i] = steps[i].Exclusive[c]
			calls[i] = float64(steps[i].Kernels[c])
			excl += steps[i].Exclusive[c]
			busy += steps[i].Busy[c]
			k += steps[i].Kernels[c]
		}
		cs := CategorySummary{Median: Quantile(per, 0.5), P90: Quantile(per, 0.9),
			KernelsPerStep: float64(k) / n, CallsMedian: QuantileF(calls, 0.5)}
		if totalWall > 0 {
			cs.Share = float64(excl) / float64(totalWall)
		}
		if k > 0 {
			cs.BusyPerCall = busy / time.Duration(k)
		}
		sum.Categories[c] = cs
		totals[c] = excl
	}
	SetMeans(&sum, totals)
	sum.Stall = stallOf(steps)
	return sum, err
}

// SetMeans sets each category's Mean from its total exclusive time over the steps, so that
// the means add up exactly to sum.Mean: each gets its total divided by the step count,
// truncated, and the nanoseconds the truncations lost go one each to the categories with
// the largest remainders (ties to the earlier category id). The exclusive times of a step
// add up to its wall time, so the totals add up to the steps' total wall time and exactly
// that many nanoseconds are left over.
func SetMeans(sum *Summary, totals [kernelclass.NumCategories]time.Duration) {
	n := time.Duration(sum.Steps)
	var left time.Duration = sum.Mean
	var order [kernelclass.NumCategories]kernelclass.Category
	for c := range totals {
		sum.Categories[c].Mean = totals[c] / n
		left -= totals[c] / n
		order[c] = kernelclass.Category(c)
	}
	slices.SortStableFunc(order[:], func(a, b kernelclass.Category) int { return cmp.Compare(totals[b]%n, totals[a]%n) })
	for i := 0; left > 0 && i < len(order); i++ {
		sum.Categories[order[i]].Mean++
		left--
	}
}
