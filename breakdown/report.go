package breakdown

import (
	"regexp"
	"time"

	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// Gap size classes of the idle-gap histogram.
const (
	GapUnder10us  = iota // < 10 µs
	Gap10to100us         // 10-100 µs
	Gap100usTo1ms        // 100 µs - 1 ms
	GapOver1ms           // >= 1 ms
	NumGapSizes
)

// GapSizeNames labels the histogram classes.
var GapSizeNames = [NumGapSizes]string{"<10us", "10-100us", "100us-1ms", ">1ms"}

// HostActivity is what the host was doing while the device was idle.
type HostActivity uint8

// Host activities during idle gaps, in attribution priority (highest first).
const (
	HostSync   HostActivity = iota // inside a synchronize call
	HostCopy                       // inside a memcpy/memset call
	HostLaunch                     // inside a kernel or graph launch call
	HostNone                       // no CUDA call at all (Python, scheduling, ...)
	NumHostActivities
)

// HostActivityNames labels HostActivity values.
var HostActivityNames = [NumHostActivities]string{"synchronizing", "copying", "launching", "no CUDA call"}

// Gaps summarises the idle gaps of a step.
type Gaps struct {
	Count  int
	Total  time.Duration
	Sizes  [NumGapSizes]int           // number of gaps per size class
	SizeNS [NumGapSizes]time.Duration // idle time per size class
	Host   [NumHostActivities]time.Duration
	// HostLong is Host over the gaps of 10 µs or more only. Shorter gaps are the device's
	// own gaps between kernels (a graph's nodes, a stream's back-to-back launches), which
	// happen whether or not the host waits in a call meanwhile.
	HostLong [NumHostActivities]time.Duration
	// API is the idle time by what the device's launching threads were doing (hostgaps.go):
	// it adds up to Total. Host is API folded into four activities.
	API [NumAPIGroups]time.Duration
	// APILong is API over the gaps of 10 µs or more only.
	APILong [NumAPIGroups]time.Duration
}

// A Gap is one idle gap of a step, with what the host did during it.
type Gap struct {
	Start, End nsys.Time
	// Next is the kernel the gap waited for: the one whose start ended it, or, when a copy,
	// memset or graph replay ended it, the step's next kernel after it (cuDNN sets a 4-byte
	// flag with a memset before its attention kernel, which its host work delays again);
	// NoKernel when there is none (the step's end).
	Next nsys.NameID
	// NextCat is Next's category (meaningful only when Next is a kernel).
	NextCat kernelclass.Category
	API     [NumAPIGroups]time.Duration
}

// NoKernel is Gap.Next for a gap that no kernel ended.
const NoKernel = ^nsys.NameID(0)

// Dur returns the gap's length.
func (g *Gap) Dur() time.Duration { return g.End.Sub(g.Start) }

func (g *Gaps) add(o *Gaps) {
	g.Count += o.Count
	g.Total += o.Total
	for i := range g.Sizes {
		g.Sizes[i] += o.Sizes[i]
		g.SizeNS[i] += o.SizeNS[i]
	}
	for i := range g.Host {
		g.Host[i] += o.Host[i]
		g.HostLong[i] += o.HostLong[i]
	}
	for i := range g.API {
		g.API[i] += o.API[i]
		g.APILong[i] += o.APILong[i]
	}
}

// A Step is one step on one device: a wall-clock window [Start, End).
type Step struct {
	Index int // position among all steps found on the device, before Options.Skip
	Phase Phase
	Label string // the NVTX text that defined the step, if any
	// PID is the process whose work the step holds, on a device that several processes
	// share (DeviceReport.Processes > 1); 0 otherwise (the device's one process, DeviceReport.PID).
	PID int64
	// DraftForwards is the number of the draft model's forwards in a speculative round (a
	// decode step of draft forwards and the target's verify forward); 0 otherwise.
	DraftForwards int
	// Batch is the number of sequences in the step when its NVTX text says (SGLang bs=N,
	// TensorRT-LLM ctx + gen requests, vLLM context + generation requests); 0 when unknown.
	Batch int
	// DraftDepth and VerifyDepth are, for a speculative round, the depth (attention kernels:
	// layers) of its draft forwards and of its verify forward; 0 otherwise.
	DraftDepth, VerifyDepth int
	// CutBy says which signal started the step (CutNVTX, CutReadBack, ...: "+"-joined ids
	// when several did at once); PhaseEvidence says why it has its phase.
	CutBy         string
	PhaseEvidence string
	// GraphCapture marks an iteration that captures a CUDA graph (capture.go): kept out of
	// every summary; CaptureHost is its host time in graph calls (cudaGraph*, cuGraph*,
	// stream capture begin/end; launches not included).
	GraphCapture bool
	CaptureHost  time.Duration
	// forwards counts the ends of the model's forwards (a sampler after the lm_head) in the
	// step, when the finder could see them; the self-checks read it.
	forwards   int
	Start, End nsys.Time
	// Exclusive time per category. These never overlap: at each instant the running
	// activity with the highest-priority category owns it, and instants with no activity
	// count as Idle. They always sum to End-Start.
	Exclusive [kernelclass.NumCategories]time.Duration
	// Busy is the summed activity time per category inside the window; it may exceed the
	// step's wall time when streams overlap. Busy[Idle] equals Exclusive[Idle].
	Busy [kernelclass.NumCategories]time.Duration
	// Kernels counts activities that start in the step, per category (memory operations
	// count under Memory).
	Kernels [kernelclass.NumCategories]int
	// Launches counts host launches whose work starts in the step: each kernel launched
	// by the host counts once, and a CUDA graph launch counts once however many kernels it ran.
	Launches int
	Gaps     Gaps
	// LongGap is the step's longest idle gap (the first of equal ones); zero without gaps.
	LongGap Gap
	// ShortKernels counts the kernels (not memory operations) started in the step that ran
	// less than ShortKernel; ShortBusy is their summed duration (whole kernels, not clipped
	// to the step).
	ShortKernels int
	ShortBusy    time.Duration
}

// ShortKernel is the duration under which a kernel counts as short (Step.ShortKernels):
// about the cost of one kernel launch, so that fusing such kernels saves as much as they run.
const ShortKernel = 5 * time.Microsecond

// Wall returns the step's wall time.
func (s *Step) Wall() time.Duration { return s.End.Sub(s.Start) }

// TotalKernels returns the number of kernels (not memory operations) started in the step.
func (s *Step) TotalKernels() int { return kernelsBut(&s.Kernels, kernelclass.Memory) }

// kernelsBut sums counts per category, but for category not.
func kernelsBut(counts *[kernelclass.NumCategories]int, not kernelclass.Category) int {
	n := 0
	for c, k := range counts {
		if kernelclass.Category(c) != not {
			n += k
		}
	}
	return n
}

// CategorySummary is the distribution of one category's time over the summarised steps.
type CategorySummary struct {
	Median, P90 time.Duration // of exclusive time per step
	// Mean is the category's exclusive time per step: its total over the steps divided by
	// their number, rounded so that the means of all categories add up exactly to
	// Summary.Mean (largest remainders get the leftover nanoseconds).
	Mean           time.Duration
	Share          float64       // exclusive time over wall time, summed over steps (Mean / Summary.Mean up to rounding)
	KernelsPerStep float64       // mean
	CallsMedian    float64       // median kernels per step
	BusyPerCall    time.Duration // busy time per kernel, over all summarised steps
}

// Summary describes the steps of one phase on one device.
type Summary struct {
	Phase          Phase // the phase summarised; Unknown when steps of every phase are included
	Steps          int
	Median, P10    time.Duration
	P90            time.Duration
	Mean           time.Duration // total wall time of the steps / their number, truncated; the categories' Means add up to it
	Categories     [kernelclass.NumCategories]CategorySummary
	LaunchesPerStp float64
	KernelsPerStep float64
	Gaps           Gaps // summed over the steps
	GapsPerStep    float64
	// ShortPerStep and ShortBusyPerStep are the means of Step.ShortKernels and Step.ShortBusy.
	ShortPerStep     float64
	ShortBusyPerStep time.Duration
	// Outliers are the steps of the phase left out of everything above: longer than
	// OutlierFactor times the phase's median step.
	Outliers Outliers
	// Selected lists the steps of the phase summarised, outliers included, as positions in
	// the steps summarised (DeviceReport.Steps): the choice SelectSteps makes, made once
	// (SelectedSteps returns them).
	Selected []int
	// Stall is the recurring long gap of the summarised steps: the kernel that most
	// steps' longest gap (of StallGap or more) waits for, and those gaps.
	Stall Stall
}

// Stall is a recurring long idle gap before kernels of the same category (Summary.Stall):
// a library that builds a kernel per new shape (cuDNN SDPA) launches a differently named
// plan kernel as the shape changes, so the name alone would split one stall into several.
type Stall struct {
	Kernel   nsys.NameID // the most frequent kernel among the gaps; NoKernel when no step has a long gap before a kernel
	Category kernelclass.Category
	Name     string // Kernel's name (set by Summarize; "" from SummarizeSteps)
	Steps    int    // the summarised steps whose longest gap, of StallGap or more, ends at a kernel of Category
	Total    time.Duration
	API      [NumAPIGroups]time.Duration // what the launching threads did during those gaps; adds up to Total
}

// Outliers describes the steps of a phase that a summary leaves out (OutlierFactor).
type Outliers struct {
	Steps   []int         // their Step.Index, in order; empty when none
	Median  time.Duration // the median step of the phase, outliers included
	Limit   time.Duration // OutlierFactor x Median: the outliers are longer
	Wall    time.Duration // their summed wall time
	Longest time.Duration // the longest one's wall time
	Idle    time.Duration // their summed idle time
	Gaps    Gaps          // their idle gaps, summed
	LongGap Gap           // the longest idle gap among them
}

// DeviceReport is the breakdown of one device.
type DeviceReport struct {
	Device nsys.DeviceID
	// PID is the process (operating system pid) whose work the report holds, the one that
	// launched most of it when it is not split; Processes counts the processes with work on
	// the device. A device two or more processes share (Processes > 1) has one report per
	// process, each its own loop, its steps that process's alone (procs.go).
	PID          int64
	Processes    int
	GPU          string
	Method       Method
	MethodDetail string // e.g. the NVTX dialect or regex, "12 graph launches"
	Steps        []Step // after Options.Skip
	Skipped      int
	// Outside is the activity that belongs to no step (before the first, between step
	// ranges, after the last).
	Outside Outside
	// Lifetime names what lies outside the served loop in a capture of a whole process
	// (no capture range): start-up and loading, warm-up and graph capture before it,
	// shutdown after it, in time order (lifetime.go); nil for a capture of the loop alone.
	// Warm-up and capture iterations are in Outside, not steps.
	Lifetime []LoopSpan
	// Kind says what the device's steps are when they are not an inference loop
	// (KindTraining, KindLoading; kind.go): its steps then have no inference phase and no
	// findings apply; KindInference ("") otherwise.
	Kind    string
	KindWhy string  // the evidence of Kind, in words; "" for inference
	Summary Summary // over the phase chosen by Options.Phase
	// StepKernels totals the GPU work of the summarised steps (the steps Summary covers,
	// outliers left out) per name and category, by total time, descending: kernels by
	// name, memory operations by kind, graph replays traced at graph level as one row
	// (GraphReplayName). Times are clipped to the steps as Step.Busy is, so the totals add
	// up to those steps' busy time of every category but idle.
	StepKernels []KernelStat
	Warnings    []error
	// SOL compares Summary.Median with the speed-of-light floor; nil without one
	// (Options.SOLStep, Options.SOLBytes).
	SOL *SOL
}

// Outside sums a device's windows of activity that belong to no step. Like a step's, its
// exclusive times sum to its wall time (the windows' total).
type Outside struct {
	Windows   int
	Spans     []Span // each window's start and end, in time order
	Wall      time.Duration
	Exclusive [kernelclass.NumCategories]time.Duration
	Busy      [kernelclass.NumCategories]time.Duration
	Kernels   [kernelclass.NumCategories]int
}

// A Span is a window of a device's timeline.
type Span struct{ Start, End nsys.Time }

// TotalKernels returns the number of kernels (not memory operations) outside steps.
func (o *Outside) TotalKernels() int { return kernelsBut(&o.Kernels, kernelclass.Memory) }

// KernelStat is one distinct kernel name over the whole trace (all devices).
type KernelStat struct {
	Name     string
	Category kernelclass.Category
	Rule     string // the rule that matched; "" for Other
	Count    int
	Total    time.Duration
	NCCL     *kernelclass.NCCLKernel // decoded NCCL name, nil for others
}

// A Report is the finished per-step breakdown of one trace.
type Report struct {
	Path string
	Meta nsys.Meta
	// Config is the run's configuration: the performance knobs of the environment nsys
	// recorded (nsys.Trace.Config), by name.
	Config []nsys.EnvVar
	// Capture is the nsys options the capture was taken with (nsys.Trace.Capture).
	Capture []nsys.EnvVar
	// Origin is where the trace's clock and processes come from (nsys.Trace.Origin: the
	// reference file's for a run of several files), and Start, End the span of its GPU
	// activity on its clock (nsys.Trace.Span; both 0 without any): Origin.SessionStart +
	// Start is the UTC time its first activity started.
	Origin     nsys.Origin
	Start, End nsys.Time
	Devices    []DeviceReport
	Kernels    []KernelStat // by total time, descending; ties by name
	// StepKernels is DeviceReport.StepKernels summed over the devices (by name and category).
	StepKernels []KernelStat
	Warnings    []error
	// Ranks compares the devices: collectives matched across ranks, wait and transfer
	// time, stragglers and step-time spread. Nil with fewer than two devices.
	Ranks *RankReport
	// Timelines are the median and the slowest summarised step as they ran (timeline.go),
	// for the HTML report; bounded to one step's rows per device.
	Timelines []StepTimeline
	// Run says how the files of a run given as several files were put on one clock
	// (run.go); nil for one file.
	Run *RunClock
}

// NVTXCategory maps kernels launched inside NVTX ranges whose text matches Match to Category.
type NVTXCategory struct {
	Match    *regexp.Regexp
	Category kernelclass.Category
}
