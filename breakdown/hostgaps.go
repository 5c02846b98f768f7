package breakdown

import (
	"slices"
	"time"

	"github.com/stepstat/stepstat/nsys"
)

// hostGaps attributes idle time to what the host threads of the device's processes were doing.
type hostGaps struct {
	calls   []nsys.APICall // every call of the trace, by start
	callers []nsys.Caller  // of the trace
	tl      *timeline      // the device: only its processes' calls count
	pts     []nsys.Time    // scratch
	next    int
	active  []int
}

func newHostGaps(t *nsys.Trace, tl *timeline) *hostGaps {
	return &hostGaps{calls: t.APICalls, callers: t.Callers, tl: tl}
}

func hostKind(k nsys.APIKind) HostActivity {
	switch k {
	case nsys.APISync:
		return HostSync
	case nsys.APIMemcpy, nsys.APIMemset:
		return HostCopy
	case nsys.APILaunch, nsys.APIGraphLaunch:
		return HostLaunch
	}
	return HostNone
}

// attribute splits [g0, g1) among host activities: at each instant the highest-priority
// kind of call in progress owns it (synchronize > copy > launch), else "no CUDA call".
// Gaps must come in increasing time order.
func (g *hostGaps) attribute(g0, g1 nsys.Time, out *[NumHostActivities]time.Duration) {
	// A call that ended by g0 overlaps no later gap either: it is never kept.
	for ; g.next < len(g.calls) && g.calls[g.next].Start < g1; g.next++ {
		if c := &g.calls[g.next]; c.End > g0 && g.tl.hasProc(g.callers[c.Caller].Proc) {
			g.active = append(g.active, g.next)
		}
	}
	keep := g.active[:0]
	for _, i := range g.active {
		if g.calls[i].End > g0 {
			keep = append(keep, i)
		}
	}
	g.active = keep
	if len(g.active) == 0 {
		out[HostNone] += g1.Sub(g0)
		return
	}
	pts := append(g.pts[:0], g0, g1)
	defer func() { g.pts = pts[:0] }()
	for _, i := range g.active {
		c := &g.calls[i]
		if c.Start > g0 && c.Start < g1 {
			pts = append(pts, c.Start)
		}
		if c.End > g0 && c.End < g1 {
			pts = append(pts, c.End)
		}
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	for k := 0; k+1 < len(pts); k++ {
		a, b := pts[k], pts[k+1]
		who := HostNone
		for _, i := range g.active {
			c := &g.calls[i]
			if c.Start <= a && c.End >= b {
				if hk := hostKind(g.callers[c.Caller].Kind); hk < who {
					who = hk
				}
			}
		}
		out[who] += b.Sub(a)
	}
}
