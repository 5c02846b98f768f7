package findings

import (
	"cmp"
	"slices"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file turns the findings into a plan: which findings are causes (and which are
// warnings about the report itself), one group per rule over the devices it holds on, the
// limiter, and what would lead once the limiter is fixed (Then).

// MinorShare is the share of the step under which a cause is minor: listed on one line,
// never the limiter.
const MinorShare = 0.02

// Cause reports whether f names a cause of step time: every rule but the warnings
// (outlier_steps: steps left out of the summary; coverage: work the report cannot name or
// steps found by a weak method) and far_from_sol (the distance from a floor, which the
// causes explain). Only a cause can be the limiter.
func (f *Finding) Cause() bool {
	switch f.ID {
	case Outliers, Coverage, FarFromSOL:
		return false
	}
	return f.AtStake > 0
}

// Warning reports whether f is a warning about the report (outlier steps, coverage), shown
// with its evidence apart from the causes.
func (f *Finding) Warning() bool { return f.ID == Outliers || f.ID == Coverage }

// Minor reports whether f is a cause with less than MinorShare of its step at stake.
func (f *Finding) Minor() bool { return f.Cause() && frac(f.AtStake, f.Step) < MinorShare }

// A Member is a rule's finding on one device.
type Member struct {
	Dev int // index into Report.Devices
	F   *Finding
}

// A Group is one rule's findings over the devices it holds on, the one with the most time
// at stake first (ties: device order).
type Group struct {
	ID      ID
	Members []Member
}

// Top is the member with the most time at stake.
func (g *Group) Top() *Finding { return g.Members[0].F }

// Groups returns one group per rule: the causes that are not minor by the most time at
// stake of a member (ties by id), then the minor causes, then far_from_sol, then the
// warnings.
func (r *Report) Groups() []Group {
	var out []Group
	idx := map[ID]int{}
	for d := range r.Findings {
		for k := range r.Findings[d] {
			f := &r.Findings[d][k]
			i, ok := idx[f.ID]
			if !ok {
				i = len(out)
				idx[f.ID] = i
				out = append(out, Group{ID: f.ID})
			}
			out[i].Members = append(out[i].Members, Member{d, f})
		}
	}
	for i := range out {
		slices.SortStableFunc(out[i].Members, func(a, b Member) int { return cmp.Compare(b.F.AtStake, a.F.AtStake) })
	}
	class := func(g *Group) int {
		f := g.Top()
		switch {
		case f.Cause() && !f.Minor():
			return 0
		case f.Cause():
			return 1
		case !f.Warning():
			return 2
		}
		return 3
	}
	slices.SortStableFunc(out, func(a, b Group) int {
		if c := cmp.Compare(class(&a), class(&b)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Top().AtStake, a.Top().AtStake); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// Limiter returns the group of the cause with the most step time at stake, not minor, and
// false when no cause holds.
func (r *Report) Limiter() (Group, bool) {
	gs := r.Groups()
	if len(gs) > 0 && gs[0].Top().Cause() && !gs[0].Top().Minor() {
		return gs[0], true
	}
	return Group{}, false
}

// Then is what would lead once a cause is fixed: the rules re-run on the device's mean step
// with that cause's time at stake taken out.
type Then struct {
	After ID            // the cause taken out
	Step  time.Duration // the mean step left
	// Next is the cause that would lead then (its Step is the step left); nil when no
	// cause would hold.
	Next *Finding
}

// Speedup is how much faster the step left could be once Next is fixed: Next's own
// possible_speedup where its rule gives one (launch_bound: the step over its busy time),
// else the step over the step less Next's time at stake.
func (t *Then) Speedup() float64 {
	if t.Next == nil {
		return 0
	}
	if e, ok := t.Next.Fact("possible_speedup"); ok {
		return e.N
	}
	if t.Step-t.Next.AtStake <= 0 {
		return 0
	}
	return float64(t.Step) / float64(t.Step-t.Next.AtStake)
}

// ThenOf re-runs the rules on device d of r with the time at stake of f (a cause of that
// device) taken out of its mean step, and returns what would lead; nil when f is not a
// cause whose time can be taken out.
func ThenOf(r *Report, d int, f *Finding) *Then {
	dr, ok := without(&r.Devices[d], f)
	if !ok {
		return nil
	}
	br := *r.Report
	br.Devices = slices.Clone(br.Devices)
	br.Devices[d] = dr
	t := &Then{After: f.ID, Step: dr.Summary.Mean}
	for _, g := range device(&br, d, r.knobs) {
		if g.Cause() && !g.Minor() && g.ID != f.ID {
			t.Next = &g
			break
		}
	}
	return t
}

// without returns device dr with the time at stake of cause f taken out of its summary:
// the step, the category that holds the time and the idle gaps' attribution shrink by it,
// and the rule's own evidence (the stall, the short kernels) is gone. The categories keep
// adding up to the step. It returns false for findings that are not causes.
func without(dr *breakdown.DeviceReport, f *Finding) (breakdown.DeviceReport, bool) {
	out := *dr
	sm := &out.Summary
	if !f.Cause() || sm.Steps == 0 {
		return out, false
	}
	n := time.Duration(sm.Steps)
	var api [breakdown.NumAPIGroups]time.Duration // idle totals over the steps to take out
	long := true                                  // the idle taken out lies in gaps of 10µs or more
	switch f.ID {
	case HostStall:
		api = sm.Stall.API
		sm.Gaps.Sizes[breakdown.GapOver1ms] = max(sm.Gaps.Sizes[breakdown.GapOver1ms]-sm.Stall.Steps, 0)
		sm.Gaps.SizeNS[breakdown.GapOver1ms] = max(sm.Gaps.SizeNS[breakdown.GapOver1ms]-sm.Stall.Total, 0)
		sm.Gaps.Count = max(sm.Gaps.Count-sm.Stall.Steps, 0)
		sm.GapsPerStep = float64(sm.Gaps.Count) / float64(sm.Steps)
		sm.Stall = breakdown.Stall{Kernel: breakdown.NoKernel}
	case GraphLaunch:
		api[breakdown.APIGraphLaunching] = sm.Gaps.APILong[breakdown.APIGraphLaunching]
	case HostSync:
		api[breakdown.APISynchronizing] = sm.Gaps.HostLong[breakdown.HostSync]
		api[breakdown.APICopying] = sm.Gaps.HostLong[breakdown.HostCopy]
	case LaunchBound:
		long = false
		launch, none := sm.Gaps.API[breakdown.APILaunching], sm.Gaps.API[breakdown.APINone]
		if hostStall(dr) != nil {
			launch -= sm.Stall.API[breakdown.APILaunching]
			none -= sm.Stall.API[breakdown.APINone]
		}
		api[breakdown.APILaunching], api[breakdown.APINone] = launch, none
	case Communication:
		takeOut(sm, kernelclass.AllReduce, sm.Categories[kernelclass.AllReduce].Mean)
		takeOut(sm, kernelclass.Collective, sm.Categories[kernelclass.Collective].Mean)
		return out, true
	case MoERouting:
		takeOut(sm, kernelclass.MoERouting, sm.Categories[kernelclass.MoERouting].Mean)
		return out, true
	case KernelStorm:
		// The short kernels' busy time, taken from the busy categories in proportion to
		// their exclusive time (the short kernels' own categories are not kept per step).
		stake := min(sm.ShortBusyPerStep, sm.Mean-sm.Categories[kernelclass.Idle].Mean)
		busy := sm.Mean - sm.Categories[kernelclass.Idle].Mean
		left := stake
		for _, c := range kernelclass.Order {
			if c == kernelclass.Idle || busy <= 0 {
				continue
			}
			x := time.Duration(float64(stake) * float64(sm.Categories[c].Mean) / float64(busy))
			x = min(x, left, sm.Categories[c].Mean)
			takeOut(sm, c, x)
			left -= x
		}
		sm.ShortPerStep, sm.ShortBusyPerStep = 0, 0
		return out, true
	default:
		return out, false
	}
	var total time.Duration
	for g, x := range api {
		x = max(min(x, sm.Gaps.API[g]), 0)
		api[g] = x
		total += x
		sm.Gaps.API[g] -= x
		if long {
			sm.Gaps.APILong[g] = max(sm.Gaps.APILong[g]-x, 0)
		}
		if h, ok := hostActivity(breakdown.APIGroup(g)); ok {
			sm.Gaps.Host[h] = max(sm.Gaps.Host[h]-x, 0)
			if long {
				sm.Gaps.HostLong[h] = max(sm.Gaps.HostLong[h]-x, 0)
			}
		}
	}
	sm.Gaps.Total -= total
	// The rule's time at stake is its idle totals per step, each truncated: take out exactly that.
	takeOut(sm, kernelclass.Idle, min(f.AtStake, total/n+time.Duration(breakdown.NumAPIGroups), sm.Categories[kernelclass.Idle].Mean))
	return out, true
}

// takeOut removes x per step of category c from the summary's mean step, keeping the
// categories' means adding up to it and their shares of it.
func takeOut(sm *breakdown.Summary, c kernelclass.Category, x time.Duration) {
	if x <= 0 {
		return
	}
	sm.Categories[c].Mean -= x
	sm.Mean -= x
	for i := range sm.Categories {
		sm.Categories[i].Share = frac(sm.Categories[i].Mean, sm.Mean)
	}
}

// hostActivity folds an API group into Gaps.Host's activity for the groups the rules read
// there (synchronizing, copying).
func hostActivity(g breakdown.APIGroup) (breakdown.HostActivity, bool) {
	switch g {
	case breakdown.APISynchronizing:
		return breakdown.HostSync, true
	case breakdown.APICopying:
		return breakdown.HostCopy, true
	}
	return 0, false
}
