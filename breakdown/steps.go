package breakdown

import (
	"fmt"
	"sort"
	"strings"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// Phase says whether a step processed prompts (prefill), generated tokens (decode), or both
// in one batch (mixed: a prompt chunk beside decoding sequences, as continuous batching runs).
type Phase uint8

// Phases.
const (
	Unknown Phase = iota
	Prefill
	Decode
	Mixed
	// Partial is an iteration cut by the capture window's start or end (nsys attached to a
	// running server): a piece of a forward, kept out of every summary.
	Partial
	numPhases
)

var phaseNames = [numPhases]string{"unknown", "prefill", "decode", "mixed", "partial"}

func (p Phase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return "unknown"
}

// A boundary starts a step: the first GPU activity of the step on the device.
type boundary struct {
	start   nsys.Time
	phase   Phase
	label   string
	outside bool // the activity from here to the next boundary belongs to no step
	batch   int  // sequences in the step, when its NVTX text says
	drafts  int  // draft forwards of a speculative round
	// by says what started the step (a Cut* id, or several joined by "+"); empty for a
	// boundary of segments, filled from the segment's cut by labelCuts.
	by string
	// split: the step starts after a forward's end in a window that held several
	// (splitForwards), or was made from forward ends alone (forwardSteps).
	split bool
	// draftDepth, verifyDepth: a round's forward depths (attention kernels).
	draftDepth, verifyDepth int32
	why                     string // the evidence of a phase the finder gave (a partial round)
}

// Cut ids: what started a step (Step.CutBy).
const (
	CutNVTX        = "nvtx"         // an NVTX step range launched the step's first work
	CutReadBack    = "read_back"    // the first activity after a device-to-host read-back
	CutSync        = "sync"         // the first launch after a synchronize call
	CutGraphLaunch = "graph_launch" // a CUDA graph launch
	CutInputCopy   = "input_copy"   // a host-to-device copy
	CutForwardEnd  = "forward_end"  // after the sampler that ends a forward
	CutPause       = "pause"        // the first kernel after an idle pause between requests
	CutPeriodicity = "periodicity"  // the period of the kernel sequence
	CutWindowStart = "window_start" // the device's first activity in the capture
	CutWhole       = "whole"        // the whole trace is one step
)

// A detection is the result of one step-detection method on one device.
type detection struct {
	method Method
	detail string
	bounds []boundary // sorted by start, distinct
	// forwards are the starts of the samplers that end the model's forwards on the device
	// (forwards.go), when the detection read them; nil otherwise.
	forwards []nsys.Time
}

// hostIndex gives fast access to the API calls of the trace.
type hostIndex struct {
	t      *nsys.Trace
	graphs map[uint64]bool    // keys of graph launches
	roles  []kernelclass.Role // what each kernel name says of its place in a layer, per NameID
}

func isLaunchLike(k nsys.APIKind) bool {
	return k == nsys.APILaunch || k == nsys.APIGraphLaunch || k == nsys.APIMemcpy || k == nsys.APIMemset
}

func newHostIndex(t *nsys.Trace) *hostIndex {
	h := &hostIndex{t: t, graphs: map[uint64]bool{}, roles: make([]kernelclass.Role, len(t.Names))}
	for i, n := range t.Names {
		h.roles[i] = kernelclass.NameRole(n)
	}
	for _, c := range t.APICalls {
		if w := &t.Callers[c.Caller]; w.Kind == nsys.APIGraphLaunch {
			h.graphs[actKey(w.Proc, c.Correlation)] = true
		}
	}
	return h
}

// sortBounds sorts boundaries by start and drops duplicates (keeping the first).
func sortBounds(b []boundary) []boundary {
	sort.SliceStable(b, func(i, j int) bool { return b[i].start < b[j].start })
	out := b[:0]
	for i, x := range b {
		if i > 0 && x.start == out[len(out)-1].start {
			continue
		}
		out = append(out, x)
	}
	return out
}

// A detector is one way of finding a device's steps, a link of a method's chain
// (stepMethods): it returns nil when it finds none.
type detector struct {
	help string // what it reads, for the help text (StepMethodsHelp)
	run  func(c *detectInput) *detection
}

// detectInput is what a detector may read: the trace, its host index, the device's
// timeline, the device's NVTX detection (nil without one), and whether the method was asked
// for by name (not auto).
type detectInput struct {
	t      *nsys.Trace
	h      *hostIndex
	tl     *timeline
	nvtx   *detection
	forced bool
}

var (
	nvtxDetector = detector{
		help: "NVTX ranges (TensorRT-LLM, vLLM, SGLang, or plain prefill/decode/step names; nvtx:REGEX for your own), mapped to the GPU work their thread launched",
		run: func(c *detectInput) *detection {
			// A single matching range in auto mode is a phase marker (warm-up, benchmark
			// loop), not a step.
			if c.nvtx != nil && (c.forced || c.nvtx.steps() >= 2) {
				return c.nvtx
			}
			return nil
		}}
	periodicDetector = detector{
		help: "periodicity of the kernel sequence",
		run:  func(c *detectInput) *detection { return periodicDetect(c.tl) }}
)

// signalsDetector finds the iterations of the serving loop from the host signals in use
// (cutSync, cutGraph, cutH2D) and the model's forwards (findSteps).
func signalsDetector(use uint8) detector {
	var what []string
	for _, s := range cutSignals {
		if use&s.cut != 0 {
			what = append(what, s.help)
		}
	}
	return detector{
		help: "the iterations of the serving loop: host signals (" + strings.Join(what, ", ") + ") cut where the model's forwards end (the sampler after the lm_head)",
		run:  func(c *detectInput) *detection { return findSteps(c.t, c.h, c.tl, use) },
	}
}

// detectSteps finds the steps of one device with the method asked for: the first detector
// of its chain that finds any (nvtx: the device's NVTX detection, if any). When none does,
// the whole trace is one step, with a warning unless whole was asked for.
func detectSteps(t *nsys.Trace, h *hostIndex, tl *timeline, nvtx *detection, method Method) (*detection, error) {
	spec, _ := method.spec()
	in := &detectInput{t: t, h: h, tl: tl, nvtx: nvtx, forced: method != MethodAuto}
	for _, d := range spec.chain {
		if det := d.run(in); det != nil {
			return det, nil
		}
	}
	var warn error
	switch method {
	case MethodAuto:
		warn = fmt.Errorf("device %d: no step markers found (NVTX, graph launches, synchronisation, periodicity); the whole trace is one step", tl.dev)
	case MethodWhole:
	default:
		warn = &NoStepsWarning{Device: tl.dev, Method: method}
	}
	det := &detection{method: MethodWhole, detail: "whole trace"}
	tl.each(func(a *activity) bool {
		det.bounds = []boundary{{start: a.start, by: CutWhole}}
		return false
	})
	return det, warn
}

// A NoStepsWarning says that the step method asked for (not auto) found no steps on a
// device, so that the whole trace is one step.
type NoStepsWarning struct {
	Device nsys.DeviceID
	Method Method
}

func (w *NoStepsWarning) Error() string {
	return fmt.Sprintf("device %d: step method %s found no steps; the whole trace is one step", w.Device, w.Method)
}
