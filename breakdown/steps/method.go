package steps

import (
	"fmt"
	"regexp"
	"strings"
)

// Method is a step detection method: one a user asks for (Options.Steps) and the one that
// found a device's steps (DeviceReport.Method; never MethodAuto).
type Method uint8

// Step detection methods. Auto tries the others in the order of stepMethods.
const (
	MethodAuto     Method = iota // NVTX, then host signals, then periodicity: the first that finds steps
	MethodNVTX                   // NVTX ranges mapped to the GPU work they launched
	MethodGraph                  // one step per CUDA graph launch
	MethodSync                   // host synchronisation points (device-to-host copy, synchronize calls)
	MethodPeriodic               // periodicity of the kernel name sequence
	MethodWhole                  // the whole trace is one step
)

// methodSpec is one step method: its name (options, reports, help), the detectors it runs
// in order (the first that finds steps wins; none: the whole trace), and what its failure
// says when asked for and nothing is found (NoStepsError; "" for none).
type methodSpec struct {
	method Method
	name   string
	chain  []detector
	none   string
}

// stepMethods is the one list of step methods: option parsing, Method.String, the help
// text, forced-method errors and auto's fallback chain all read it.
var stepMethods = []methodSpec{
	{MethodAuto, "auto", []detector{nvtxDetector, signalsDetector(cutSync | cutGraph | cutH2D), periodicDetector}, ""},
	{MethodNVTX, "nvtx", []detector{nvtxDetector}, ""}, // fails on its own: matchNVTX
	{MethodGraph, "graph", []detector{signalsDetector(cutGraph)}, "no CUDA graph launch cuts the GPU work into repeating steps"},
	{MethodSync, "sync", []detector{signalsDetector(cutSync)}, "no host synchronisation cuts the GPU work into repeating steps"},
	{MethodPeriodic, "periodic", []detector{periodicDetector}, "the kernel sequence does not repeat"},
	{MethodWhole, "whole", nil, ""},
}

func (m Method) spec() (methodSpec, bool) {
	for _, s := range stepMethods {
		if s.method == m {
			return s, true
		}
	}
	return methodSpec{}, false
}

// NoneFound says what it means that the method, asked for by name, found no steps on any
// device (the What of breakdown's NoStepsError); "" for a method that does not fail so
// (auto and whole; nvtx fails on its own: MatchNVTX).
func (m Method) NoneFound() string {
	s, _ := m.spec()
	return s.none
}

func (m Method) String() string {
	if s, ok := m.spec(); ok {
		return s.name
	}
	return fmt.Sprintf("method(%d)", uint8(m))
}

// StepMethodChoices lists the values ParseStepMethod accepts, for usage text:
// "auto, nvtx, nvtx:REGEX, graph, sync, periodic or whole".
func StepMethodChoices() string {
	var names []string
	for _, s := range stepMethods {
		names = append(names, s.name)
		if s.method == MethodNVTX {
			names = append(names, "nvtx:REGEX")
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// StepMethodsHelp says, in the order auto tries them, what auto reads to find steps.
func StepMethodsHelp() string {
	var parts []string
	for _, d := range stepMethods[0].chain {
		parts = append(parts, d.help)
	}
	return strings.Join(parts, "; ") + "; else the whole trace."
}

// A StepMethod says how Summarize finds steps.
type StepMethod struct {
	// Method is the method asked for; the zero value is MethodAuto.
	Method Method
	// NVTX, with MethodNVTX, matches the NVTX ranges that are steps; nil: the ranges of
	// the known step dialects.
	NVTX *regexp.Regexp
}

// ParseStepMethod parses a step method: a name of StepMethodChoices ("" is auto) or
// "nvtx:REGEX". Its errors are OptionErrors for OptSteps.
func ParseStepMethod(s string) (StepMethod, error) {
	if rest, ok := strings.CutPrefix(s, "nvtx:"); ok {
		re, err := regexp.Compile(rest)
		if err != nil {
			return StepMethod{}, &OptionError{OptSteps, fmt.Errorf("bad regular expression: %w", err)}
		}
		return StepMethod{Method: MethodNVTX, NVTX: re}, nil
	}
	if s == "" {
		return StepMethod{}, nil
	}
	for _, m := range stepMethods {
		if m.name == s {
			return StepMethod{Method: m.method}, nil
		}
	}
	return StepMethod{}, &OptionError{OptSteps, fmt.Errorf("unknown method %q (want %s)", s, StepMethodChoices())}
}

// String returns the text form ParseStepMethod reads.
func (m StepMethod) String() string {
	if m.NVTX != nil {
		return m.Method.String() + ":" + m.NVTX.String()
	}
	return m.Method.String()
}

// Check reports whether m is a method ParseStepMethod could return.
func (m StepMethod) Check() error {
	if _, ok := m.Method.spec(); !ok {
		return &OptionError{OptSteps, fmt.Errorf("unknown method %v (want %s)", m.Method, StepMethodChoices())}
	}
	if m.NVTX != nil && m.Method != MethodNVTX {
		return &OptionError{OptSteps, fmt.Errorf("a regular expression needs method nvtx, not %s", m.Method)}
	}
	return nil
}

// An Option names a field of an options struct (breakdown.Options), for OptionError:
// each package names the fields it checks.
type Option string

// OptSteps is the step method (breakdown.Options.Steps): ParseStepMethod and
// StepMethod.Check name it.
const OptSteps Option = "Steps"

// String returns the name of the options field.
func (o Option) String() string { return string(o) }

// An OptionError says that the value of one of the Options is invalid, as opposed to a
// problem of the trace: a command line reports it as a usage mistake, naming its own flag
// for Option.
type OptionError struct {
	Option Option
	Err    error
}

func (e *OptionError) Error() string { return e.Option.String() + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }
