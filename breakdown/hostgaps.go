package breakdown

import (
	"time"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// APIGroup is what a launching host thread was doing during an idle instant of its device:
// the group of the CUDA call it was inside, or no CUDA call.
type APIGroup uint8

// API groups, in attribution priority (highest first): at an instant inside calls of
// several groups (nested driver calls, several launching threads), the first group owns it.
const (
	APISynchronizing  APIGroup = iota // stream, device, event or context synchronize
	APICopying                        // memcpy, memset
	APIGraphLaunching                 // cudaGraphLaunch, cuGraphLaunch
	APILaunching                      // an ordinary kernel launch (shorter than LongLaunchCall)
	// APIModuleLoading is module loading and run-time compilation: cuLibraryLoad*,
	// cuModuleLoad*, cuLibraryGetKernel, cuModuleGetFunction, cuKernelSetAttribute,
	// cuFuncSetAttribute, cuLink*, and a launch call that itself lasts LongLaunchCall or
	// more (lazy module loading inside the launch).
	APIModuleLoading
	APIMemoryManagement // malloc, free, host alloc, register, cuMem* mappings
	APIOther            // any other CUDA call of nsys.MiscCallMin or longer
	APINone             // no CUDA call (Python, scheduling, a library's own CPU work)
	NumAPIGroups
)

// LongLaunchCall is the duration from which a kernel launch call counts as module loading:
// a launch that takes a millisecond loads or compiles the kernel's module inside it.
const LongLaunchCall = time.Millisecond

// APIGroupNames labels the groups (text output).
var APIGroupNames = [NumAPIGroups]string{"synchronizing", "copying", "graph launch", "launching",
	"module loading", "memory management", "other CUDA call", "no CUDA call"}

// APIGroupKeys are the groups' stable JSON keys.
var APIGroupKeys = [NumAPIGroups]string{"sync", "copy", "graph_launch", "launch", "module_load", "memory", "other_api", "none"}

// APIGroupOrder is the order the groups are listed in text, HTML and README.
var APIGroupOrder = [NumAPIGroups]APIGroup{APILaunching, APIGraphLaunching, APISynchronizing, APICopying,
	APIMemoryManagement, APIModuleLoading, APIOther, APINone}

// hostOf folds an API group into the coarser HostActivity of Gaps.Host (the JSON contract's
// host_ns): graph and ordinary launches are launching; module loading, memory management
// and other calls count as no CUDA call there, as before those calls were read.
func hostOf(g APIGroup) HostActivity {
	switch g {
	case APISynchronizing:
		return HostSync
	case APICopying:
		return HostCopy
	case APIGraphLaunching, APILaunching:
		return HostLaunch
	}
	return HostNone
}

func groupOf(k nsys.APIKind) (APIGroup, bool) {
	switch k {
	case nsys.APISync:
		return APISynchronizing, true
	case nsys.APIMemcpy, nsys.APIMemset:
		return APICopying, true
	case nsys.APIGraphLaunch:
		return APIGraphLaunching, true
	case nsys.APILaunch:
		return APILaunching, true
	case nsys.APIModule:
		return APIModuleLoading, true
	case nsys.APIMemMgmt:
		return APIMemoryManagement, true
	case nsys.APIMisc:
		return APIOther, true
	}
	return APINone, false
}

// hostGaps attributes a device's idle gaps to what its launching threads were doing, in
// one sweep over the trace's calls (sorted by start) for all gaps (in increasing time
// order): each call enters a heap of running calls once and leaves it once, and each
// instant of a gap goes to the highest-priority group with a call running. O((calls +
// gaps) log running), whatever the number of calls that overlap one gap.
type hostGaps struct {
	calls []nsys.APICall
	// group of each caller's calls, or -1 for a caller that does not count: not a thread
	// of the device's processes that launches or waits for work (a kernel, graph, copy,
	// memset or synchronize call). A thread that only allocates, registers memory or makes
	// other calls (a pinning or NCCL helper thread) explains no idle time of the device.
	group   []int8
	next    int               // calls[next:] have not been seen
	running endHeap[APIGroup] // calls seen that have not ended, by end
	count   [NumAPIGroups]int32
}

func newHostGaps(t *nsys.Trace, tl *steps.Timeline) *hostGaps {
	launching := map[int64]bool{}
	for _, w := range t.Callers {
		switch w.Kind {
		case nsys.APILaunch, nsys.APIGraphLaunch, nsys.APIMemcpy, nsys.APIMemset, nsys.APISync:
			if tl.HasProc(w.Proc) {
				launching[w.Thread] = true
			}
		}
	}
	g := &hostGaps{calls: t.APICalls, group: make([]int8, len(t.Callers))}
	for i, w := range t.Callers {
		grp, ok := groupOf(w.Kind)
		if !ok || !launching[w.Thread] || !tl.HasProc(w.Proc) {
			g.group[i] = -1
			continue
		}
		g.group[i] = int8(grp)
	}
	return g
}

// skipTo starts the attribution at call i: the calls before it end before the first gap
// (callsRunningFrom).
func (g *hostGaps) skipTo(i int) { g.next = max(g.next, i) }

// admit sees the calls that start at or before at, keeping those that count and run past it.
func (g *hostGaps) admit(at nsys.Time) {
	for ; g.next < len(g.calls) && g.calls[g.next].Start <= at; g.next++ {
		c := &g.calls[g.next]
		grp := g.group[c.Caller]
		if grp < 0 || c.End <= at {
			continue
		}
		if APIGroup(grp) == APILaunching && c.End.Sub(c.Start) >= LongLaunchCall {
			grp = int8(APIModuleLoading)
		}
		g.running.push(ending[APIGroup]{c.End, APIGroup(grp)})
		g.count[grp]++
	}
}

// expire drops the running calls that ended at or before at.
func (g *hostGaps) expire(at nsys.Time) {
	for len(g.running) > 0 && g.running[0].end <= at {
		g.count[g.running.pop().val]--
	}
}

func (g *hostGaps) owner() APIGroup {
	for grp, n := range g.count {
		if n > 0 {
			return APIGroup(grp)
		}
	}
	return APINone
}

// attribute adds each instant of [g0, g1) to the group that owns it. Gaps must come in
// increasing time order and not overlap.
func (g *hostGaps) attribute(g0, g1 nsys.Time, out *[NumAPIGroups]time.Duration) {
	g.admit(g0)
	g.expire(g0)
	for at := g0; at < g1; {
		ev := g1
		if len(g.running) > 0 && g.running[0].end < ev {
			ev = g.running[0].end
		}
		if g.next < len(g.calls) && g.calls[g.next].Start < ev {
			ev = g.calls[g.next].Start
		}
		if ev > at {
			out[g.owner()] += ev.Sub(at)
			at = ev
		}
		g.admit(at)
		g.expire(at)
	}
}
