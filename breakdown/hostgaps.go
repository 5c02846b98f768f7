package breakdown

import (
	"cmp"
	"slices"
	"time"

	"github.com/stepstat/stepstat/nsys"
)

// hostGaps attributes idle time to what the host threads of the device's processes were doing.
type hostGaps struct {
	calls   []nsys.APICall // every call of the trace, by start
	callers []nsys.Caller  // of the trace
	tl      *timeline      // the device: only its processes' calls count
	evs     []hostEvent    // scratch: starts, ends of a wide gap
	wide    []hostEvent
	ends    []uint64 // scratch: ends packed with their kind
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
//
// It sweeps the starts and ends of the calls in progress once, in time order, keeping a
// count of the calls of each kind in progress: O(m log m) in the m calls overlapping the
// gap (a walk of every call for every piece of the gap took 18.6 s for 80 k calls).
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
	// A call owns the instants from its start to its end, both clipped to the gap. The
	// starts come in time order (the calls are sorted by start); the ends are sorted, each
	// packed with its kind into one integer (its offset in the gap, then two bits of kind)
	// where the gap is short enough, as it is in any capture.
	starts, ends, wide := g.evs[:0], g.ends[:0], g.wide[:0]
	packed := g1.Sub(g0) < 1<<60
	for _, i := range g.active {
		c := &g.calls[i]
		s, e := max(c.Start, g0), min(c.End, g1)
		if k := hostKind(g.callers[c.Caller].Kind); s < e && k != HostNone {
			starts = append(starts, hostEvent{s, k})
			if packed {
				ends = append(ends, uint64(e-g0)<<2|uint64(k))
			} else {
				wide = append(wide, hostEvent{e, k})
			}
		}
	}
	if packed {
		slices.Sort(ends)
	} else {
		slices.SortFunc(wide, func(a, b hostEvent) int { return cmp.Compare(a.at, b.at) })
	}
	g.evs, g.ends, g.wide = starts[:0], ends[:0], wide[:0]
	nEnds := len(ends) + len(wide)
	endAt := func(j int) hostEvent {
		if packed {
			return hostEvent{g0 + nsys.Time(ends[j]>>2), HostActivity(ends[j] & 3)}
		}
		return wide[j]
	}
	var n [NumHostActivities]int
	owner := func() HostActivity {
		for k := range HostNone {
			if n[k] > 0 {
				return k
			}
		}
		return HostNone
	}
	prev := g0
	for i, j := 0, 0; i < len(starts) || j < nEnds; {
		at := g1
		if i < len(starts) {
			at = starts[i].at
		}
		if j < nEnds {
			at = min(at, endAt(j).at)
		}
		if at > prev {
			out[owner()] += at.Sub(prev)
			prev = at
		}
		for ; i < len(starts) && starts[i].at == at; i++ {
			n[starts[i].kind]++
		}
		for ; j < nEnds; j++ {
			ev := endAt(j)
			if ev.at != at {
				break
			}
			n[ev.kind]--
		}
	}
	if g1 > prev {
		out[owner()] += g1.Sub(prev)
	}
}

// A hostEvent is a call of one kind starting or ending inside a gap.
type hostEvent struct {
	at   nsys.Time
	kind HostActivity
}
