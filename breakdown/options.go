package breakdown

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// Options control Summarize. The zero value is valid: every device, steps found
// automatically, decode steps summarised, no speed-of-light floor.
type Options struct {
	Classifier *kernelclass.Classifier // nil: DefaultClassifier
	// Steps selects the step detection method (ParseStepMethod reads its text form); the
	// zero value is auto.
	Steps StepMethod
	// Skip drops the first Skip steps of each device (warm-up).
	Skip int
	// Device restricts the report to one device; nil means every device.
	Device *nsys.DeviceID
	// Phase selects the steps summarised in DeviceReport.Summary; the zero value is
	// DecodeSteps.
	Phase PhaseSelection
	// NVTXCategories override the classifier for kernels launched inside matching ranges.
	NVTXCategories []NVTXCategory
	// SOLStep is the expected minimum step time (the speed-of-light floor); 0 for none.
	SOLStep time.Duration
	// SOLBytes are the bytes every step must move through memory (weights, KV cache); the
	// floor is SOLBytes / Bandwidth. Exclusive with SOLStep; 0 for none.
	SOLBytes int64
	// Bandwidth is the memory bandwidth in bytes per second for SOLBytes; 0 takes the
	// device's datasheet bandwidth (DatasheetBandwidth), and a GPU not in that table is an
	// OptionError for SOLBytes wrapping ErrNoBandwidth.
	Bandwidth float64
	// Batch is the number of sequences a decode step advances by one token each, for the
	// total tokens/s of the speed-of-light view; 0 when unknown.
	Batch int

	// NoContext turns context classification off: kernels keep the category of their name
	// (and NVTXCategories), whatever their place in the step.
	NoContext bool
	// split, when not nil, replaces splitSteps for the passes run in pieces of steps
	// (tests of the split passes).
	split func(steps, kernels int) []int
	// kernelsOnly stops the summary once the kernels' context categories are known: the
	// report has its Kernels (and the devices' methods) only (ContextKernelStats).
	kernelsOnly bool
	// clockPass is set on the passes of summarizeRun (run.go): the trace's files are on
	// the clock as they are.
	clockPass bool
}

// A PhaseSelection says which steps a summary covers.
type PhaseSelection uint8

const (
	DecodeSteps  PhaseSelection = iota // the steps of phase Decode (the default)
	PrefillSteps                       // the steps of phase Prefill
	AllSteps                           // every step, whatever its phase
	MixedSteps                         // the steps of phase Mixed (prompt chunks beside decoding sequences)
)

// ParsePhaseSelection parses "decode", "prefill", "mixed" or "all".
func ParsePhaseSelection(s string) (PhaseSelection, error) {
	switch s {
	case "decode":
		return DecodeSteps, nil
	case "prefill":
		return PrefillSteps, nil
	case "mixed":
		return MixedSteps, nil
	case "all":
		return AllSteps, nil
	}
	return DecodeSteps, fmt.Errorf("unknown phase %q (want decode, prefill, mixed or all)", s)
}

// Phase returns the phase selected: Decode, Prefill, Mixed, or Unknown for AllSteps.
func (s PhaseSelection) Phase() Phase {
	switch s {
	case DecodeSteps:
		return Decode
	case PrefillSteps:
		return Prefill
	case MixedSteps:
		return Mixed
	}
	return Unknown
}

// The Options fields an OptionError can name, beside OptSteps.
const (
	OptSOLStep   Option = "SOLStep"
	OptSOLBytes  Option = "SOLBytes"
	OptBandwidth Option = "Bandwidth"
	OptBatch     Option = "Batch"
)

// ErrNegative is the Err of an OptionError for an option that must not be negative.
var ErrNegative = errors.New("must not be negative")

// A NeedsOption is the Err of an OptionError for an option given without any of the
// options it needs.
type NeedsOption struct{ Any []Option }

func (e *NeedsOption) Error() string {
	names := make([]string, len(e.Any))
	for i, o := range e.Any {
		names[i] = o.String()
	}
	return "needs " + strings.Join(names, " or ")
}

// An ExcludesOption is the Err of an OptionError for an option given with one it
// excludes.
type ExcludesOption struct{ Other Option }

func (e *ExcludesOption) Error() string { return "exclusive with " + e.Other.String() }

// ErrFloorRange is wrapped by the OptionError of a bandwidth that gives a speed-of-light
// floor outside 1 ns to MaxFloor.
var ErrFloorRange = errors.New("the floor must be 1ns to 24h")

// MaxFloor is the longest speed-of-light floor: far past any step, within a Duration.
const MaxFloor = 24 * time.Hour

// floorFits reports whether a floor of ns nanoseconds rounds to 1 ns to MaxFloor.
func floorFits(ns float64) bool { return ns >= 0.5 && ns <= float64(MaxFloor) }

// CheckSOL checks the speed-of-light options (not the trace): none negative, the bandwidth
// finite, one floor at most, the bandwidth only with a bytes floor and the batch only with a
// floor. Summarize calls it; a front end may call it before reading a trace.
func CheckSOL(opt Options) error {
	switch {
	case opt.SOLStep < 0:
		return &OptionError{Option: OptSOLStep, Err: ErrNegative}
	case opt.SOLBytes < 0:
		return &OptionError{Option: OptSOLBytes, Err: ErrNegative}
	case opt.SOLStep > 0 && opt.SOLBytes > 0:
		return &OptionError{Option: OptSOLBytes, Err: &ExcludesOption{OptSOLStep}}
	case opt.Bandwidth < 0:
		return &OptionError{Option: OptBandwidth, Err: ErrNegative}
	case math.IsNaN(opt.Bandwidth) || math.IsInf(opt.Bandwidth, 0):
		return &OptionError{Option: OptBandwidth, Err: errors.New("must be a finite number")}
	case opt.Bandwidth > 0 && opt.SOLBytes == 0:
		return &OptionError{Option: OptBandwidth, Err: &NeedsOption{[]Option{OptSOLBytes}}}
	case opt.SOLBytes > 0 && opt.Bandwidth > 0 && !floorFits(float64(opt.SOLBytes)/opt.Bandwidth*1e9):
		// 1e-300 GB/s made the floor overflow to a negative duration.
		return &OptionError{Option: OptBandwidth, Err: fmt.Errorf("%g GB/s gives %.4g GB a floor of %.3g s, out of range (%w)",
			opt.Bandwidth/1e9, float64(opt.SOLBytes)/1e9, float64(opt.SOLBytes)/opt.Bandwidth, ErrFloorRange)}
	case opt.Batch < 0:
		return &OptionError{Option: OptBatch, Err: ErrNegative}
	case opt.Batch > 0 && opt.SOLStep == 0 && opt.SOLBytes == 0:
		return &OptionError{Option: OptBatch, Err: &NeedsOption{[]Option{OptSOLStep, OptSOLBytes}}}
	}
	return nil
}
