package breakdown

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// SelectSteps returns the steps a summary covers: those of the phase selected, or all
// steps (phase Unknown). When no step has the phase, it returns every step and an error
// saying so.
func SelectSteps(steps []Step, sel PhaseSelection) ([]Step, Phase, error) {
	want := sel.Phase()
	if want == Unknown {
		return steps, Unknown, nil
	}
	n := 0
	for i := range steps {
		if steps[i].Phase == want {
			n++
		}
	}
	if n == len(steps) {
		return steps, want, nil // every step has the phase: no copy
	}
	out := make([]Step, 0, n) // steps are large: copy each once
	for i := range steps {
		if steps[i].Phase == want {
			out = append(out, steps[i])
		}
	}
	if len(out) == 0 && len(steps) > 0 {
		return steps, Unknown, fmt.Errorf("no %s steps; summarising all %d steps", want, len(steps))
	}
	return out, want, nil
}

// SummarizeSteps summarises the steps of the phase sel selects as Summarize does for a
// device (for callers that build steps themselves, such as render's tests). The error is
// SelectSteps's.
func SummarizeSteps(steps []Step, sel PhaseSelection) (Summary, error) {
	return summarize(steps, Options{Phase: sel})
}

func summarize(all []Step, opt Options) (Summary, error) {
	steps, phase, err := SelectSteps(all, opt.Phase)
	sum := Summary{Phase: phase, Steps: len(steps)}
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
