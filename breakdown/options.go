package breakdown

import (
	"errors"
	"fmt"
	"math"
	"regexp"
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
	// split, when not nil, replaces splitAt for account (tests of the split sweep).
	split func(steps, kernels int) int
}

// A StepMethod says how Summarize finds steps.
type StepMethod struct {
	// Name is "auto" (nvtx, graph, sync and periodic in turn, the first that finds steps;
	// "" means auto too), "nvtx", "graph", "sync", "periodic" or "whole".
	Name string
	// NVTX, with Name "nvtx", matches the NVTX ranges that are steps; nil: the ranges of
	// the known step dialects.
	NVTX *regexp.Regexp
}

// ParseStepMethod parses a step method: "auto" (or ""), "nvtx", "nvtx:REGEX", "graph",
// "sync", "periodic" or "whole". Its errors are OptionErrors for OptSteps.
func ParseStepMethod(s string) (StepMethod, error) {
	switch {
	case s == "" || s == "auto":
		return StepMethod{Name: "auto"}, nil
	case strings.HasPrefix(s, "nvtx:"):
		re, err := regexp.Compile(strings.TrimPrefix(s, "nvtx:"))
		if err != nil {
			return StepMethod{}, &OptionError{OptSteps, fmt.Errorf("bad regular expression: %w", err)}
		}
		return StepMethod{Name: "nvtx", NVTX: re}, nil
	case s == "nvtx", s == "graph", s == "sync", s == "periodic", s == "whole":
		return StepMethod{Name: s}, nil
	}
	return StepMethod{}, &OptionError{OptSteps, fmt.Errorf("unknown method %q (want auto, nvtx, nvtx:REGEX, graph, sync, periodic or whole)", s)}
}

// String returns the text form ParseStepMethod reads.
func (m StepMethod) String() string {
	switch {
	case m.Name == "":
		return "auto"
	case m.NVTX != nil:
		return m.Name + ":" + m.NVTX.String()
	}
	return m.Name
}

// check reports whether m is a method ParseStepMethod could return, and its name.
func (m StepMethod) check() (string, error) {
	switch m.Name {
	case "", "auto":
		return "auto", nil
	case "nvtx", "graph", "sync", "periodic", "whole":
		if m.NVTX != nil && m.Name != "nvtx" {
			return "", &OptionError{OptSteps, fmt.Errorf("a regular expression needs method nvtx, not %s", m.Name)}
		}
		return m.Name, nil
	}
	return "", &OptionError{OptSteps, fmt.Errorf("unknown method %q (want auto, nvtx, nvtx:REGEX, graph, sync, periodic or whole)", m.Name)}
}

// A PhaseSelection says which steps a summary covers.
type PhaseSelection uint8

const (
	DecodeSteps  PhaseSelection = iota // the steps of phase Decode (the default)
	PrefillSteps                       // the steps of phase Prefill
	AllSteps                           // every step, whatever its phase
)

// ParsePhaseSelection parses "decode", "prefill" or "all".
func ParsePhaseSelection(s string) (PhaseSelection, error) {
	switch s {
	case "decode":
		return DecodeSteps, nil
	case "prefill":
		return PrefillSteps, nil
	case "all":
		return AllSteps, nil
	}
	return DecodeSteps, fmt.Errorf("unknown phase %q (want decode, prefill or all)", s)
}

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

// CheckSOL checks the speed-of-light options (not the trace): none negative, the bandwidth
// finite, one floor at most, the bandwidth only with a bytes floor and the batch only with a
// floor. Summarize calls it; a front end may call it before reading a trace.
func CheckSOL(opt Options) error {
	switch {
	case opt.SOLStep < 0:
		return &OptionError{OptSOLStep, ErrNegative}
	case opt.SOLBytes < 0:
		return &OptionError{OptSOLBytes, ErrNegative}
	case opt.SOLStep > 0 && opt.SOLBytes > 0:
		return &OptionError{OptSOLBytes, &ExcludesOption{OptSOLStep}}
	case opt.Bandwidth < 0:
		return &OptionError{OptBandwidth, ErrNegative}
	case math.IsNaN(opt.Bandwidth) || math.IsInf(opt.Bandwidth, 0):
		return &OptionError{OptBandwidth, errors.New("must be a finite number")}
	case opt.Bandwidth > 0 && opt.SOLBytes == 0:
		return &OptionError{OptBandwidth, &NeedsOption{[]Option{OptSOLBytes}}}
	case opt.Batch < 0:
		return &OptionError{OptBatch, ErrNegative}
	case opt.Batch > 0 && opt.SOLStep == 0 && opt.SOLBytes == 0:
		return &OptionError{OptBatch, &NeedsOption{[]Option{OptSOLStep, OptSOLBytes}}}
	}
	return nil
}
