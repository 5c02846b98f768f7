package render

import (
	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds the JSON contracts stepstat writes, one struct per object: report
// (stepstat.report.v1, with its ranks and speed-of-light objects), diff
// (stepstat.diff.v1), info (stepstat.info.v1) and classify (stepstat.classify.v1). The
// builders and writers are beside the text and HTML of each command (report.go, ranks.go,
// diff.go, info.go, classify.go).
//
// The contracts are v1 and additive: a field is never renamed or removed; new fields are
// documented on their types. Times are integer nanoseconds; every step, decode summary,
// CSV row and diff lists every category id, zeros included.
//
// `sol.source` names the floor's origin: `--sol-step`, `--bandwidth`, or the datasheet
// assumption (`H200 datasheet HBM3e bandwidth`); `measured_ns` is the summarised phase's
// median step, `ratio` = measured / floor, `efficiency` = floor / measured, `tokens_per_s` =
// 1 / step (per sequence), `total_tokens_per_s` = batch / step (0 without `--batch`). In
// `ranks`, each device's summarised steps (after `--skip`) are aligned across devices by
// index, or by time overlap when the counts differ (a warning says so); within an aligned
// step the k-th collective kernel (allreduce or collective) of one operation (the NCCL op
// when the name decodes, else the kernel family) on each device is one matched call. Per
// rank and call, `wait` = last rank's start - own start (clipped to the kernel), `transfer`
// = duration - wait, so `wait_ns + transfer_ns` is exactly the matched kernels' time.
// Per-rank arrays (`wait_for_ns`: wait split by the rank that arrived last; `steps[].steps`:
// each rank's step `index`) follow the order of `ranks.devices`. `spread` is max - min step
// wall across ranks.
//
// Category ids: `gemm attention moe_routing moe_expert allreduce collective elementwise
// sampling memory other untraced_graph idle` (`untraced_graph` added since v1 began: graph
// replays traced at graph level, see Categories); every step lists all of them, zeros
// included, and so do `decode.categories`, the CSV rows and `diff`'s `categories`. `decode`
// summarises the phase chosen with `--phase` (its `phase` field says which; `unknown` when
// every step is included). A kernel name split by `--nvtx-category` has one row per
// category. The JSON is
//
// `significant` (the median's verdict) and `mean_significant` both require `comparable`,
// `tested`, p < alpha and a change of at least `min_change_ns`; `warnings` starts with the
// `untested` notice, then the captures' warnings (labelled with the side) and the
// comparison's.
//
// `delta_pct` is null when the base median is 0 and the new one is not. Kernel families are
// names with template arguments, argument lists and tile shapes normalised away, so a
// different cuBLAS tile choice shows as a changed variant, not as new work.
//
// `stepstat info --format json` (`"schema": "stepstat.info.v1"`): `path`, `nsys_version`,
// `export_schema`, `meta_table`, `start_ns`, `end_ns`, `duration_ns`, `devices` (`device`,
// `gpu`, `kernels`, `memcpy`, `memset`, `graph_execs`, `kernel_ns`, `graph_ns`: graph
// executions traced at graph level), `tables` (`name`, `rows`), `nvtx_ranges`,
// `cuda_api_calls`, `graph_launches`, `warnings`, `reads` (`table`, `direct`, and `why` when
// SQLite read it).
//
// `stepstat classify --format json` (`"schema": "stepstat.classify.v1"`): `path`,
// `total_ns`, `other_share`, `kernels` (`name`, `category`, `rule`, `count`, `total_ns`,
// `share`), unmatched names first.

// ReportSchema names the JSON contract of `stepstat report --format json`.
const ReportSchema = "stepstat.report.v1"

// ReportJSON is the JSON contract v1 of a report. Field names are fixed: add, never rename.
type ReportJSON struct {
	Schema   string            `json:"schema"`
	Source   SourceJSON        `json:"source"`
	Config   map[string]string `json:"config"` // run configuration: allow-listed knobs of the recorded environment
	Devices  []DeviceJSON      `json:"devices"`
	Kernels  []KernelJSON      `json:"kernels"`
	Warnings []string          `json:"warnings"`
	Ranks    *RanksJSON        `json:"ranks,omitempty"` // reports of two or more devices
	// Plan is the answer the text leads with: the limiter, what would lead after it, one
	// group per rule. Added field.
	Plan *PlanJSON `json:"plan,omitempty"`
	Run  *RunJSON  `json:"run,omitempty"` // a run given as several files (run.go)
}

// PlanJSON is the report's answer as a plan (findings.Report.Groups, Limiter, Then).
type PlanJSON struct {
	// Limiter is the cause with the most step time at stake (its group's top member); null
	// when no cause above the minor share holds, and LargestPart then names the largest
	// category of the first summarised device's mean step.
	Limiter     *PlanFindingJSON `json:"limiter"`
	LargestPart string           `json:"largest_part,omitempty"`
	// Then is what would lead once the limiter is fixed; absent without a limiter.
	Then *ThenJSON `json:"then,omitempty"`
	// Groups: one per rule over the devices it holds on; causes first (minor ones after),
	// then far_from_sol, then the warnings. Every device's findings keep their detail in
	// devices[].findings.
	Groups []FindingGroupJSON `json:"groups"`
}

// PlanFindingJSON names a finding of one device.
type PlanFindingJSON struct {
	ID        string `json:"id"`
	Device    int    `json:"device"`
	NSPerStep int64  `json:"ns_per_step"`
	StepNS    int64  `json:"step_ns"`
}

// ThenJSON is the rules re-run on the limiter's device with the limiter's time at stake
// taken out of the mean step.
type ThenJSON struct {
	After  string `json:"after"`   // the limiter's id
	StepNS int64  `json:"step_ns"` // the mean step left
	// Next is the cause that would lead (its time at stake of the step left, and the
	// speedup: its own possible_speedup, else step / (step - at stake)); "" when none.
	Next      string  `json:"next"`
	NSPerStep int64   `json:"ns_per_step"`
	Speedup   float64 `json:"speedup"`
}

// FindingGroupJSON is one rule's findings over the devices it holds on.
type FindingGroupJSON struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"` // cause, headroom (far_from_sol) or warning (outlier_steps, coverage)
	Minor   bool   `json:"minor"`
	Devices []int  `json:"devices"` // device ids, the top member first
	// NSPerStep and StepNS are the top member's.
	NSPerStep int64 `json:"ns_per_step"`
	StepNS    int64 `json:"step_ns"`
}

