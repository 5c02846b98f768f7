package breakdown

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// CUDA graph capture inside the window: a server that records a graph for a new batch
// size under load, or torch.compile's cudagraph trees recording, runs one iteration that
// captures (cudaStreamBeginCapture ... cudaStreamEndCapture) and instantiates the graph
// before its first replay: far more host time than a replay, often an eager warm-up too.
// Such an iteration is one step, marked (Step.GraphCapture), its host time in the graph
// calls stated (Step.CaptureHost), and kept out of every summary (SelectSteps).

var (
	// captureCall names the calls that show a capture: recording or instantiating a graph.
	captureCall = regexp.MustCompile(`^cu(da)?(Stream(BeginCapture|EndCapture)|Graph(Instantiate|Upload|ExecUpdate))`)
	// graphCall names the calls whose host time a capture iteration costs: every graph
	// call but the launch (cudaGraph*, cuGraph*) and the capture's begin and end.
	graphCall = regexp.MustCompile(`^cu(da)?(Stream(BeginCapture|EndCapture)|Graph)`)
)

// A graphHostCall is one graph call of a device's processes: its start and length, and
// whether it shows a capture (captureCall).
type graphHostCall struct {
	start   nsys.Time
	dur     time.Duration
	capture bool
}

// graphCalls returns the graph calls (graphCall, launches excluded) of the processes that
// run work on tl's device, by start.
func graphCalls(t *nsys.Trace, tl *steps.Timeline) []graphHostCall {
	kind := make([]uint8, len(t.APINames)) // 1: graph call, 2: capture call
	anyCall := false
	for i, n := range t.APINames {
		switch {
		case captureCall.MatchString(n):
			kind[i], anyCall = 2, true
		case graphCall.MatchString(n) && nsys.APIKindOf(n) != nsys.APIGraphLaunch:
			kind[i], anyCall = 1, true
		}
	}
	if !anyCall {
		return nil
	}
	var out []graphHostCall
	for _, c := range t.APICalls {
		w := &t.Callers[c.Caller]
		if int(w.Name) >= len(kind) || kind[w.Name] == 0 || !tl.HasProc(w.Proc) {
			continue
		}
		out = append(out, graphHostCall{start: c.Start, dur: c.End.Sub(c.Start), capture: kind[w.Name] == 2})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// markCaptures marks the steps that capture a CUDA graph: a capture call (captureCall) made
// after the previous window with work ended (a step, or a window outside steps that holds
// kernels: a capture done apart, before the loop, is that window's; an idle pause before
// the step is the step's own host work) and before the step's end. CaptureHost sums the
// graph calls of that window. steps are all of det's windows, outside ones included
// (before splitOutside); outside windows are never marked.
func markCaptures(steps []Step, bounds []steps.Boundary, calls []graphHostCall) {
	if len(calls) == 0 {
		return
	}
	j := 0
	lo := nsys.Time(-1 << 63)
	for i := range steps {
		s := &steps[i]
		if bounds[i].Outside {
			if s.TotalKernels() > 0 {
				lo = s.End
			}
			continue
		}
		for j < len(calls) && calls[j].start < lo {
			j++
		}
		var host time.Duration
		capture := false
		for ; j < len(calls) && calls[j].start < s.End; j++ {
			host += calls[j].dur
			capture = capture || calls[j].capture
		}
		if capture {
			s.GraphCapture, s.CaptureHost = true, host
		}
		lo = s.End
	}
}

// Window edges: nsys attached to a running server (nsys start/stop, --capture-range,
// --delay/--duration) begins and ends mid-iteration. The piece of an iteration at either edge
// is a step of its own, phase Partial, kept out of every summary and named in a warning.

// edgeShape is what the edge checks know of the steps: the most common first kernel of the
// steps (an iteration's first: the embedding, or the input copy's consumer) and their median
// kernel count.
func edgeShape(steps []Step, shapes []stepShape, skip func(int) bool) (first nsys.NameID, median int, ok bool) {
	count := map[nsys.NameID]int{}
	var ks []int
	best := 0
	for i := range steps {
		if skip(i) || !shapes[i].started {
			continue
		}
		ks = append(ks, steps[i].TotalKernels())
		f := shapes[i].first
		count[f]++
		if c := count[f]; c > best {
			first, best = f, c
		}
	}
	if len(ks) < 3 || 2*best <= len(ks) {
		return 0, 0, false
	}
	sort.Ints(ks)
	return first, ks[len(ks)/2], true
}

// openTrailingEdge makes the window outside steps at the end of det's bounds a step when it
// is the start of an iteration the capture cut: its first kernel is the steps' usual first
// kernel, it runs fewer kernels than the median step and no forward ends in it (fwds: the
// forward ends, sorted). It returns the index of that step in steps (before splitOutside),
// or -1.
func openTrailingEdge(det *steps.Detection, steps []Step, shapes []stepShape, fwds []nsys.Time) int {
	last := len(det.Bounds) - 1
	if last < 3 || !det.Bounds[last].Outside || steps[last].TotalKernels() == 0 || !shapes[last].started {
		return -1
	}
	first, median, ok := edgeShape(steps, shapes, func(i int) bool { return det.Bounds[i].Outside })
	// At least a quarter of an iteration's kernels: a transfer's few kernels after the loop
	// (a KV export) are no iteration.
	if k := steps[last].TotalKernels(); !ok || shapes[last].first != first || k >= median || 4*k < median {
		return -1
	}
	j := sort.Search(len(fwds), func(k int) bool { return fwds[k] >= steps[last].Start })
	if j < len(fwds) && fwds[j] < steps[last].End {
		return -1 // a forward ends in it: work after the loop, not a cut iteration
	}
	det.Bounds[last].Outside = false
	return last
}

// markEdges gives the window's edge steps phase Partial: the first step when it starts at the
// device's first activity with another first kernel than the steps' usual one, fewer kernels
// than the median step, and no input copy where at least 3/4 of the other steps copy their
// inputs (the capture opened mid-forward: a prefill copies its prompt), and the trailing edge
// opened by openTrailingEdge (trailing: true). It returns a warning naming them, or nil.
func markEdges(dev nsys.DeviceID, steps []Step, shapes []stepShape, trailing bool, inputs []bool) error {
	if len(steps) < 4 {
		return nil
	}
	n := len(steps)
	first, median, ok := edgeShape(steps, shapes, func(i int) bool { return i == 0 || (trailing && i == n-1) })
	if !ok {
		return nil
	}
	copying := 0
	for i := 1; i < n; i++ {
		if inputs[i] {
			copying++
		}
	}
	var what []string
	if s := &steps[0]; s.CutBy == CutWindowStart && shapes[0].started && shapes[0].first != first && s.TotalKernels() < median &&
		!inputs[0] && 4*copying >= 3*(n-1) {
		s.Phase = Partial
		s.PhaseEvidence = fmt.Sprintf("window start: the capture opened mid-forward (no input copy, its first kernel not the steps' first; %d of a median %d kernels)", s.TotalKernels(), median)
		what = append(what, fmt.Sprintf("step 0 (%d kernels) begins mid-forward", s.TotalKernels()))
	}
	if trailing {
		s := &steps[n-1]
		s.Phase = Partial
		s.PhaseEvidence = fmt.Sprintf("window end: the capture stopped mid-forward (%d of a median %d kernels, no forward end)", s.TotalKernels(), median)
		what = append(what, fmt.Sprintf("step %d (%d kernels) ends mid-forward", s.Index, s.TotalKernels()))
	}
	if len(what) == 0 {
		return nil
	}
	return fmt.Errorf("device %d: the capture window cuts iterations: %s; partial steps are kept out of every summary (a window opened on a running server holds no prefill)", dev, strings.Join(what, ", "))
}

// inputCopies says, per step, whether a host-to-device copy of the timeline starts in it.
func inputCopies(tl *steps.Timeline, steps []Step) []bool {
	out := make([]bool, len(steps))
	for _, m := range tl.Trace.Memops {
		if !tl.Owns(m.Device, m.Proc) || m.Kind != nsys.MemcpyHtoD {
			continue
		}
		i := sort.Search(len(steps), func(i int) bool { return steps[i].End > m.Start })
		if i < len(steps) && steps[i].Start <= m.Start {
			out[i] = true
		}
	}
	return out
}
