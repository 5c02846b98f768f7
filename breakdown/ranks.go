package breakdown

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds the rank view of a trace's limits: collective kernels matched across the
// devices of one trace, split into time spent waiting for the last rank to arrive and time
// spent transferring. sol.go holds the other view, the speed of light.

// A RankReport compares the devices (ranks) of a multi-GPU trace. Each device's steps of
// the summarised phase (after Options.Skip) are aligned across devices, by index when every
// device has the same number of them, else by time overlap. Within an aligned step, the
// k-th collective kernel (category allreduce or collective) of one operation on each
// device is one matched call: the ranks arrive at it (start their kernel) at different
// times, and each rank's kernel splits exactly into the time it waited for the last rank
// and the time it then spent transferring.
type RankReport struct {
	// Devices has one entry per device of the report, in Report.Devices order; the
	// per-rank slices of Steps and Calls are indexed the same way.
	Devices []RankDevice
	// Steps are the aligned steps, in time order.
	Steps []RankStep
	// Calls are the matched collective calls, by step, then by first arrival.
	Calls []CollectiveCall
	// AlignedBy says how steps were aligned: "index" (every device has the same number of
	// summarised steps) or "time" (by time overlap, with a warning).
	AlignedBy string
	// Unmatched counts collective kernels of aligned steps that were not matched because
	// the k-th call of their operation is missing on some device.
	Unmatched int
	// Straggler indexes Devices: the rank that arrived last at most matched calls (ties go
	// to the first); -1 when no call was matched.
	Straggler int
	// SpreadMedian and SpreadP90 summarise the step-time spread across ranks: per aligned
	// step, the longest wall time of the step on any device minus the shortest.
	SpreadMedian, SpreadP90 time.Duration
	// Warnings about the alignment and matching; they are also in Report.Warnings.
	Warnings []error
}

// RankDevice is one rank's totals over the aligned steps.
type RankDevice struct {
	Device nsys.DeviceID
	GPU    string
	// MedianStep is the median wall time of the aligned steps on this device.
	MedianStep time.Duration
	// CollectivesMatched counts the matched calls this rank took part in (every rank takes
	// part in every matched call).
	CollectivesMatched int
	// Wait and Transfer are summed over the rank's kernels of every matched call; they add
	// up to the kernels' summed durations exactly.
	Wait, Transfer time.Duration
	// LastArrivals counts the matched calls at which this rank arrived last.
	LastArrivals int
	// Kernels counts the rank's collective kernels in the aligned steps, matched or not.
	Kernels int
	// WaitFor splits Wait by the rank that arrived last at each call, indexed like
	// RankReport.Devices. A rank never waits for itself.
	WaitFor []time.Duration
	// AllReduce and Collective split the matched calls by the category of their kernels.
	AllReduce, Collective RankComm
}

// Comm returns the totals of category c (AllReduce or Collective); nil for other categories.
func (d *RankDevice) Comm(c kernelclass.Category) *RankComm {
	switch c {
	case kernelclass.AllReduce:
		return &d.AllReduce
	case kernelclass.Collective:
		return &d.Collective
	}
	return nil
}

// RankComm totals one category of matched calls on one rank.
type RankComm struct {
	Calls    int           // matched calls
	Time     time.Duration // summed kernel time of the rank in those calls: Wait + Transfer
	Wait     time.Duration
	Transfer time.Duration
	// WaitFor splits Wait by the rank that arrived last, indexed like RankReport.Devices.
	WaitFor []time.Duration
}

// A RankStep is one aligned step: one step of each device.
type RankStep struct {
	Steps  []int           // Step.Index of the step on each rank
	Wall   []time.Duration // the step's wall time on each rank
	Spread time.Duration   // max(Wall) - min(Wall)
	Calls  int             // matched calls in the step
	// Wait and Transfer are per rank, summed over the step's matched calls.
	Wait, Transfer []time.Duration
	// LastArrivals counts, per rank, the step's matched calls it arrived at last.
	LastArrivals []int
}

// A CollectiveCall is one collective matched across every rank: one kernel per device.
type CollectiveCall struct {
	Step     int    // index into RankReport.Steps
	Op       string // the NCCL operation (AllReduce, Broadcast, ...) when the name decodes, else the kernel name family (Normalize)
	Category kernelclass.Category
	Seq      int       // the call is the Seq-th (from 0) of its operation in the step on every rank
	Arrivals []Arrival // one per rank, in RankReport.Devices order
	Last     int       // the rank that arrived last (the latest start; ties go to the first)
}