// SourceJSON describes the input file.
type SourceJSON struct {
	Path         string `json:"path"`
	NsysVersion  string `json:"nsys_version"`
	ExportSchema string `json:"export_schema"`
}

// DeviceJSON is one device's steps and summary.
type DeviceJSON struct {
	Device       int         `json:"device"`
	GPU          string      `json:"gpu"`
	StepMethod   string      `json:"step_method"`
	MethodDetail string      `json:"step_method_detail"`
	Skipped      int         `json:"skipped_steps"`
	Steps        []StepJSON  `json:"steps"`
	Decode       SummaryJSON `json:"decode"`
	// Outside is the activity in no step (before the first, between step ranges, after the
	// last); absent when there is none.
	Outside *OutsideJSON `json:"outside,omitempty"`
	SOL     *SOLJSON     `json:"sol,omitempty"` // with a speed-of-light floor only
	// Findings, most step time at stake first; empty when no rule holds.
	Findings []FindingJSON `json:"findings"`
	// Source says which file, process and CUDA device of a run of several files the
	// device is (run.go); absent for one file.
	Source *DeviceSourceJSON `json:"source,omitempty"`
	// Rounds describes the summarised steps as speculative rounds and gives the time per
	// token where the tokens are known; absent when there are neither rounds nor tokens.
	// Added field.
	Rounds *RoundsJSON `json:"rounds,omitempty"`
}

