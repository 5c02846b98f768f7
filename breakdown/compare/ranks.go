package compare

import (
	"fmt"
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file compares multi-GPU traces rank by rank: pooled ranks hide a change on one rank.

// A RankComparison compares one device position (rank) of the two sides: the d-th device
// of every run on each side.
type RankComparison struct {
	Rank            int // index into each report's Devices
	BaseDev, NewDev int // the device ids (of the first run of each side); -1 when missing
	Step            Row
	Categories      []Row // in kernelclass.Order
	// BaseMeanStep and BaseMeans (NewMeanStep, NewMeans) are the rank's mean step and each
	// category's mean per step on that side, rounded so that the means add up to the mean
	// step (as SideSummary's).
	BaseMeanStep, NewMeanStep time.Duration
	BaseMeans, NewMeans       [kernelclass.NumCategories]time.Duration
	// Base and New are the rank's wait and transfer in matched collectives, per aligned
	// step, from the side's rank view (RankWait); zero when the side has none.
	Base, New RankTime
	// NotComparable says why this rank cannot be compared (a side has no such device, or
	// no steps of the phase on it); "" when it can.
	NotComparable string
}

// RankTime is one rank's time in matched collectives on one side, per aligned step.
type RankTime struct {
	Wait, Transfer time.Duration // per aligned step; Wait + Transfer = the matched kernels' time
	LastArrivals   int           // matched calls at which this rank arrived last (all runs)
	Calls          int           // matched calls (all runs)
}

// RankWait sums the rank view (breakdown.RankReport) of a side's runs per device position.
type RankWait struct {
	Steps int // aligned steps, all runs
	Calls int // matched collective calls, all runs
	// Wait, Transfer and LastArrivals are totals per device position over every run.
	Wait, Transfer []time.Duration
	LastArrivals   []int
	// Straggler is the position that arrived last at most matched calls (ties go to the
	// first); -1 when no call was matched.
	Straggler int
}

// Time returns position d's time per aligned step.
func (w *RankWait) Time(d int) RankTime {
	if w == nil || d >= len(w.Wait) {
		return RankTime{}
	}
	n := time.Duration(max(w.Steps, 1))
	return RankTime{Wait: w.Wait[d] / n, Transfer: w.Transfer[d] / n, LastArrivals: w.LastArrivals[d], Calls: w.Calls}
}

// rankWait sums the rank views of a side's runs; nil when no run has one.
func rankWait(s Side) *RankWait {
	var w *RankWait
	for _, r := range s.Reports {
		rr := r.Ranks
		if rr == nil {
			continue
		}
		if w == nil {
			w = &RankWait{Straggler: -1}
		}
		for len(w.Wait) < len(rr.Devices) {
			w.Wait, w.Transfer, w.LastArrivals = append(w.Wait, 0), append(w.Transfer, 0), append(w.LastArrivals, 0)
		}
		w.Steps += len(rr.Steps)
		w.Calls += len(rr.Calls)
		for d := range rr.Devices {
			w.Wait[d] += rr.Devices[d].Wait
			w.Transfer[d] += rr.Devices[d].Transfer
			w.LastArrivals[d] += rr.Devices[d].LastArrivals
		}
	}
	if w != nil {
		best := 0
		for d, n := range w.LastArrivals {
			if n > best {
				best, w.Straggler = n, d
			}
		}
	}
	return w
}

// compareRanks compares each device position on its own when both sides have two or more
// devices per run. Positions that some run of a side lacks are not comparable.
func compareRanks(base, new Side, phase breakdown.Phase, opt Options, th *benchmath.Thresholds) []RankComparison {
	bmin, bmax := devicesOf(base)
	nmin, nmax := devicesOf(new)
	if bmax < 2 || nmax < 2 {
		return nil
	}
	bw, nw := rankWait(base), rankWait(new)
	var out []RankComparison
	for d := 0; d < max(bmax, nmax); d++ {
		rc := RankComparison{Rank: d, BaseDev: deviceID(base, d), NewDev: deviceID(new, d), Base: bw.Time(d), New: nw.Time(d)}
		switch {
		case d >= bmin:
			rc.NotComparable = fmt.Sprintf("%s has no device %d in %s", base.Label, d, runsWord(base, d))
		case d >= nmin:
			rc.NotComparable = fmt.Sprintf("%s has no device %d in %s", new.Label, d, runsWord(new, d))
		}
		var bruns, nruns [][]tagged
		if d < bmin && d < nmin {
			bruns, nruns = rankRuns(base, phase, d), rankRuns(new, phase, d)
		}
		rc.BaseMeanStep, rc.BaseMeans = addUpMeans(bruns)
		rc.NewMeanStep, rc.NewMeans = addUpMeans(nruns)
		rc.Step, rc.Categories = compareSteps(bruns, nruns, rc.BaseMeanStep, rc.NewMeanStep, rc.BaseMeans, rc.NewMeans, opt, th)
		out = append(out, rc)
	}
	return out
}

// runsWord names the runs of a side that lack device d: "its run" or "run 2 of 4".
func runsWord(s Side, d int) string {
	if len(s.Reports) == 1 {
		return "its run"
	}
	for i, r := range s.Reports {
		if len(r.Devices) <= d {
			return fmt.Sprintf("run %d of %d (%s)", i+1, len(s.Reports), r.Path)
		}
	}
	return "a run"
}

func deviceID(s Side, d int) int {
	if len(s.Reports) == 0 || d >= len(s.Reports[0].Devices) {
		return -1
	}
	return int(s.Reports[0].Devices[d].Device)
}

// addUpMeans returns the mean step of the runs' steps and each category's mean per step,
// rounded so that they add up (breakdown.SetMeans).
func addUpMeans(runs [][]tagged) (time.Duration, [kernelclass.NumCategories]time.Duration) {
	var excl [kernelclass.NumCategories]time.Duration
	var total time.Duration
	n := 0
	for _, run := range runs {
		for _, t := range run {
			total += t.step.Wall()
			for c, d := range t.step.Exclusive {
				excl[c] += d
			}
			n++
		}
	}
	var out [kernelclass.NumCategories]time.Duration
	if n == 0 {
		return 0, out
	}
	sum := breakdown.Summary{Steps: n, Mean: total / time.Duration(n)}
	breakdown.SetMeans(&sum, excl)
	for c := range out {
		out[c] = sum.Categories[c].Mean
	}
	return sum.Mean, out
}

// devicesOf returns the smallest and the largest device count of a side's runs.
func devicesOf(s Side) (lo, hi int) {
	lo = -1
	for _, r := range s.Reports {
		if lo < 0 || len(r.Devices) < lo {
			lo = len(r.Devices)
		}
		hi = max(hi, len(r.Devices))
	}
	return max(lo, 0), hi
}

// rankRuns returns, per run, the steps of the phase on the d-th device that report's
// summary covers (breakdown.SummarisedSteps).
func rankRuns(s Side, phase breakdown.Phase, d int) [][]tagged {
	var runs [][]tagged
	for _, r := range s.Reports {
		var run []tagged
		dr := &r.Devices[d]
		kept, _ := breakdown.SummarisedSteps(dr.Steps, phase)
		for _, i := range kept {
			run = append(run, tagged{&dr.Steps[i], d})
		}
		runs = append(runs, run)
	}
	return runs
}
