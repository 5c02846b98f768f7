package breakdown

import (
	"regexp"
	"sort"
	"time"

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
func graphCalls(t *nsys.Trace, tl *timeline) []graphHostCall {
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
		if int(w.Name) >= len(kind) || kind[w.Name] == 0 || !tl.hasProc(w.Proc) {
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
func markCaptures(steps []Step, bounds []boundary, calls []graphHostCall) {
	if len(calls) == 0 {
		return
	}
	j := 0
	lo := nsys.Time(-1 << 63)
	for i := range steps {
		s := &steps[i]
		if bounds[i].outside {
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
