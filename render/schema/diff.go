package schema

// This file holds the JSON contract of stepstat diff (stepstat.diff.v1); schema.go the report's.

// DiffSchema names the JSON contract of `stepstat diff --format json`.
const DiffSchema = "stepstat.diff.v1"

// DiffJSON is the JSON contract v1 of a comparison. Field names are fixed: add, never rename.
type DiffJSON struct {
	Schema string             `json:"schema"`
	Phase  string             `json:"phase"`
	Unit   string             `json:"unit"`
	Config []ConfigChangeJSON `json:"config_changes"` // knobs that differ between the sides, by name
	// Capture lists the nsys capture options (META_DATA_CAPTURE: traces, sampling,
	// backtraces, graph tracing; nsys.CaptureOptions) that differ between the sides, by
	// option; each difference is also in warnings.
	Capture    []ConfigChangeJSON     `json:"capture_changes"`
	Base       DiffSideJSON           `json:"base"`
	New        DiffSideJSON           `json:"new"`
	Step       DiffRowJSON            `json:"step"`
	Categories map[string]DiffRowJSON `json:"categories"`
	Appeared   []KernelChangeJSON     `json:"appeared"`
	Vanished   []KernelChangeJSON     `json:"vanished"`
	Variants   []KernelChangeJSON     `json:"changed_variants"`
	// Findings of each device position on the first run of each side, changes first.
	Findings []FindingChangeJSON `json:"findings"`
	// Ranks compares each device position on its own; only when both sides have 2+ devices.
	Ranks    []DiffRankJSON `json:"ranks,omitempty"`
	Warnings []string       `json:"warnings"`
	// Added since v1 began: the tests (mean: permutation test on the difference of means,
	// the headline; median: Mann-Whitney U, benchstat's table), the threshold of both
	// verdicts in ns per step, whether the samples can be tested at all, the headline's
	// rows in order (a category or "whole step", with the ranks shown under it) and, with
	// 2+ devices, the straggler of each side.
	MeanTest    string             `json:"mean_test"`
	MedianTest  string             `json:"median_test"`
	MinChangeNS int64              `json:"min_change_ns"`
	Tested      bool               `json:"tested"`
	Untested    string             `json:"untested,omitempty"`
	WhatChanged []StoryItemJSON    `json:"what_changed"`
	Straggler   *DiffStragglerJSON `json:"straggler,omitempty"`
	// Sample says what one sample of the step and category rows is: "step", "aligned_step"
	// (runs of 2+ devices: one per aligned step, the step on the slowest rank; ranks are
	// not pooled, n counts aligned steps) or "run" (--unit run). Added field.
	Sample string `json:"sample"`
	// Token compares the time per token (the verdict when both sides know their tokens:
	// --tokens, or vLLM's step NVTX); absent otherwise. Rounds describes each side's steps
	// as speculative rounds; absent when neither side has rounds. Added fields.
	Token *DiffRowJSON `json:"token,omitempty"`
	// TokenMinChangeNS is the token row's threshold: min_change_ns scaled by the base's
	// time per token over its mean step.
	TokenMinChangeNS int64           `json:"token_min_change_ns,omitempty"`
	Rounds           *DiffRoundsJSON `json:"rounds,omitempty"`
}

// DiffRoundsJSON is each side's rounds.
type DiffRoundsJSON struct {
	Base RoundsJSON `json:"base"`
	New  RoundsJSON `json:"new"`
}

// RoundsJSON describes steps as speculative rounds and their tokens.
type RoundsJSON struct {
	Steps         int     `json:"steps"`
	Rounds        int     `json:"rounds"`
	DraftForwards float64 `json:"draft_forwards_per_round"`
	Speculative   bool    `json:"speculative"` // at least half of the steps are rounds
	// Tokens known (0: unknown), from "given" (--tokens) or "nvtx"; per token and per step.
	Tokens        int     `json:"tokens"`
	TokensFrom    string  `json:"tokens_from,omitempty"`
	PerTokenNS    int64   `json:"per_token_ns"`
	TokensPerStep float64 `json:"tokens_per_step"`
}

// StoryItemJSON is one line of what changed: a row name and the ranks listed under it.
type StoryItemJSON struct {
	Name  string `json:"name"`
	Ranks []int  `json:"ranks"`
}

// DiffStragglerJSON is each side's straggler; null on a side without matched collectives.
type DiffStragglerJSON struct {
	Base *StragglerJSON `json:"base"`
	New  *StragglerJSON `json:"new"`
}

// FindingChangeJSON is one finding on either side of a diff.
type FindingChangeJSON struct {
	Rank   int          `json:"rank"` // index into each side's devices
	ID     string       `json:"id"`
	Change string       `json:"change"` // appeared, vanished, changed, same
	Base   *FindingJSON `json:"base"`   // null on the side without it
	New    *FindingJSON `json:"new"`
	// Expected: the finding appeared (or grew) where the base report's then named it (the
	// rules re-run with the base's top cause taken out). Added field.
	Expected bool `json:"expected"`
}