// FindingJSON is one finding: a rule that holds on the device's summary (README "Findings").
type FindingJSON struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	// NSPerStep is the step time at stake, mean per step; StepNS the mean step it is part of.
	NSPerStep  int64          `json:"ns_per_step"`
	StepNS     int64          `json:"step_ns"`
	Evidence   map[string]any `json:"evidence"`
	Suggestion string         `json:"suggestion"`
	// Kind is cause, headroom (far_from_sol) or warning (outlier_steps, coverage: never the
	// limiter); Minor marks a cause under 2% of its step (the text lists it on one line).
	// Added fields.
	Kind  string `json:"kind"`
	Minor bool   `json:"minor"`
}

// StepJSON is one step.
type StepJSON struct {
	Index    int    `json:"index"`
	Phase    string `json:"phase"`
	Label    string `json:"label,omitempty"`
	StartNS  int64  `json:"start_ns"`
	EndNS    int64  `json:"end_ns"`
	Launches int    `json:"launches"`
	// DraftForwards: a speculative round's draft forwards (absent otherwise); Batch: the
	// sequences in the step when its NVTX text says (absent otherwise). Added fields.
	DraftForwards int `json:"draft_forwards,omitempty"`
	Batch         int `json:"batch,omitempty"`
	// Evidence (added): CutBy is the signal that started the step, stable ids joined by
	// "+" (breakdown.CutNVTX ...: nvtx, read_back, sync, graph_launch, input_copy,
	// forward_end, pause, periodicity, window_start, whole); PhaseEvidence says in words why
	// the step has its phase. DraftDepth and VerifyDepth: a speculative round's draft and
	// verify forward depths (attention kernels; absent otherwise). GraphCapture marks an
	// iteration that captures a CUDA graph (kept out of every summary), CaptureHostNS its
	// host time in graph calls (absent otherwise).
	CutBy         string             `json:"cut_by"`
	PhaseEvidence string             `json:"phase_evidence"`
	DraftDepth    int                `json:"draft_depth,omitempty"`
	VerifyDepth   int                `json:"verify_depth,omitempty"`
	GraphCapture  bool               `json:"graph_capture,omitempty"`
	CaptureHostNS int64              `json:"capture_host_ns,omitempty"`
	Categories    StepCategoriesJSON `json:"categories"`
	Gaps          GapsJSON           `json:"gaps"`
}

// StepCategoriesJSON holds a step's categories, indexed by kernelclass.Category. It marshals
// as a JSON object keyed by category id in sorted order, as a map would, without building
// a map per step (reports of long traces have tens of thousands of steps).
type StepCategoriesJSON [kernelclass.NumCategories]StepCatJSON

// StepCatJSON is one category in one step. Gaps is set for idle only.
type StepCatJSON struct {
	NS      int64 `json:"ns"`
	BusyNS  int64 `json:"busy_ns"`
	Kernels int   `json:"kernels"`
	Gaps    *int  `json:"gaps,omitempty"`
}

// GapsJSON details idle gaps: counts and time per size class, and the host's activity.
type GapsJSON struct {
	Count   int          `json:"count"`
	TotalNS int64        `json:"total_ns"`
	Sizes   GapSizesJSON `json:"sizes"`   // by breakdown.GapSizeNames
	SizeNS  GapSizesJSON `json:"size_ns"` // by breakdown.GapSizeNames
	HostNS  HostJSON     `json:"host_ns"` // by host activity: sync, copy, launch, none
	// APINS is the idle time by what the launching threads were doing, by CUDA API group
	// (breakdown.APIGroupKeys: launch, graph_launch, sync, copy, memory, module_load,
	// other_api, none); it adds up to total_ns. host_ns folds it into four.
	APINS APIJSON `json:"api_ns"`
}

