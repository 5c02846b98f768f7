package steps

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
	// Uncertain is an iteration of another kernel mix than the loop's decode template that
	// no signal in the trace tells from decode or shows prompt tokens in (phase_evidence says
	// what differs): counted, kept out of the decode summary, named in a warning.
	Uncertain
	NumPhases
)

var phaseNames = [NumPhases]string{"unknown", "prefill", "decode", "mixed", "partial", "uncertain"}

func (p Phase) String() string {
	if p < NumPhases {
		return phaseNames[p]
	}
	return "unknown"
}

// A Boundary starts a step: the first GPU activity of the step on the device.
type Boundary struct {
	Start   nsys.Time
	Phase   Phase
	Label   string
	Outside bool // the activity from here to the next boundary belongs to no step
	Batch   int  // sequences in the step, when its NVTX text says
	Drafts  int  // draft forwards of a speculative round
	// By says what started the step (a Cut* id, or several joined By "+"); empty for a
	// boundary of segments, filled from the segment's cut By labelCuts.
	By string
	// split: the step starts after a forward's end in a window that held several
	// (splitForwards), or was made from forward ends alone (forwardSteps).
	split bool
	// DraftDepth, VerifyDepth: a round's forward depths (attention kernels).
	DraftDepth, VerifyDepth int32
	Why                     string // the evidence of a phase the finder gave (a partial round)
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

// A Detection is the result of one step-Detection method on one device.
type Detection struct {
	Method Method
	Detail string
	Bounds []Boundary // sorted by start, distinct
	// Forwards are the starts of the samplers that end the model's Forwards on the device
	// (Forwards.go), when the detection read them; nil otherwise.
	Forwards []nsys.Time
}

// HostIndex gives fast access to the API calls of the trace.
type HostIndex struct {
	t      *nsys.Trace
	Graphs map[uint64]bool    // keys of graph launches
	Roles  []kernelclass.Role // what each kernel name says of its place in a layer, per NameID
}

func isLaunchLike(k nsys.APIKind) bool {
	return k == nsys.APILaunch || k == nsys.APIGraphLaunch || k == nsys.APIMemcpy || k == nsys.APIMemset
}

func NewHostIndex(t *nsys.Trace) *HostIndex {
	h := &HostIndex{t: t, Graphs: map[uint64]bool{}, Roles: make([]kernelclass.Role, len(t.Names))}
	for i, n := range t.Names {
		h.Roles[i] = kernelclass.NameRole(n)
	}
	for _, c := range t.APICalls {
		if w := &t.Callers[c.Caller]; w.Kind == nsys.APIGraphLaunch {
			h.Graphs[actKey(w.Proc, c.Correlation)] = true
		}
	}
	return h
}

// sortBounds sorts boundaries by start and drops duplicates (keeping the first).
func sortBounds(b []Boundary) []Boundary {
	sort.SliceStable(b, func(i, j int) bool { return b[i].Start < b[j].Start })
	out := b[:0]
	for i, x := range b {
		if i > 0 && x.Start == out[len(out)-1].Start {
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
	run  func(c *detectInput) *Detection
}

// detectInput is what a detector may read: the trace, its host index, the device's
// timeline, the device's NVTX detection (nil without one), and whether the method was asked
// for by name (not auto).
type detectInput struct {
	t      *nsys.Trace
	h      *HostIndex
	tl     *Timeline
	nvtx   *Detection
	forced bool
}

var (
	nvtxDetector = detector{
		help: "NVTX ranges (TensorRT-LLM, vLLM, SGLang, or plain prefill/decode/step names; nvtx:REGEX for your own), mapped to the GPU work their thread launched",
		run: func(c *detectInput) *Detection {
			// A single matching range in auto mode is a phase marker (warm-up, benchmark
			// loop), not a step.
			if c.nvtx != nil && (c.forced || c.nvtx.steps() >= 2) {
				return c.nvtx
			}
			return nil
		}}
	periodicDetector = detector{
		help: "periodicity of the kernel sequence",
		run:  func(c *detectInput) *Detection { return periodicDetect(c.tl) }}
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
		run:  func(c *detectInput) *Detection { return findSteps(c.t, c.h, c.tl, use) },
	}
}

// Detect finds the steps of one device with the method asked for: the first detector
// of its chain that finds any (nvtx: the device's NVTX detection, if any). When none does,
// the whole trace is one step, with a warning unless whole was asked for.
func Detect(t *nsys.Trace, h *HostIndex, tl *Timeline, nvtx *Detection, method Method) (*Detection, error) {
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
		warn = fmt.Errorf("device %d: no step markers found (NVTX, graph launches, synchronisation, periodicity); the whole trace is one step", tl.Dev)
	case MethodWhole:
	default:
		warn = &NoStepsWarning{Device: tl.Dev, Method: method}
	}
	det := &Detection{Method: MethodWhole, Detail: "whole trace"}
	tl.Each(func(a *Activity) bool {
		det.Bounds = []Boundary{{Start: a.Start, By: CutWhole}}
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
