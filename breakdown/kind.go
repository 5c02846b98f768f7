package breakdown

import (
	"fmt"
	"regexp"
	"sort"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// Not every capture is of an inference loop: a training loop (forward, backward and an
// optimizer step each iteration), a weight-loading window (host-to-device copies and
// next to no kernels) or a distributed start-up are read too, and said to be what they
// are (DeviceReport.Kind), with none of inference's words: their steps have no inference
// phase (Unknown) and the findings' rules, written for serving loops, are not applied.

// Trace kinds of a device (DeviceReport.Kind).
const (
	KindInference = ""         // a serving or generation loop (the default)
	KindTraining  = "training" // training steps: backward and optimizer kernels in most steps
	KindLoading   = "loading"  // weights being loaded: host-to-device copies, no loop of the model
)

var (
	// backwardKernel names autograd's and the libraries' backward kernels.
	backwardKernel = regexp.MustCompile(`(?i)backward|_bwd|bwd_|grad_input|grad_weight|wgrad|dgrad`)
	// optimizerKernel names optimizer steps: torch's foreach/fused optimizers, apex, DeepSpeed.
	optimizerKernel = regexp.MustCompile(`(?i)multi_tensor_apply|fused_?adam|adamw?_|_adam|fused_sgd|lamb_`)
)

// traceKind says what the device's steps are: training when at least half of them hold a
// backward or an optimizer kernel (and the model's forwards end in no sampler); loading when
// no forward of a model ends on the device, LoadBytes or more were copied to it and copies
// are 80% or more of its busy time; else inference.
func traceKind(t *nsys.Trace, tl *steps.Timeline, ss []Step, forwards int) (string, string) {
	if len(ss) == 0 {
		return KindInference, ""
	}
	var h2d int64
	for i := range t.Memops {
		if m := &t.Memops[i]; m.Kind == nsys.MemcpyHtoD && tl.Owns(m.Device, m.Proc) {
			h2d += m.Bytes
		}
	}
	var copyBusy, busy int64
	for i := range ss {
		for c, b := range ss[i].Busy {
			if c == int(kernelclass.Idle) {
				continue
			}
			busy += int64(b)
			if c == int(kernelclass.Memory) {
				copyBusy += int64(b)
			}
		}
	}
	if forwards < 2 && h2d >= LoadBytes && 5*copyBusy >= 4*busy {
		return KindLoading, fmt.Sprintf("loading, no serving loop: %.2f GB copied host to device, copies %.0f%% of the GPU's busy time", float64(h2d)/1e9, 100*float64(copyBusy)/float64(max(busy, 1)))
	}
	if forwards >= 2 {
		return KindInference, "" // the model's forwards end in a sampler: a generation loop
	}
	names := make([]uint8, len(t.Names)) // 1 backward, 2 optimizer
	any := false
	for i, n := range t.Names {
		switch {
		case backwardKernel.MatchString(n):
			names[i], any = 1, true
		case optimizerKernel.MatchString(n):
			names[i], any = 2, true
		}
	}
	if !any {
		return KindInference, ""
	}
	holds := make([]uint8, len(ss)) // per step, bits: 1 backward, 2 optimizer
	tl.Each(func(a *steps.Activity) bool {
		if a.Src != steps.SrcKernel || names[a.Name] == 0 {
			return true
		}
		i := sort.Search(len(ss), func(i int) bool { return ss[i].End > a.Start })
		if i < len(ss) && ss[i].Start <= a.Start {
			holds[i] |= names[a.Name]
		}
		return true
	})
	n, bwd, opt := 0, 0, 0
	for _, h := range holds {
		if h != 0 {
			n++
		}
		if h&1 != 0 {
			bwd++
		}
		if h&2 != 0 {
			opt++
		}
	}
	if 2*n < len(ss) {
		return KindInference, ""
	}
	return KindTraining, fmt.Sprintf("training steps, not inference: %d of %d steps run backward kernels, %d an optimizer step", bwd, len(ss), opt)
}

// markKind gives the steps of a device that is not an inference loop no inference phase.
func markKind(ss []Step, kind, why string) {
	if kind == KindInference {
		return
	}
	for i := range ss {
		if ss[i].Phase != Partial {
			ss[i].Phase, ss[i].PhaseEvidence = Unknown, why
		}
	}
}