// APIJSON holds idle time per API group; it marshals as an object keyed by
// breakdown.APIGroupKeys in sorted order.
type APIJSON [breakdown.NumAPIGroups]int64

// OutliersJSON describes the steps a summary left out: longer than outlier_factor times
// the phase's median step (breakdown.Outliers).
type OutliersJSON struct {
	Steps        []int    `json:"steps"` // their index, as in "steps"
	Factor       int      `json:"outlier_factor"`
	MedianNS     int64    `json:"phase_median_ns"` // outliers included
	WallNS       int64    `json:"wall_ns"`         // summed
	IdleNS       int64    `json:"idle_ns"`         // summed
	LongestGapNS int64    `json:"longest_gap_ns"`
	LongestGap   *APIJSON `json:"longest_gap_api_ns"` // what the host did in it
}

// StallJSON is the recurring long gap of the summarised steps (breakdown.Stall).
type StallJSON struct {
	Kernel  string  `json:"kernel"` // the kernel the gaps end at
	Steps   int     `json:"steps"`  // summarised steps with such a gap
	TotalNS int64   `json:"total_ns"`
	APINS   APIJSON `json:"api_ns"`
}

// GapSizesJSON holds one number per gap size class; it marshals as an object keyed by the
// class names (<10us, 10-100us, 100us-1ms, >1ms) in sorted order, as a map would.
type GapSizesJSON [breakdown.NumGapSizes]int64

// HostJSON holds idle time per host activity; it marshals as an object keyed by sync,
// copy, launch and none in sorted order.
type HostJSON [breakdown.NumHostActivities]int64

// SummaryJSON summarises the steps of one phase (decode unless asked otherwise).
type SummaryJSON struct {
	Phase           string                    `json:"phase"`
	Steps           int                       `json:"steps"`
	MedianNS        int64                     `json:"median_ns"`
	P10NS           int64                     `json:"p10_ns"`
	P90NS           int64                     `json:"p90_ns"`
	MeanNS          int64                     `json:"mean_ns"` // the categories' mean_ns add up to it exactly
	LaunchesPerStep float64                   `json:"launches_per_step"`
	KernelsPerStep  float64                   `json:"kernels_per_step"`
	GapsPerStep     float64                   `json:"gaps_per_step"`
	Categories      map[string]SummaryCatJSON `json:"categories"`
	Gaps            GapsJSON                  `json:"gaps"`
	// Outliers is set when steps of the phase were left out of this summary.
	Outliers *OutliersJSON `json:"outliers,omitempty"`
	// Stall is set when some summarised step's longest gap is 1 ms or longer before a kernel.
	Stall *StallJSON `json:"stall,omitempty"`
}

// SummaryCatJSON is one category's distribution over the summarised steps.
type SummaryCatJSON struct {
	MedianNS       int64   `json:"median_ns"`
	P90NS          int64   `json:"p90_ns"`
	MeanNS         int64   `json:"mean_ns"` // exclusive time per step; the rows add up to the summary's mean_ns
	Share          float64 `json:"share"`
	KernelsPerStep float64 `json:"kernels_per_step"`
	CallsMedian    float64 `json:"calls_median"`
	BusyPerCallNS  int64   `json:"busy_per_call_ns"`
}

// KernelJSON is one distinct kernel name over the whole trace.
type KernelJSON struct {
	Name     string    `json:"name"`
	Category string    `json:"category"`
	Rule     string    `json:"rule"`
	Count    int       `json:"count"`
	TotalNS  int64     `json:"total_ns"`
	NCCL     *NCCLJSON `json:"nccl,omitempty"`
}

// NCCLJSON is a decoded NCCL kernel name.
type NCCLJSON struct {
	Op    string `json:"op"`
	RedOp string `json:"redop,omitempty"`
	Algo  string `json:"algo"`
	Proto string `json:"proto"` // as the kernel name says: the variant launched, not the protocol setting
	DType string `json:"dtype"`
	// ProtoSet is NCCL_PROTO of the recorded environment, omitted when unset.
	ProtoSet string `json:"proto_set,omitempty"`
}