// LastArrival returns the start of the last rank's kernel.
func (c *CollectiveCall) LastArrival() nsys.Time { return c.Arrivals[c.Last].Start }

// An Arrival is one rank's kernel of a matched call.
type Arrival struct {
	Kernel     int // index into the trace's Kernels
	Start, End nsys.Time
	// Wait is the time from the kernel's start to the last rank's arrival, clipped to the
	// kernel's duration; Transfer is the rest of the kernel. Wait + Transfer == End - Start.
	Wait, Transfer time.Duration
}

// collRef is one collective kernel of a device in an aligned step.
type collRef struct {
	kernel int
	op     string
	cat    kernelclass.Category
}

// rankReport matches the collective kernels of the report's devices across ranks; nil with
// fewer than two devices.
func rankReport(t *nsys.Trace, tls []*steps.Timeline, over steps.KernelCats, rep *Report, opt Options) *RankReport {
	n := len(rep.Devices)
	if n < 2 || sharedDevices(rep.Devices) {
		return nil // processes that share a GPU are no ranks
	}
	rr := &RankReport{Straggler: -1, AlignedBy: "index"}
	sel := make([][]Step, n)
	for d := range rep.Devices {
		sel[d] = rep.Devices[d].Summary.SelectedSteps(rep.Devices[d].Steps)
	}
	groups := alignSteps(rr, rep, sel)
	refs := alignedRefs(t, tls, over, rep, groups)
	// At most the fewest collectives any rank ran in each step are matched: room for them
	// all at once, calls and their arrivals, instead of growing both call by call.
	most := 0
	for g := range groups {
		m := len(refs[0][g])
		for d := 1; d < n; d++ {
			m = min(m, len(refs[d][g]))
		}
		most += m
	}
	rr.Calls = make([]CollectiveCall, 0, most)
	arrivals := make([]Arrival, 0, most*n)

	rr.Devices = make([]RankDevice, n)
	for d := range rr.Devices {
		dr := &rep.Devices[d]
		rd := &rr.Devices[d]
		rd.Device, rd.GPU = dr.Device, dr.GPU
		for g := range groups {
			rd.Kernels += len(refs[d][g])
		}
		rd.WaitFor = make([]time.Duration, n)
		rd.AllReduce.WaitFor = make([]time.Duration, n)
		rd.Collective.WaitFor = make([]time.Duration, n)
	}
	spreads := make([]time.Duration, 0, len(groups))
	for g, grp := range groups {
		rs := rankStep(t, rr, g, grp, refs, &arrivals)
		spreads = append(spreads, rs.Spread)
		rr.Steps = append(rr.Steps, rs)
	}
	finishRanks(rr, groups, spreads)
	return rr
}

// alignedRefs returns the collective kernels of each device's aligned steps (per device,
// per aligned step). A kernel belongs to the step of its device that its start falls in
// (as in account).
func alignedRefs(t *nsys.Trace, tls []*steps.Timeline, over steps.KernelCats, rep *Report, groups [][]Step) [][][]collRef {
	n := len(rep.Devices)
	// aligned maps each device's step positions (after Options.Skip) to aligned steps, -1 for
	// steps that are not aligned.
	refs := make([][][]collRef, n) // per device, per aligned step
	aligned := make([][]int, n)
	for d := range rep.Devices {
		dr := &rep.Devices[d]
		refs[d] = make([][]collRef, len(groups))
		aligned[d] = make([]int, len(dr.Steps))
		byIndex := make(map[int]int, len(dr.Steps))
		for i, s := range dr.Steps {
			aligned[d][i] = -1
			byIndex[s.Index] = i
		}
		for g, grp := range groups {
			aligned[d][byIndex[grp[d].Index]] = g
		}
	}
	if len(groups) > 0 {
		collectRefs(t, tls[0], over, rep, aligned, refs)
	}
	return refs
}

