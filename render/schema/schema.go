// Package schema holds the JSON contracts stepstat writes, one struct per object: report
// (stepstat.report.v1, with its ranks and speed-of-light objects), diff
// (stepstat.diff.v1), info (stepstat.info.v1) and classify (stepstat.classify.v1). A Go
// program decodes stepstat's JSON into these types with encoding/json; the package imports
// only the standard library. Field names are fixed: fields are added, never renamed or
// removed. The builders and writers are in package render (the *_json.go files).
//
// New fields are documented on their types. Times are integer nanoseconds; every step,
// decode summary, CSV row and diff lists every category id, zeros included.
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
package schema

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
	Device int `json:"device"`
	// PID is the process whose work the device's steps hold (the one that launched most of
	// it); Processes counts the processes with work on the device. A device that several
	// processes share has one entry per process, each its own loop (same "device", its own
	// "pid"). Added fields.
	// TraceKind is what the device's steps are: "inference", or "training" (backward and
	// optimizer kernels in most steps) or "loading" (host-to-device copies, no loop of a
	// model), whose steps have the phase "unknown" and no findings; KindEvidence says why.
	// Added fields.
	TraceKind    string      `json:"trace_kind"`
	KindEvidence string      `json:"kind_evidence,omitempty"`
	PID          int64       `json:"pid,omitempty"`
	Processes    int         `json:"processes,omitempty"`
	GPU          string      `json:"gpu"`
	StepMethod   string      `json:"step_method"`
	MethodDetail string      `json:"step_method_detail"`
	Skipped      int         `json:"skipped_steps"`
	Steps        []StepJSON  `json:"steps"`
	Decode       SummaryJSON `json:"decode"`
	// Outside is the activity in no step (before the first, between step ranges, after the
	// last); absent when there is none.
	Outside *OutsideJSON `json:"outside,omitempty"`
	// OutsideLoop names what lies outside the served loop in a capture of a whole process
	// (no capture range), in time order: "load" (start-up and weight loading, with its
	// host-to-device bytes), "warm_up" and "capture" (iterations before serving, not steps),
	// "shutdown"; absent for a capture of the loop alone. Added field.
	OutsideLoop []LoopSpanJSON `json:"outside_loop,omitempty"`
	SOL         *SOLJSON       `json:"sol,omitempty"` // with a speed-of-light floor only
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

