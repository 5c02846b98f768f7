package breakdown

import (
	"cmp"
	"math"
	"slices"
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds what diff leads with: the findings that appeared, vanished or changed
// between the sides, the per-rank comparison of multi-GPU traces (pooled ranks hide a
// change on one rank), and the significant changes ordered by size.

// A RankComparison compares one device position (rank) of the two sides: the d-th device
// of every run on each side.
type RankComparison struct {
	Rank            int // index into each report's Devices
	BaseDev, NewDev int // the device ids (of the first run of each side)
	Step            Row
	Categories      []Row // in kernelclass.Order
}

// Finding changes.
const (
	FindingAppeared = "appeared"
	FindingVanished = "vanished"
	FindingChanged  = "changed" // severity changed, or the time at stake by a quarter or more
	FindingSame     = "same"
)

// A FindingChange is one finding of one device position on either side.
type FindingChange struct {
	Rank      int // index into each report's Devices
	ID        string
	Change    string   // FindingAppeared, ...
	Base, New *Finding // nil on the side without it
}

// compareRanks compares each device position on its own when both sides have two or more
// devices per run.
func compareRanks(base, new Side, phase Phase, opt CompareOptions, th *benchmath.Thresholds) []RankComparison {
	nb, nn := devicesOf(base), devicesOf(new)
	if nb < 2 || nn < 2 {
		return nil
	}
	var out []RankComparison
	for d := 0; d < min(nb, nn); d++ {
		bruns, nruns := rankRuns(base, phase, d), rankRuns(new, phase, d)
		row := func(name string, value func(s *Step) float64) Row {
			var b, n [][]float64
			for _, run := range bruns {
				b = append(b, values(run, value))
			}
			for _, run := range nruns {
				n = append(n, values(run, value))
			}
			return compareRow(name, b, n, opt, th)
		}
		rc := RankComparison{Rank: d, BaseDev: int(base.Reports[0].Devices[d].Device), NewDev: int(new.Reports[0].Devices[d].Device)}
		rc.Step = row("whole step", func(s *Step) float64 { return float64(s.Wall()) })
		for _, cat := range kernelclass.Order {
			rc.Categories = append(rc.Categories, row(cat.String(), func(s *Step) float64 { return float64(s.Exclusive[cat]) }))
		}
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
func rankRuns(s Side, phase Phase, d int) [][]*Step {
	var runs [][]*Step
	for _, r := range s.Reports {
		var run []*Step
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

// compareFindings lines up the findings of each device position on the first run of each
// side: appeared, vanished, changed or the same; changes first, then by time at stake.
func compareFindings(base, new Side) []FindingChange {
	if len(base.Reports) == 0 || len(new.Reports) == 0 {
		return nil
	}
	br, nr := base.Reports[0], new.Reports[0]
	var out []FindingChange
	for d := 0; d < min(len(br.Devices), len(nr.Devices)); d++ {
		bf := Findings(br, d, FindingOptions{})
		nf := Findings(nr, d, FindingOptions{})
		for i := range bf {
			fc := FindingChange{Rank: d, ID: bf[i].ID, Base: &bf[i], Change: FindingVanished}
			for j := range nf {
				if nf[j].ID == bf[i].ID {
					fc.New = &nf[j]
					fc.Change = FindingSame
					if nf[j].Severity != bf[i].Severity || relChange(bf[i].AtStake, nf[j].AtStake) >= 0.25 {
						fc.Change = FindingChanged
					}
				}
			}
			out = append(out, fc)
		}
		for j := range nf {
			if !slices.ContainsFunc(bf, func(f Finding) bool { return f.ID == nf[j].ID }) {
				out = append(out, FindingChange{Rank: d, ID: nf[j].ID, New: &nf[j], Change: FindingAppeared})
			}
		}
	}
	rank := func(c string) int {
		return map[string]int{FindingAppeared: 0, FindingVanished: 0, FindingChanged: 0, FindingSame: 1}[c]
	}
	slices.SortStableFunc(out, func(a, b FindingChange) int {
		if c := cmp.Compare(rank(a.Change), rank(b.Change)); c != 0 {
			return c
		}
		return cmp.Compare(b.stake(), a.stake())
	})
	return out
}

func (f *FindingChange) stake() time.Duration {
	var s time.Duration
	if f.Base != nil {
		s = f.Base.AtStake
	}
	if f.New != nil {
		s = max(s, f.New.AtStake)
	}
	return s
}

func relChange(a, b time.Duration) float64 {
	if a == 0 {
		if b == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(float64(b-a)) / float64(a)
}

// BiggestChanges returns the significant rows of rows, largest absolute change of the
// median first (ties by name).
func BiggestChanges(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.Significant {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Row) int {
		if c := cmp.Compare(math.Abs(b.New.Center-b.Base.Center), math.Abs(a.New.Center-a.Base.Center)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}
