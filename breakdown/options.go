package breakdown

import (
	"errors"
	"fmt"
	"math"
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
	// (and --nvtx-category), whatever their place in the step.
	NoContext bool
	// split, when not nil, replaces splitAt for account (tests of the split sweep).
	split func(steps, kernels int) int
}

// A PhaseSelection says which steps a summary covers.
type PhaseSelection uint8

const (
	DecodeSteps  PhaseSelection = iota // the steps of phase Decode (the default)
	PrefillSteps                       // the steps of phase Prefill
	AllSteps                           // every step, whatever its phase
)

// Phase returns the phase selected: Decode, Prefill, or Unknown for AllSteps.
func (s PhaseSelection) Phase() Phase {
	switch s {
	case DecodeSteps:
		return Decode
	case PrefillSteps:
		return Prefill
	}
	return Unknown
}

// An Option names a field of Options, for OptionError.
type Option uint8

// The Options fields an OptionError can name.
const (
	OptSteps Option = iota
	OptSOLStep
	OptSOLBytes
	OptBandwidth
	OptBatch
)

var optionNames = [...]string{
	OptSteps:     "Steps",
	OptSOLStep:   "SOLStep",
	OptSOLBytes:  "SOLBytes",
	OptBandwidth: "Bandwidth",
	OptBatch:     "Batch",
}

// String returns the name of the Options field.
func (o Option) String() string {
	if int(o) < len(optionNames) {
		return optionNames[o]
	}
	return fmt.Sprintf("option(%d)", int(o))
}

// An OptionError says that the value of one of the Options is invalid, as opposed to a
// problem of the trace: a command line reports it as a usage mistake, naming its own flag
// for Option.
type OptionError struct {
	Option Option
	Err    error
}

func (e *OptionError) Error() string { return e.Option.String() + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// checkSOL checks the speed-of-light options (not the trace).
func checkSOL(opt Options) error {
	negative := errors.New("must not be negative")
	switch {
	case opt.SOLStep < 0:
		return &OptionError{OptSOLStep, negative}
	case opt.SOLBytes < 0:
		return &OptionError{OptSOLBytes, negative}
	case opt.Bandwidth < 0:
		return &OptionError{OptBandwidth, negative}
	case opt.Batch < 0:
		return &OptionError{OptBatch, negative}
	case math.IsNaN(opt.Bandwidth) || math.IsInf(opt.Bandwidth, 0):
		return &OptionError{OptBandwidth, errors.New("must be a finite number")}
	case opt.SOLStep > 0 && opt.SOLBytes > 0:
		return &OptionError{OptSOLBytes, errors.New("exclusive with a step-time floor (SOLStep)")}
	}
	return nil
}