// rankStep matches the collectives of aligned step g (grp: its step on each device) and
// adds their wait and transfer time to the step and to the devices.
func rankStep(t *nsys.Trace, rr *RankReport, g int, grp []Step, refs [][][]collRef, arrivals *[]Arrival) RankStep {
	n := len(grp)
	rs := RankStep{Steps: make([]int, n), Wall: make([]time.Duration, n), Wait: make([]time.Duration, n),
		Transfer: make([]time.Duration, n), LastArrivals: make([]int, n)}
	for d, s := range grp {
		rs.Steps[d] = s.Index
		rs.Wall[d] = s.Wall()
	}
	rs.Spread = slices.Max(rs.Wall) - slices.Min(rs.Wall)
	first := len(rr.Calls)
	rr.Unmatched += matchStep(t, rr, g, refs, n, arrivals)
	calls := rr.Calls[first:]
	for i := range calls {
		c := &calls[i]
		rs.Calls++
		rs.LastArrivals[c.Last]++
		for d, a := range c.Arrivals {
			rs.Wait[d] += a.Wait
			rs.Transfer[d] += a.Transfer
			rd := &rr.Devices[d]
			rd.CollectivesMatched++
			rd.Wait += a.Wait
			rd.Transfer += a.Transfer
			rd.WaitFor[c.Last] += a.Wait
			if cm := rd.Comm(c.Category); cm != nil {
				cm.Calls++
				cm.Time += a.Wait + a.Transfer
				cm.Wait += a.Wait
				cm.Transfer += a.Transfer
				cm.WaitFor[c.Last] += a.Wait
			}
		}
		rr.Devices[c.Last].LastArrivals++
	}
	return rs
}

// finishRanks fills the per-device medians, the spread quantiles, the straggler and the
// unmatched warning once every aligned step is matched.
func finishRanks(rr *RankReport, groups [][]Step, spreads []time.Duration) {
	walls := make([]time.Duration, len(groups))
	for d := range rr.Devices {
		for g, grp := range groups {
			walls[g] = grp[d].Wall()
		}
		rr.Devices[d].MedianStep = Quantile(walls, 0.5)
	}
	rr.SpreadMedian, rr.SpreadP90 = Quantile(spreads, 0.5), Quantile(spreads, 0.9)
	best := 0
	for d := range rr.Devices {
		if rr.Devices[d].LastArrivals > best {
			best, rr.Straggler = rr.Devices[d].LastArrivals, d
		}
	}
	if rr.Unmatched > 0 {
		rr.Warnings = append(rr.Warnings, fmt.Errorf("ranks: %d collective kernel%s not present on every device left unmatched",
			rr.Unmatched, pluralS(rr.Unmatched)))
	}
}

// collectRefs finds the collective kernels of every device's aligned steps, in one pass over
// the trace's kernels (in start order).
func collectRefs(t *nsys.Trace, tl *steps.Timeline, over steps.KernelCats, rep *Report, aligned [][]int, refs [][][]collRef) {
	ops := map[nsys.NameID]string{}
	opOf := func(id nsys.NameID) string {
		if s, ok := ops[id]; ok {
			return s
		}
		name := t.Names[id]
		s := kernelclass.Normalize(name)
		if nk, ok := kernelclass.DecodeNCCL(name); ok {
			s = nk.Op
		}
		ops[id] = s
		return s
	}
	si := make([]int, len(rep.Devices)) // current step per device
	for i := range t.Kernels {
		k := &t.Kernels[i]
		st := &t.Sites[k.Site]
		cat := tl.Cats[st.Name]
		if c, ok := over.Category(int32(i)); ok {
			cat = c
		}
		if cat != kernelclass.AllReduce && cat != kernelclass.Collective {
			continue
		}
		d := slices.IndexFunc(rep.Devices, func(dr DeviceReport) bool { return dr.Device == st.Device })
		if d < 0 || len(rep.Devices[d].Steps) == 0 {
			continue
		}
		steps := rep.Devices[d].Steps
		for si[d]+1 < len(steps) && steps[si[d]+1].Start <= k.Start {
			si[d]++
		}
		if k.Start < steps[si[d]].Start {
			continue
		}
		if g := aligned[d][si[d]]; g >= 0 {
			refs[d][g] = append(refs[d][g], collRef{kernel: i, op: opOf(st.Name), cat: cat})
		}
	}
}

