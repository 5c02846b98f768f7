package compare

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/stepstat/stepstat/breakdown/findings"
)

// This file lines up the findings of the two sides: the ones that appeared, vanished or
// changed.

// Change says how a finding differs between the sides; its values are stable (JSON's
// "change").
type Change string

// Finding changes.
const (
	FindingAppeared Change = "appeared"
	FindingVanished Change = "vanished"
	FindingChanged  Change = "changed" // severity changed, or the time at stake by a quarter or more
	FindingSame     Change = "same"
)

// A FindingChange is one finding of one device position on either side.
type FindingChange struct {
	Rank      int // index into each report's Devices
	ID        findings.ID
	Change    Change            // FindingAppeared, ...
	Base, New *findings.Finding // nil on the side without it
	// Expected marks a finding that appeared (or grew to a larger share of its step) where
	// the base's then (findings.Then: the rules re-run with the base's top cause taken out)
	// named it: what the fix of the base's limiter was expected to reveal.
	Expected bool
}

// compareFindings lines up the findings of each device position on the first run of each
// side: appeared, vanished, changed or the same; changes first, then by time at stake.
func compareFindings(base, new Side) []FindingChange {
	if len(base.Reports) == 0 || len(new.Reports) == 0 {
		return nil
	}
	br, nr := base.Reports[0], new.Reports[0]
	var out []FindingChange
	named := func(d int, id findings.ID) bool {
		return d < len(br.Then) && br.Then[d] != nil && br.Then[d].Next != nil && br.Then[d].Next.ID == id
	}
	share := func(f *findings.Finding) float64 { return float64(f.AtStake) / float64(max(f.Step, 1)) }
	for d := 0; d < min(len(br.Devices), len(nr.Devices)); d++ {
		bf, nf := br.Findings[d], nr.Findings[d]
		for i := range bf {
			fc := FindingChange{Rank: d, ID: bf[i].ID, Base: &bf[i], Change: FindingVanished}
			for j := range nf {
				if nf[j].ID == bf[i].ID {
					fc.New = &nf[j]
					fc.Change = FindingSame
					if nf[j].Severity != bf[i].Severity || relChange(bf[i].AtStake, nf[j].AtStake) >= 0.25 {
						fc.Change = FindingChanged
						fc.Expected = named(d, nf[j].ID) && share(&nf[j]) > share(&bf[i])
					}
				}
			}
			out = append(out, fc)
		}
		for j := range nf {
			if !slices.ContainsFunc(bf, func(f findings.Finding) bool { return f.ID == nf[j].ID }) {
				out = append(out, FindingChange{Rank: d, ID: nf[j].ID, New: &nf[j], Change: FindingAppeared, Expected: named(d, nf[j].ID)})
			}
		}
	}
	rank := func(c Change) int {
		return map[Change]int{FindingAppeared: 0, FindingVanished: 0, FindingChanged: 0, FindingSame: 1}[c]
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