// RanksJSON is the rank view of a multi-device report (top-level "ranks"). Per-rank
// arrays are indexed like Devices.
type RanksJSON struct {
	AlignedBy        string           `json:"aligned_by"`
	AlignedSteps     int              `json:"aligned_steps"`
	MatchedCalls     int              `json:"matched_calls"`
	UnmatchedKernels int              `json:"unmatched_kernels"`
	Straggler        *StragglerJSON   `json:"straggler"`
	Spread           SpreadJSON       `json:"spread"`
	Devices          []RankDeviceJSON `json:"devices"`
	Steps            []RankStepJSON   `json:"steps"`
	// Skew is the largest wait of one rank for another (findings.SkewOf); material false
	// means the ranks are balanced, whichever arrived last most often. Nil without matched calls.
	Skew *SkewJSON `json:"skew,omitempty"`
}

// SkewJSON is findings.Skew: devices by number, the wait per aligned step.
type SkewJSON struct {
	Waiter   int   `json:"waiter"`
	Late     int   `json:"late"`
	WaitNS   int64 `json:"wait_ns"`
	StepNS   int64 `json:"step_ns"`
	Material bool  `json:"material"`
}

// StragglerJSON names the rank that arrived last at most matched calls.
type StragglerJSON struct {
	Device       int     `json:"device"`
	LastArrivals int     `json:"last_arrivals"`
	Share        float64 `json:"share"`
}

// SpreadJSON summarises the step-time spread across ranks (max - min wall per aligned step).
type SpreadJSON struct {
	MedianNS int64 `json:"median_ns"`
	P90NS    int64 `json:"p90_ns"`
}

// RankDeviceJSON is one rank's totals over the aligned steps.
type RankDeviceJSON struct {
	Device             int          `json:"device"`
	GPU                string       `json:"gpu"`
	MedianStepNS       int64        `json:"median_step_ns"`
	CollectivesMatched int          `json:"collectives_matched"`
	WaitNS             int64        `json:"wait_ns"`
	TransferNS         int64        `json:"transfer_ns"`
	WaitShare          float64      `json:"wait_share"`
	LastArrivals       int          `json:"last_arrivals"`
	WaitForNS          []int64      `json:"wait_for_ns"`
	AllReduce          RankCommJSON `json:"allreduce"`
	Collective         RankCommJSON `json:"collective"`
}

// RankCommJSON totals one category of matched calls on one rank.
type RankCommJSON struct {
	Calls      int     `json:"calls"`
	NS         int64   `json:"ns"`
	WaitNS     int64   `json:"wait_ns"`
	TransferNS int64   `json:"transfer_ns"`
	WaitForNS  []int64 `json:"wait_for_ns"`
}

// RankStepJSON is one aligned step.
type RankStepJSON struct {
	Steps        []int   `json:"steps"`
	WallNS       []int64 `json:"wall_ns"`
	SpreadNS     int64   `json:"spread_ns"`
	Calls        int     `json:"calls"`
	WaitNS       []int64 `json:"wait_ns"`
	TransferNS   []int64 `json:"transfer_ns"`
	LastArrivals []int   `json:"last_arrivals"`
}

// SOLJSON is a device's speed-of-light view (per-device "sol").
type SOLJSON struct {
	FloorNS            int64   `json:"floor_ns"`
	Bytes              int64   `json:"bytes"`
	BandwidthBytesPerS float64 `json:"bandwidth_bytes_per_s"`
	Source             string  `json:"source"`
	MeasuredNS         int64   `json:"measured_ns"`
	Ratio              float64 `json:"ratio"`
	Efficiency         float64 `json:"efficiency"`
	TokensPerS         float64 `json:"tokens_per_s"`
	Batch              int     `json:"batch"`
	TotalTokensPerS    float64 `json:"total_tokens_per_s"`
}