// StepJSON is one step. Phase is one of `prefill`, `decode`, `mixed` (a prompt chunk beside
// decoding sequences), `partial` (an iteration cut by the capture window's start or end),
// `uncertain` (added: another kernel mix than the loop's decode template that no signal in
// the trace tells from decode or shows prompt tokens in; counted, kept out of the decode
// summary, named in a warning, PhaseEvidence says what differs) or `unknown`.
type StepJSON struct {
	Index int    `json:"index"`
	Phase string `json:"phase"`
	Label string `json:"label,omitempty"`
	// PID: the process whose work the step holds, on a device several processes share
	// (absent otherwise: the device's pid). Added field.
	PID      int64 `json:"pid,omitempty"`
	StartNS  int64 `json:"start_ns"`
	EndNS    int64 `json:"end_ns"`
	Launches int   `json:"launches"`
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

// StepCategoriesJSON holds a step's categories, keyed by category id (every category,
// idle included). render writes a report's steps without building this map (reports of
// long traces have tens of thousands of steps), in the bytes encoding/json gives for it.
type StepCategoriesJSON map[string]StepCatJSON

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

// APIJSON holds idle time per API group, keyed by breakdown.APIGroupKeys (launch,
// graph_launch, sync, copy, memory, module_load, other_api, none).
type APIJSON map[string]int64

// OutliersJSON describes the steps a summary left out: longer than outlier_factor times
// the phase's median step (breakdown.Outliers).
type OutliersJSON struct {
	Steps        []int   `json:"steps"` // their index, as in "steps"
	Factor       int     `json:"outlier_factor"`
	MedianNS     int64   `json:"phase_median_ns"` // outliers included
	WallNS       int64   `json:"wall_ns"`         // summed
	IdleNS       int64   `json:"idle_ns"`         // summed
	LongestGapNS int64   `json:"longest_gap_ns"`
	LongestGap   APIJSON `json:"longest_gap_api_ns"` // what the host did in it
}

// StallJSON is the recurring long gap of the summarised steps (breakdown.Stall).
type StallJSON struct {
	Kernel  string  `json:"kernel"` // the kernel the gaps end at
	Steps   int     `json:"steps"`  // summarised steps with such a gap
	TotalNS int64   `json:"total_ns"`
	APINS   APIJSON `json:"api_ns"`
}

// GapSizesJSON holds one number per gap size class, keyed by the class names
// (breakdown.GapSizeNames: <10us, 10-100us, 100us-1ms, >1ms).
type GapSizesJSON map[string]int64

// HostJSON holds idle time per host activity, keyed by sync, copy, launch and none.
type HostJSON map[string]int64

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

// OutsideJSON sums a device's windows of activity that belong to no step.
type OutsideJSON struct {
	Windows    int                       `json:"windows"`
	NS         int64                     `json:"ns"`
	Kernels    int                       `json:"kernels"`
	Categories map[string]OutsideCatJSON `json:"categories"`
}

// LoopSpanJSON is one span of a whole-process capture outside its served loop.
type LoopSpanJSON struct {
	Kind       string `json:"kind"` // load, warm_up, capture, shutdown
	StartNS    int64  `json:"start_ns"`
	EndNS      int64  `json:"end_ns"`
	NS         int64  `json:"ns"`
	Iterations int    `json:"iterations,omitempty"` // warm_up, capture
	Bytes      int64  `json:"bytes,omitempty"`      // load: host-to-device bytes
}

// OutsideCatJSON is one category's time and count outside steps.
type OutsideCatJSON struct {
	NS      int64 `json:"ns"`
	BusyNS  int64 `json:"busy_ns"`
	Kernels int   `json:"kernels"`
}

// RunJSON is the top-level "run" of a report of several files (one per node or process);
// absent for one file.
type RunJSON struct {
	// Clock is "collectives" when at least one file's offset was refined from collectives
	// matched across ranks, "wall_clock" when the files are placed by their session starts
	// only (cross-rank timing as exact as the hosts' clocks).
	Clock     string        `json:"clock"`
	Reference int           `json:"reference"` // index into files: the file whose clock is the run's
	Passes    int           `json:"passes"`    // summaries made (1 + refinements)
	Files     []RunFileJSON `json:"files"`
}

// RunFileJSON is one file of the run. Its timestamps plus offset_ns are on the run's
// clock: offset_ns = wall_offset_ns (the session starts' difference) + correction_ns (from
// the collectives, ± uncertainty_ns, when refined).
type RunFileJSON struct {
	Path string `json:"path"`
	// SessionStartNS is the UTC time of the file's timestamp 0 in ns since the Unix epoch
	// (TARGET_INFO_SESSION_START_TIME); 0 when the export has none.
	SessionStartNS int64  `json:"session_start_utc_ns"`
	Program        string `json:"program,omitempty"`
	// Rank and LocalRank are RANK and LOCAL_RANK of the recorded environment, when set.
	Rank          *int  `json:"rank,omitempty"`
	LocalRank     *int  `json:"local_rank,omitempty"`
	Devices       []int `json:"devices"` // the report's device ids
	WallOffsetNS  int64 `json:"wall_offset_ns"`
	OffsetNS      int64 `json:"offset_ns"`
	CorrectionNS  int64 `json:"correction_ns"`
	UncertaintyNS int64 `json:"uncertainty_ns"`
	Refined       bool  `json:"refined"`
	MatchedCalls  int   `json:"matched_calls"`
	// DriftNS is how much the matched calls' end differences change over DriftSpanNS (a
	// rate difference of the hosts' clocks; one offset is exact at mid-capture); 0 when not
	// above the spread around it and 1 µs.
	DriftNS     int64 `json:"drift_ns"`
	DriftSpanNS int64 `json:"drift_span_ns"`
}

// DeviceSourceJSON says where a device of a run of several files comes from (per device
// "source"; absent for one file).
type DeviceSourceJSON struct {
	File       int    `json:"file"` // index into run.files
	Path       string `json:"path"`
	PID        int64  `json:"pid"`
	CUDADevice int    `json:"cuda_device"` // the CUDA device ordinal in its file
	Label      string `json:"label"`       // file, pid, device and RANK/LOCAL_RANK
}
