package breakdown

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file keeps what one step looked like as it ran, for the HTML report's step timeline:
// the GPU work of the step on its streams (with the categories the accounting gave it), the
// idle gaps, and the host's CUDA calls in flight. Only a few steps are kept (the median and
// the slowest summarised step), each bounded to MaxTimelineRows rows per device, so the
// report holds no more of the trace than that.

// MaxTimelineRows bounds the activities, and apart the host calls, kept for one step on one
// device. A step with more (the whole trace as one step) keeps the first ones and is not
// read further.
const MaxTimelineRows = 20000

// A StepTimeline is one summarised step, drawn on every device of the report: with several
// devices, the same aligned step (RankReport.Steps) on each rank, so that the ranks share
// one time axis.
type StepTimeline struct {
	// Which says how the step was chosen: "median" (wall time closest to the median) or
	// "slowest".
	Which string
	// Aligned indexes RankReport.Steps; -1 with one device.
	Aligned int
	// Lanes has one entry per device, in Report.Devices order; a device without the step
	// (no summarised steps) has no lane.
	Lanes []DeviceTimeline
}

// DeviceTimeline is one step on one device.
type DeviceTimeline struct {
	Device     nsys.DeviceID
	Step       int // Step.Index
	Start, End nsys.Time
	// Activities are the kernels, memory operations and graph executions that run in the
	// step (clipped to it by the reader of this type, not here), in start order.
	Activities []TimelineActivity
	// Gaps are the step's idle instants: no activity runs on the device. They add up to
	// the step's Exclusive[Idle].
	Gaps []Span
	// Calls are the CUDA API calls (launch, graph launch, synchronize, memcpy, memset) of
	// the processes that run work on the device, in flight during the step, in start order.
	Calls []TimelineCall
	// Truncated says that the step holds more than MaxTimelineRows activities or calls:
	// the first ones are kept (and Gaps cover only the time up to the last kept activity).
	Truncated bool
}

// Activity kinds of a TimelineActivity.
const (
	ActivityKernel = "kernel"
	ActivityMemop  = "memop"
	ActivityGraph  = "graph"
)

// TimelineActivity is one unit of GPU work in a step.
type TimelineActivity struct {
	Start, End nsys.Time
	Stream     nsys.StreamID
	Category   kernelclass.Category
	Kind       string // ActivityKernel, ActivityMemop or ActivityGraph
	Name       string // the kernel's name (untrusted text), "memcpy HtoD", "CUDA graph"
}

// TimelineCall is one CUDA API call of the host.
type TimelineCall struct {
	Start, End nsys.Time
	Thread     int64 // globalTid
	Kind       nsys.APIKind
	Name       string // the function, e.g. cudaLaunchKernel
}

// stepTimelines builds the report's step timelines: the median and the slowest summarised
// step (one of each; the slowest only when it is another step than the median).
func stepTimelines(t *nsys.Trace, tls []*steps.Timeline, rep *Report, opt Options) []StepTimeline {
	if len(rep.Devices) == 0 {
		return nil
	}
	longest := steps.Longest(t)
	// picks[d] is the Step.Index of the chosen step on device d, or -1.
	type choice struct {
		which   string
		aligned int
		picks   []int
	}
	var choices []choice
	if rr := rep.Ranks; rr != nil && len(rr.Steps) > 0 {
		// The aligned step's wall time is its longest on any rank: the step's time for the
		// ranks together.
		walls := make([]time.Duration, len(rr.Steps))
		for i := range rr.Steps {
			walls[i] = slices.Max(rr.Steps[i].Wall)
		}
		med, slow := medianAndSlowest(walls)
		for _, c := range []struct {
			which string
			k     int
		}{{"median", med}, {"slowest", slow}} {
			if c.which == "slowest" && c.k == med {
				break
			}
			choices = append(choices, choice{c.which, c.k, slices.Clone(rr.Steps[c.k].Steps)})
		}
	} else {
		// One device, or ranks without aligned steps: each device's own median and slowest.
		var med, slow []int
		distinct := false
		for d := range rep.Devices {
			sel := rep.Devices[d].Summary.SelectedSteps(rep.Devices[d].Steps)
			if len(sel) == 0 {
				med, slow = append(med, -1), append(slow, -1)
				continue
			}
			walls := make([]time.Duration, len(sel))
			for i := range sel {
				walls[i] = sel[i].Wall()
			}
			m, s := medianAndSlowest(walls)
			med, slow = append(med, sel[m].Index), append(slow, sel[s].Index)
			distinct = distinct || m != s
		}
		choices = append(choices, choice{"median", -1, med})
		if distinct {
			choices = append(choices, choice{"slowest", -1, slow})
		}
	}
	var out []StepTimeline
	for _, c := range choices {
		st := StepTimeline{Which: c.which, Aligned: c.aligned}
		for d := range rep.Devices {
			dr := &rep.Devices[d]
			if d >= len(c.picks) || c.picks[d] < 0 {
				continue
			}
			s := timelineStep(dr.Steps, c.picks[d])
			if s == nil {
				continue
			}
			st.Lanes = append(st.Lanes, deviceTimeline(t, tls[d], s, longest))
		}
		if len(st.Lanes) > 0 {
			out = append(out, st)
		}
	}
	return out
}

