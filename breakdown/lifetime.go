package breakdown

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// A whole process profiled (`nsys profile python serve.py`, no capture range) holds more
// than the served loop: start-up and weight loading (large host-to-device copies), warm-up
// iterations, CUDA graph capture, then the loop, then shutdown. Only the loop's iterations
// are steps; what lies before and after it is named with its time (DeviceReport.Lifetime)
// and is outside steps.

// Span kinds of a whole-process capture outside its served loop (LoopSpan.Kind).
const (
	SpanLoad     = "load"     // start-up and weight loading: from the process's first CUDA call to the first iteration
	SpanWarmUp   = "warm_up"  // iterations before graph capture
	SpanCapture  = "capture"  // the iterations that capture CUDA graphs before serving
	SpanShutdown = "shutdown" // from the loop's last step to the process's last CUDA call
)

// LoadBytes is the least host-to-device volume, in copies of LoadCopy bytes or more before
// the first iteration, that makes a capture a whole process's: weights being loaded. A
// window opened on a running server copies inputs of kilobytes.
const (
	LoadBytes = 256 << 20
	LoadCopy  = 1 << 20
)

// A LoopSpan is a span of a whole-process capture outside its served loop.
type LoopSpan struct {
	Kind       string
	Start, End nsys.Time
	Iterations int   // warm_up, capture: the iterations it holds
	Bytes      int64 // load: the host-to-device bytes copied (copies of LoadCopy or more)
}

// Dur is the span's length.
func (s LoopSpan) Dur() time.Duration { return s.End.Sub(s.Start) }

// lifetimeSpans finds the served loop of a whole-process capture among det's windows: when
// LoadBytes or more were copied to the device before the first iteration, the iterations
// up to the last one that captures a CUDA graph (calls) are warm-up and capture, made
// outside windows; the capture's last window is first cut at the first host-to-device
// copy after its last capture call (the first served iteration's input, which it would
// otherwise swallow). It returns the spans before the loop (load, warm_up, capture); nil,
// with det unchanged, for any other capture.
func lifetimeSpans(t *nsys.Trace, tl *steps.Timeline, det *steps.Detection, calls []graphHostCall) []LoopSpan {
	if det.Method == MethodWhole || det.Method == MethodNVTX {
		return nil
	}
	first := -1
	for i, b := range det.Bounds {
		if !b.Outside {
			first = i
			break
		}
	}
	if first < 0 {
		return nil
	}
	start := det.Bounds[first].Start
	var bytes int64
	var copies []*nsys.Memop // the device's host-to-device copies, by start
	for i := range t.Memops {
		m := &t.Memops[i]
		if m.Kind != nsys.MemcpyHtoD || !tl.Owns(m.Device, m.Proc) {
			continue
		}
		copies = append(copies, m)
		if m.Start < start && m.Bytes >= LoadCopy {
			bytes += m.Bytes
		}
	}
	if bytes < LoadBytes {
		return nil
	}
	end := func(i int) nsys.Time { // window i's end
		if i+1 < len(det.Bounds) {
			return det.Bounds[i+1].Start
		}
		return math.MaxInt64
	}
	// The last window that holds a capture call, and where its captures end.
	last, capEnd := -1, nsys.Time(0)
	firstCap := -1
	for i := first; i < len(det.Bounds); i++ {
		if det.Bounds[i].Outside {
			continue
		}
		for _, c := range calls {
			if c.capture && c.start >= det.Bounds[i].Start && c.start < end(i) {
				if firstCap < 0 {
					firstCap = i
				}
				last, capEnd = i, max(capEnd, c.start+nsys.Time(c.dur))
			}
		}
	}
	var spans []LoopSpan
	load := LoopSpan{Kind: SpanLoad, Start: start, End: start, Bytes: bytes}
	for _, c := range t.APICalls {
		if tl.HasProc(t.Callers[c.Caller].Proc) {
			load.Start = min(load.Start, c.Start)
			break // by start: the first is the earliest
		}
	}
	spans = append(spans, load)
	if last < 0 {
		return spans // no graph capture: every iteration is the loop's (warm-up not told apart)
	}
	// Cut the last capture window at the first input copy after its captures.
	for _, m := range copies {
		if m.Start > capEnd && m.Start > det.Bounds[last].Start && m.Start < end(last) {
			at, found := slices.BinarySearchFunc(det.Bounds, m.Start, func(b steps.Boundary, t nsys.Time) int { return cmp.Compare(b.Start, t) })
			if !found {
				det.Bounds = slices.Insert(det.Bounds, at, steps.Boundary{Start: m.Start, By: CutInputCopy})
			}
			break
		}
	}
	served := last + 1
	if served >= len(det.Bounds) {
		return spans[:1] // nothing after the captures: keep the iterations as they are
	}
	n := 0
	for i := first; i < firstCap; i++ {
		if !det.Bounds[i].Outside {
			n++
		}
	}
	if n > 0 {
		spans = append(spans, LoopSpan{Kind: SpanWarmUp, Start: start, End: det.Bounds[firstCap].Start, Iterations: n})
	}
	k := 0
	for i := firstCap; i < served; i++ {
		if !det.Bounds[i].Outside {
			k++
		}
	}
	spans = append(spans, LoopSpan{Kind: SpanCapture, Start: det.Bounds[firstCap].Start, End: det.Bounds[served].Start, Iterations: k})
	for i := first; i < served; i++ {
		det.Bounds[i].Outside = true
	}
	return spans
}

// shutdownSpan is the span from the loop's last step end to the last CUDA call of the
// device's processes, for a whole-process capture; ok is false when there is none.
func shutdownSpan(t *nsys.Trace, tl *steps.Timeline, steps []Step) (LoopSpan, bool) {
	if len(steps) == 0 {
		return LoopSpan{}, false
	}
	lastEnd := steps[len(steps)-1].End
	var callEnd nsys.Time
	for _, c := range t.APICalls {
		if c.End > callEnd && tl.HasProc(t.Callers[c.Caller].Proc) {
			callEnd = c.End
		}
	}
	if callEnd <= lastEnd {
		return LoopSpan{}, false
	}
	return LoopSpan{Kind: SpanShutdown, Start: lastEnd, End: callEnd}, true
}
