package compare

import (
	"golang.org/x/perf/benchmath"

	"github.com/stepstat/stepstat/breakdown"
)

// This file compares multi-GPU traces rank by rank: pooled ranks hide a change on one rank.

// A RankComparison compares one device position (rank) of the two sides: the d-th device
// of every run on each side.
type RankComparison struct {
	Rank            int // index into each report's Devices
	BaseDev, NewDev int // the device ids (of the first run of each side)
	Step            Row
	Categories      []Row // in kernelclass.Order
}

// compareRanks compares each device position on its own when both sides have two or more
// devices per run.
func compareRanks(base, new Side, phase breakdown.Phase, opt Options, th *benchmath.Thresholds) []RankComparison {
	nb, nn := devicesOf(base), devicesOf(new)
	if nb < 2 || nn < 2 {
		return nil
	}
	var out []RankComparison
	for d := 0; d < min(nb, nn); d++ {
		rc := RankComparison{Rank: d, BaseDev: int(base.Reports[0].Devices[d].Device), NewDev: int(new.Reports[0].Devices[d].Device)}
		rc.Step, rc.Categories = compareSteps(rankRuns(base, phase, d), rankRuns(new, phase, d), opt, th)
		out = append(out, rc)
	}
	return out
}

// devicesOf returns the smallest device count of a side's runs.
func devicesOf(s Side) int {
	n := -1
	for _, r := range s.Reports {
		if n < 0 || len(r.Devices) < n {
			n = len(r.Devices)
		}
	}
	return max(n, 0)
}

// rankRuns returns, per run, the steps of the phase on the d-th device.
func rankRuns(s Side, phase breakdown.Phase, d int) [][]*breakdown.Step {
	var runs [][]*breakdown.Step
	for _, r := range s.Reports {
		var run []*breakdown.Step
		dr := &r.Devices[d]
		for i := range dr.Steps {
			if dr.Steps[i].Phase == phase {
				run = append(run, &dr.Steps[i])
			}
		}
		runs = append(runs, run)
	}
	return runs
}
