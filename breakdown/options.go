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

// optionError passes an error in the options through Options.UsageError.
func optionError(opt Options, err error) error {
	if opt.UsageError != nil {
		return opt.UsageError(err)
	}
	return err
}

// CheckSteps reports whether s is a valid Options.Steps value (the --steps flag), with an
// error a command line can show.
func CheckSteps(s string) error {
	_, _, err := parseSteps(s)
	return err
}

func parseSteps(s string) (method string, re *regexp.Regexp, err error) {
	switch {
	case s == "" || s == "auto":
		return "auto", nil, nil
	case strings.HasPrefix(s, "nvtx:"):
		re, err := regexp.Compile(strings.TrimPrefix(s, "nvtx:"))
		if err != nil {
			return "", nil, fmt.Errorf("--steps: bad regular expression: %w", err)
		}
		return "nvtx", re, nil
	case s == "nvtx", s == "graph", s == "sync", s == "periodic", s == "whole":
		return s, nil, nil
	}
	return "", nil, fmt.Errorf("--steps: unknown method %q (want auto, nvtx, nvtx:REGEX, graph, sync, periodic or whole)", s)
}

// Options control Summarize.
type Options struct {
	Classifier *kernelclass.Classifier // nil: DefaultClassifier
	// Steps selects the step detection method: "" or "auto" (try each in order), "nvtx",
	// "nvtx:REGEX", "graph", "sync", "periodic" or "whole".
	Steps string
	// Skip drops the first Skip steps of each device (warm-up).
	Skip int
	// Device restricts the report to one device; nil means every device.
	Device *nsys.DeviceID
	// Phase is the phase summarised in DeviceReport.Summary; Unknown means every step.
	Phase Phase
	// AllPhases summarises every step instead of one phase.
	AllPhases bool
	// NVTXCategories override the classifier for kernels launched inside matching ranges.
	NVTXCategories []NVTXCategory
	// SOLStep is the expected minimum step time (the speed-of-light floor); 0 for none.
	SOLStep time.Duration
	// SOLBytes are the bytes every step must move through memory (weights, KV cache); the
	// floor is SOLBytes / Bandwidth. Exclusive with SOLStep; 0 for none.
	SOLBytes int64
	// Bandwidth is the memory bandwidth in bytes per second for SOLBytes; 0 takes the
	// device's datasheet bandwidth (DatasheetBandwidth), and a GPU not in that table is an
	// error wrapping ErrNoBandwidth.
	Bandwidth float64
	// Batch is the number of sequences a decode step advances by one token each, for the
	// total tokens/s of the speed-of-light view; 0 when unknown.
	Batch int
	// UsageError, when not nil, wraps errors that come from these options rather than from
	// the trace (such as ErrNoBandwidth), so that a command line can report them as usage
	// mistakes.
	UsageError func(error) error
}

// checkSOL checks the speed-of-light options (not the trace).
func checkSOL(opt Options) error {
	switch {
	case opt.SOLStep < 0 || opt.SOLBytes < 0 || opt.Bandwidth < 0 || opt.Batch < 0:
		return errors.New("speed of light: --sol-step, --sol-bytes, --bandwidth and --batch must not be negative")
	case math.IsNaN(opt.Bandwidth) || math.IsInf(opt.Bandwidth, 0):
		return errors.New("speed of light: --bandwidth must be a finite number")
	case opt.SOLStep > 0 && opt.SOLBytes > 0:
		return errors.New("speed of light: give --sol-step or --sol-bytes, not both")
	}
	return nil
}