// DiffRankJSON compares one device position (rank) of the two sides.
type DiffRankJSON struct {
	Rank       int                    `json:"rank"`
	BaseDevice int                    `json:"base_device"`
	NewDevice  int                    `json:"new_device"`
	Step       DiffRowJSON            `json:"step"`
	Categories map[string]DiffRowJSON `json:"categories"`
	// Added since v1 began: whether the rank can be compared, the rank's means per step
	// on each side (mean_ns add up to mean_step_ns), and its wait and transfer in matched
	// collectives per aligned step, with the calls at which it arrived last.
	Comparable       bool             `json:"comparable"`
	Reason           string           `json:"reason,omitempty"`
	BaseMeanStepNS   int64            `json:"base_mean_step_ns"`
	NewMeanStepNS    int64            `json:"new_mean_step_ns"`
	BaseMeanNS       map[string]int64 `json:"base_mean_ns"`
	NewMeanNS        map[string]int64 `json:"new_mean_ns"`
	BaseWaitNS       int64            `json:"base_wait_ns"`
	NewWaitNS        int64            `json:"new_wait_ns"`
	BaseTransferNS   int64            `json:"base_transfer_ns"`
	NewTransferNS    int64            `json:"new_transfer_ns"`
	BaseLastArrivals int              `json:"base_last_arrivals"`
	NewLastArrivals  int              `json:"new_last_arrivals"`
	BaseCalls        int              `json:"base_calls"`
	NewCalls         int              `json:"new_calls"`
}

// DiffSideJSON describes one side.
type DiffSideJSON struct {
	Label           string            `json:"label"`
	Path            string            `json:"path"`
	Paths           []string          `json:"paths"`
	DecodeSteps     int               `json:"decode_steps"`
	MedianStepNS    int64             `json:"median_step_ns"`
	LaunchesPerStep float64           `json:"launches_per_step"`
	KernelsPerStep  float64           `json:"kernels_per_step"`
	GapsPerStep     float64           `json:"gaps_per_step"`
	StepMethods     []string          `json:"step_methods"`
	NCCL            []NCCLCountJSON   `json:"nccl"`
	Config          map[string]string `json:"config"` // the side's run configuration
	// MeanStepNS is the mean step; MeanNS each category's mean per step, adding up to it.
	MeanStepNS int64            `json:"mean_step_ns"`
	MeanNS     map[string]int64 `json:"mean_ns"`
	// AlignedBy says, per run of 2+ devices, how its ranks' steps were aligned: "index",
	// "time" or "index, first N" (decode_steps then counts aligned steps). Added field.
	AlignedBy []string `json:"aligned_by,omitempty"`
}

// NCCLCountJSON totals NCCL kernels of one op/algorithm/protocol/data type.
type NCCLCountJSON struct {
	Op      string `json:"op"`
	Algo    string `json:"algo"`
	Proto   string `json:"proto"`
	DType   string `json:"dtype"`
	Count   int    `json:"count"`
	TotalNS int64  `json:"total_ns"`
	// ProtoSet is NCCL_PROTO of the side's recorded environment, omitted when unset.
	ProtoSet string `json:"proto_set,omitempty"`
}

// DiffRowJSON compares one quantity. DeltaPct is null when the base median is 0 and the
// new one is not.
type DiffRowJSON struct {
	BaseMedianNS int64    `json:"base_median_ns"`
	NewMedianNS  int64    `json:"new_median_ns"`
	DeltaPct     *float64 `json:"delta_pct"`
	PValue       float64  `json:"p_value"`
	Significant  bool     `json:"significant"`
	BaseN        int      `json:"base_n"`
	NewN         int      `json:"new_n"`
	// Added since v1 began: the change of the mean per step (the headline's view) with the
	// permutation test's interval and p-value (null when too few samples to test: tested
	// false), whether both sides can measure the quantity (comparable false: reason says
	// why, and neither view has a verdict), and why the views disagree when they do.
	BaseMeanNS      int64    `json:"base_mean_ns"`
	NewMeanNS       int64    `json:"new_mean_ns"`
	MeanChangeNS    int64    `json:"mean_change_ns"`
	MeanChangeLoNS  *int64   `json:"mean_change_lo_ns"`
	MeanChangeHiNS  *int64   `json:"mean_change_hi_ns"`
	MeanPValue      *float64 `json:"mean_p_value"`
	MeanSignificant bool     `json:"mean_significant"`
	Tested          bool     `json:"tested"`
	Comparable      bool     `json:"comparable"`
	Reason          string   `json:"reason,omitempty"`
	Why             string   `json:"why,omitempty"`
}

// KernelChangeJSON is a kernel family that appeared, vanished or changed variant.
type KernelChangeJSON struct {
	Family    string   `json:"family"`
	Category  string   `json:"category"`
	BaseNames []string `json:"base_names"`
	NewNames  []string `json:"new_names"`
	BaseCount int      `json:"base_count"`
	NewCount  int      `json:"new_count"`
	BaseNS    int64    `json:"base_total_ns"`
	NewNS     int64    `json:"new_total_ns"`
}

// ConfigChangeJSON is one knob that differs between the sides of a diff; null for unset.
type ConfigChangeJSON struct {
	Name string  `json:"name"`
	Base *string `json:"base"`
	New  *string `json:"new"`
}