// DiffSchema names the JSON contract of `stepstat diff --format json`.
const DiffSchema = "stepstat.diff.v1"

// DiffJSON is the JSON contract v1 of a comparison. Field names are fixed: add, never rename.
type DiffJSON struct {
	Schema     string                 `json:"schema"`
	Phase      string                 `json:"phase"`
	Unit       string                 `json:"unit"`
	Config     []ConfigChangeJSON     `json:"config_changes"` // knobs that differ between the sides, by name
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

// InfoSchema names the JSON layout written by InfoJSON.
const InfoSchema = "stepstat.info.v1"

// Info is the display model of `stepstat info`: what an export holds.
type Info struct {
	Schema        string       `json:"schema"`
	Path          string       `json:"path"`
	NsysVersion   string       `json:"nsys_version"`
	ExportSchema  string       `json:"export_schema"`
	MetaTable     string       `json:"meta_table"`
	StartNS       int64        `json:"start_ns"`
	EndNS         int64        `json:"end_ns"`
	DurationNS    int64        `json:"duration_ns"`
	Devices       []InfoDevice `json:"devices"`
	Tables        []InfoTable  `json:"tables"`
	NVTXRanges    int          `json:"nvtx_ranges"`
	APICalls      int          `json:"cuda_api_calls"`
	GraphLaunches int          `json:"graph_launches"`
	Warnings      []string     `json:"warnings"`
	// Reads says how each large table was read: decoded from the file by stepstat's own
	// reader, or through SQLite and why.
	Reads []InfoRead `json:"reads"`
}

// InfoRead is how one large table was read.
type InfoRead struct {
	Table  string `json:"table"`
	Direct bool   `json:"direct"`
	Why    string `json:"why,omitempty"`
}

// InfoDevice is one GPU with activity.
type InfoDevice struct {
	Device     int    `json:"device"`
	GPU        string `json:"gpu"`
	Kernels    int    `json:"kernels"`
	Memcpy     int    `json:"memcpy"`
	Memset     int    `json:"memset"`
	GraphExecs int    `json:"graph_execs"`
	KernelNS   int64  `json:"kernel_ns"`
	// GraphNS is the summed time of the CUDA graph executions traced at graph level
	// (their kernels have no rows, so kernel_ns leaves it out).
	GraphNS int64 `json:"graph_ns"`
}

// InfoTable is one table and its row count.
type InfoTable struct {
	Name string `json:"name"`
	Rows int64  `json:"rows"`
}

// ClassifySchema names the JSON layout of `stepstat classify --format json`.
const ClassifySchema = "stepstat.classify.v1"

// ClassifyJSON is the JSON layout of classify: every distinct kernel name with its category.
type ClassifyJSON struct {
	Schema     string               `json:"schema"`
	Path       string               `json:"path"`
	TotalNS    int64                `json:"total_ns"`
	OtherShare float64              `json:"other_share"`
	Kernels    []ClassifyKernelJSON `json:"kernels"`
}

// ClassifyKernelJSON is one kernel name (and category, when NVTX rules split it).
type ClassifyKernelJSON struct {
	Name     string  `json:"name"`
	Category string  `json:"category"`
	Rule     string  `json:"rule"`
	Count    int     `json:"count"`
	TotalNS  int64   `json:"total_ns"`
	Share    float64 `json:"share"`
}

// OutsideJSON sums a device's windows of activity that belong to no step.
type OutsideJSON struct {
	Windows    int                       `json:"windows"`
	NS         int64                     `json:"ns"`
	Kernels    int                       `json:"kernels"`
	Categories map[string]OutsideCatJSON `json:"categories"`
}

// OutsideCatJSON is one category's time and count outside steps.
type OutsideCatJSON struct {
	NS      int64 `json:"ns"`
	BusyNS  int64 `json:"busy_ns"`
	Kernels int   `json:"kernels"`
}