// matchStep matches the collective kernels of aligned step g across the n ranks, appends
// the matched calls to rr.Calls, and returns the number of kernels left unmatched.
func matchStep(t *nsys.Trace, rr *RankReport, g int, refs [][][]collRef, n int, arrivals *[]Arrival) int {
	// Operations in order of first appearance, device by device, so that the result does
	// not depend on map order.
	var order []string
	perOp := map[string][][]collRef{}
	for d := 0; d < n; d++ {
		for _, r := range refs[d][g] {
			lists, ok := perOp[r.op]
			if !ok {
				lists = make([][]collRef, n)
				order = append(order, r.op)
			}
			lists[d] = append(lists[d], r)
			perOp[r.op] = lists
		}
	}
	unmatched := 0
	first := len(rr.Calls)
	for _, op := range order {
		lists := perOp[op]
		m := len(lists[0])
		for _, l := range lists {
			m = min(m, len(l))
		}
		for _, l := range lists {
			unmatched += len(l) - m
		}
		for k := 0; k < m; k++ {
			if len(*arrivals)+n > cap(*arrivals) {
				*arrivals = make([]Arrival, 0, 64*n) // past the room made (not expected)
			}
			at := len(*arrivals)
			*arrivals = (*arrivals)[:at+n]
			c := CollectiveCall{Step: g, Op: op, Category: lists[0][k].cat, Seq: k, Arrivals: (*arrivals)[at : at+n : at+n]}
			var last nsys.Time
			for d := 0; d < n; d++ {
				kk := &t.Kernels[lists[d][k].kernel]
				c.Arrivals[d] = Arrival{Kernel: lists[d][k].kernel, Start: kk.Start, End: kk.End}
				if d == 0 || kk.Start > last {
					last, c.Last = kk.Start, d
				}
			}
			for d := range c.Arrivals {
				a := &c.Arrivals[d]
				dur := a.End.Sub(a.Start)
				a.Wait = min(last.Sub(a.Start), dur)
				a.Transfer = dur - a.Wait
			}
			rr.Calls = append(rr.Calls, c)
		}
	}
	calls := rr.Calls[first:]
	slices.SortStableFunc(calls, func(a, b CollectiveCall) int {
		return cmp.Compare(firstArrival(&a), firstArrival(&b))
	})
	return unmatched
}

func firstArrival(c *CollectiveCall) nsys.Time {
	f := c.Arrivals[0].Start
	for _, a := range c.Arrivals[1:] {
		f = min(f, a.Start)
	}
	return f
}

// alignSteps aligns the devices' selected steps: by index when every device has the same
// number, else by time overlap against the device with the fewest steps. Each group has
// one step per device.
func alignSteps(rr *RankReport, rep *Report, sel [][]Step) [][]Step {
	n := len(sel)
	same := true
	ref := 0
	for d := range sel {
		if len(sel[d]) != len(sel[0]) {
			same = false
		}
		if len(sel[d]) < len(sel[ref]) {
			ref = d
		}
	}
	var groups [][]Step
	if same {
		for i := range sel[0] {
			g := make([]Step, n)
			for d := range sel {
				g[d] = sel[d][i]
			}
			groups = append(groups, g)
		}
		return groups
	}
	rr.AlignedBy = "time"
	next := make([]int, n)
	dropped := 0
	pick := make([]int, n)
	for _, s := range sel[ref] {
		ok := true
		for d := range sel {
			if d == ref {
				continue
			}
			// The step of d that overlaps s the most, among those after the last one taken.
			j := next[d]
			for j < len(sel[d]) && sel[d][j].End <= s.Start {
				j++
			}
			best, bestOv := -1, time.Duration(0)
			for k := j; k < len(sel[d]) && sel[d][k].Start < s.End; k++ {
				if ov := min(s.End, sel[d][k].End).Sub(max(s.Start, sel[d][k].Start)); ov > bestOv {
					best, bestOv = k, ov
				}
			}
			if best < 0 {
				ok = false
				break
			}
			pick[d] = best
		}
		if !ok {
			dropped++
			continue
		}
		g := make([]Step, n)
		for d := range sel {
			if d == ref {
				g[d] = s
				continue
			}
			g[d] = sel[d][pick[d]]
			next[d] = pick[d] + 1
		}
		groups = append(groups, g)
	}
	var counts []string
	for d := range sel {
		counts = append(counts, fmt.Sprintf("device %d: %d", rep.Devices[d].Device, len(sel[d])))
	}
	w := fmt.Sprintf("ranks: devices have different numbers of summarised steps (%s); steps aligned by time overlap, %d aligned",
		strings.Join(counts, ", "), len(groups))
	if dropped > 0 {
		w += fmt.Sprintf(", %d step%s of device %d without a counterpart on every device left out", dropped, pluralS(dropped), rep.Devices[ref].Device)
	}
	rr.Warnings = append(rr.Warnings, errors.New(w))
	return groups
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