// medianAndSlowest returns the index of the wall time closest to the median (the lower
// middle of an even count; the first such step on ties) and of the longest (the first on ties).
func medianAndSlowest(walls []time.Duration) (med, slow int) {
	order := make([]int, len(walls))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(walls[a], walls[b]) })
	med = order[(len(order)-1)/2]
	for i, w := range walls {
		if w > walls[slow] {
			slow = i
		}
	}
	return med, slow
}

func timelineStep(steps []Step, index int) *Step {
	i := sort.Search(len(steps), func(i int) bool { return steps[i].Index >= index })
	if i < len(steps) && steps[i].Index == index {
		return &steps[i]
	}
	return nil
}

// longestCall bounds how long before a step a call still in flight in it may have started.
const longestCall = 10 * time.Second

// deviceTimeline collects step s on the device of tl.
// longest bounds every activity's duration.
func deviceTimeline(t *nsys.Trace, tl *steps.Timeline, s *Step, longest time.Duration) DeviceTimeline {
	dt := DeviceTimeline{Device: tl.Dev, Step: s.Index, Start: s.Start, End: s.End}
	// Activities that run in the step: those starting in it, and those started before it
	// and still running.
	busyTo := s.Start // the end of the work seen so far, for the gaps
	add := func(a *steps.Activity) bool {
		if a.End <= s.Start || a.Start >= s.End {
			return true
		}
		if len(dt.Activities) >= MaxTimelineRows {
			dt.Truncated = true
			return false
		}
		ta := TimelineActivity{Start: a.Start, End: a.End, Category: a.Cat}
		switch a.Src {
		case steps.SrcKernel:
			ta.Kind, ta.Name, ta.Stream = ActivityKernel, t.Names[a.Name], t.Sites[t.Kernels[a.Idx].Site].Stream
		case steps.SrcMemop:
			ta.Kind, ta.Name, ta.Stream = ActivityMemop, a.MemKind.String(), t.Memops[a.Idx].Stream
		case steps.SrcGraph:
			ta.Kind, ta.Name, ta.Stream = ActivityGraph, "CUDA graph (traced at graph level)", t.Graphs[a.Idx].Stream
		}
		dt.Activities = append(dt.Activities, ta)
		return true
	}
	for _, a := range tl.RunningAt(s.Start, longest) {
		add(&a)
	}
	tl.EachFrom(s.Start, func(a *steps.Activity) bool { return a.Start < s.End && add(a) })
	slices.SortStableFunc(dt.Activities, func(a, b TimelineActivity) int { return cmp.Compare(a.Start, b.Start) })
	for _, a := range dt.Activities {
		if a.Start > busyTo {
			dt.Gaps = append(dt.Gaps, Span{busyTo, min(a.Start, s.End)})
		}
		busyTo = max(busyTo, a.End)
	}
	if !dt.Truncated && busyTo < s.End {
		dt.Gaps = append(dt.Gaps, Span{busyTo, s.End})
	}
	// Host calls in flight: started before the step ends and ended after it starts, from
	// the processes that run work on this device.
	calls := t.APICalls
	lo := sort.Search(len(calls), func(i int) bool { return calls[i].Start >= s.Start-nsys.Time(longestCall) })
	for i := lo; i < len(calls) && calls[i].Start < s.End; i++ {
		c := &calls[i]
		if c.End <= s.Start {
			continue
		}
		w := &t.Callers[c.Caller]
		if !tl.HasProc(w.Proc) {
			continue
		}
		if len(dt.Calls) >= MaxTimelineRows {
			dt.Truncated = true
			break
		}
		name := ""
		if int(w.Name) < len(t.APINames) {
			name = t.APINames[w.Name]
		}
		dt.Calls = append(dt.Calls, TimelineCall{Start: c.Start, End: c.End, Thread: w.Thread, Kind: w.Kind, Name: name})
	}
	return dt
}
