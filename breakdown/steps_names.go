package breakdown

import "github.com/stepstat/stepstat/breakdown/steps"

// The step finder's words that reports and options use (package steps finds the steps):
// aliases, so that a Report and its Options speak of them as breakdown's own.

// Phase says whether a step processed prompts (prefill), generated tokens (decode), or both
// in one batch (mixed).
type Phase = steps.Phase

// Phases.
const (
	Unknown   = steps.Unknown
	Prefill   = steps.Prefill
	Decode    = steps.Decode
	Mixed     = steps.Mixed
	Partial   = steps.Partial
	Uncertain = steps.Uncertain
)

// Cut ids: what started a step (Step.CutBy).
const (
	CutNVTX        = steps.CutNVTX
	CutReadBack    = steps.CutReadBack
	CutSync        = steps.CutSync
	CutGraphLaunch = steps.CutGraphLaunch
	CutInputCopy   = steps.CutInputCopy
	CutForwardEnd  = steps.CutForwardEnd
	CutPause       = steps.CutPause
	CutPeriodicity = steps.CutPeriodicity
	CutWindowStart = steps.CutWindowStart
	CutWhole       = steps.CutWhole
)

// Method is a step detection method (DeviceReport.Method).
type Method = steps.Method

// Step detection methods.
const (
	MethodAuto     = steps.MethodAuto
	MethodNVTX     = steps.MethodNVTX
	MethodGraph    = steps.MethodGraph
	MethodSync     = steps.MethodSync
	MethodPeriodic = steps.MethodPeriodic
	MethodWhole    = steps.MethodWhole
)

// StepMethod is the step method asked for (Options.Steps): steps.ParseStepMethod reads it
// from text.
type StepMethod = steps.StepMethod

// A NoStepsWarning says that the step method asked for found no steps on a device.
type NoStepsWarning = steps.NoStepsWarning

// An Option names a field of Options, for OptionError.
type Option = steps.Option

// OptSteps names Options.Steps.
const OptSteps = steps.OptSteps

// An OptionError says that the value of one of the Options is invalid.
type OptionError = steps.OptionError
