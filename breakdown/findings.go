package breakdown

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds the findings: conclusions drawn from a device's summary by documented
// rules over the report's own numbers, each with its evidence, the step time at stake and
// what to try. Every number a rule reads is a mean per step of the summarised phase (the
// summary's category Mean, or a sum over its steps divided by their count), so the parts a
// finding cites add up to the step it cites, and to the decode table's rows.

// Finding ids, stable: JSON and diff use them.
const (
	FindLaunchBound   = "launch_bound"
	FindCommunication = "communication_bound"
	FindKernelStorm   = "kernel_storm"
	FindHostSync      = "host_sync_copy"
	FindMoERouting    = "moe_routing_overhead"
	FindFarFromSOL    = "far_from_sol"
	FindCoverage      = "coverage"
)

// Thresholds of the rules (README "Findings" states each).
const (
	// launch_bound: idle while the host launches or runs no CUDA call, as a share of the step.
	LaunchBoundShare = 0.30
	// communication_bound: allreduce + collective exclusive time, as a share of the step.
	CommShare = 0.15
	// Waiting for the last rank at or above this share of the matched calls' time makes the
	// communication finding a late-rank one; below it, a transfer one.
	CommWaitShare = 0.5
	// A transfer per call under this is latency-bound (small messages).
	CommSmallTransfer = 50 * time.Microsecond
	// kernel_storm: at least this many short kernels (under ShortKernel) per step, holding
	// at least KernelStormShare of the step.
	KernelStormCount = 30
	KernelStormShare = 0.05
	// host_sync_copy: idle while the host synchronizes or copies, as a share of the step.
	HostSyncShare = 0.05
	// moe_routing_overhead: routing time as a share of the step's busy time, and of routing +
	// expert time when expert kernels are classified.
	MoERoutingOfBusy = 0.10
	MoERoutingOfMoE  = 0.10
	// far_from_sol: measured step over the speed-of-light floor.
	FarFromSOLRatio = 2.0
	// coverage: time in other (or in untraced graphs) as a share of the step.
	CoverageShare = 0.05
)

// Severity ranks a finding by the share of the step at stake.
type Severity uint8

// Severities; High is at least a quarter of the step at stake, Medium a tenth.
const (
	Low Severity = iota
	Medium
	High
)

func (s Severity) String() string {
	switch s {
	case High:
		return "high"
	case Medium:
		return "medium"
	}
	return "low"
}

func severityOf(atStake, step time.Duration) Severity {
	switch f := frac(atStake, step); {
	case f >= 0.25:
		return High
	case f >= 0.10:
		return Medium
	}
	return Low
}

// Unit says how a Fact's value reads.
type Unit uint8

// Units of facts.
const (
	UnitNS    Unit = iota // nanoseconds (per step unless the key says otherwise)
	UnitCount             // a count or a mean count per step
	UnitShare             // a fraction of 1
	UnitRatio             // a plain ratio (x)
	UnitText              // Fact.Text
)

// A Fact is one piece of a finding's evidence: a named number (or text) from the report.
type Fact struct {
	Key  string // stable snake_case name, e.g. "idle_share"
	Unit Unit
	N    float64 // the value, unless Unit is UnitText
	Text string
}

// A Finding is one conclusion about what limits a device's step.
type Finding struct {
	ID       string // one of the Find* ids
	Severity Severity
	// AtStake is the step time (mean per step) the finding is about: what fixing it could
	// give back at most.
	AtStake time.Duration
	// Step is the mean step the finding is measured against.
	Step       time.Duration
	Evidence   []Fact
	Suggestion string
}

// Fact returns the evidence named key and whether the finding has it.
func (f *Finding) Fact(key string) (Fact, bool) {
	for _, e := range f.Evidence {
		if e.Key == key {
			return e, true
		}
	}
	return Fact{}, false
}

// FindingOptions are the inputs of Findings beyond the report.
type FindingOptions struct {
	// Knobs are the run's configuration (NCCL_PROTO, ...) when the capture recorded them;
	// the communication finding cites the ones that bear on it. Nil without them.
	Knobs map[string]string
}

// Findings applies the rules to device d of r (d indexes r.Devices) and returns the
// findings that hold, most step time at stake first (ties by id).
func Findings(r *Report, d int, opt FindingOptions) []Finding {
	dr := &r.Devices[d]
	sm := &dr.Summary
	if sm.Steps == 0 || sm.Mean <= 0 {
		return nil
	}
	var out []Finding
	add := func(f *Finding) {
		if f != nil {
			f.Step = sm.Mean
			f.Severity = severityOf(f.AtStake, sm.Mean)
			out = append(out, *f)
		}
	}
	add(launchBound(dr))
	add(communication(r, d, opt.Knobs))
	add(kernelStorm(dr))
	add(hostSync(dr))
	add(moeRouting(dr))
	add(farFromSOL(dr))
	add(coverage(dr))
	slices.SortStableFunc(out, func(a, b Finding) int {
		if c := cmp.Compare(b.AtStake, a.AtStake); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

func frac(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// perStep returns the summary's mean exclusive time of category c per step (the decode
// table's row).
func perStep(sm *Summary, c kernelclass.Category) time.Duration { return sm.Categories[c].Mean }

func ns(key string, d time.Duration) Fact                 { return Fact{Key: key, Unit: UnitNS, N: float64(d)} }
func cnt(key string, n float64) Fact                      { return Fact{Key: key, Unit: UnitCount, N: n} }
func share(key string, f float64) Fact                    { return Fact{Key: key, Unit: UnitShare, N: f} }
func ratio(key string, f float64) Fact                    { return Fact{Key: key, Unit: UnitRatio, N: f} }
func text(key string, s string) Fact                      { return Fact{Key: key, Unit: UnitText, Text: s} }
func perSteps(sm *Summary, d time.Duration) time.Duration { return d / time.Duration(sm.Steps) }

// graphLaunched reports whether the steps run as CUDA graphs: far fewer host launches than
// kernels.
func graphLaunched(sm *Summary) bool {
	if sm.Categories[kernelclass.UntracedGraph].KernelsPerStep > 0 {
		return true // graphs traced at graph level count one kernel per replay
	}
	return sm.KernelsPerStep > 0 && sm.LaunchesPerStp*4 <= sm.KernelsPerStep
}

// launchBound: the GPU idles while the host launches kernels or runs no CUDA call (Python,
// scheduling) for at least LaunchBoundShare of the step. Headroom: the step's busy
// (non-idle) time, which CUDA graphs or a faster host would approach.
func launchBound(dr *DeviceReport) *Finding {
	sm := &dr.Summary
	g := &sm.Gaps
	launch := perSteps(sm, g.Host[HostLaunch])
	none := perSteps(sm, g.Host[HostNone])
	stake := launch + none
	if frac(stake, sm.Mean) < LaunchBoundShare {
		return nil
	}
	idle := perStep(sm, kernelclass.Idle)
	busy := sm.Mean - idle
	f := &Finding{ID: FindLaunchBound, AtStake: stake, Evidence: []Fact{
		share("idle_share", sm.Categories[kernelclass.Idle].Share),
		ns("idle_ns", idle),
		cnt("gaps_per_step", sm.GapsPerStep),
		cnt("gaps_under_10us_per_step", float64(g.Sizes[GapUnder10us])/float64(sm.Steps)),
		cnt("gaps_10_100us_per_step", float64(g.Sizes[Gap10to100us])/float64(sm.Steps)),
		cnt("gaps_over_100us_per_step", float64(g.Sizes[Gap100usTo1ms]+g.Sizes[GapOver1ms])/float64(sm.Steps)),
		ns("host_launching_ns", launch),
		ns("host_no_cuda_call_ns", none),
		cnt("launches_per_step", sm.LaunchesPerStp),
		cnt("kernels_per_step", sm.KernelsPerStep),
		ns("busy_ns", busy),
		ratio("possible_speedup", frac(sm.Mean, busy)),
	}}
	if graphLaunched(sm) {
		f.Suggestion = "the step already runs as a CUDA graph: the idle time is the host between graph launches " +
			"(scheduling, input preparation, the token read-back); overlap it with the GPU (asynchronous scheduling, " +
			"pinned non-blocking copies) or capture more of the step in the graph"
	} else {
		f.Suggestion = "capture the step in CUDA graphs (vLLM: drop --enforce-eager; SGLang: keep CUDA graphs on " +
			"and raise --cuda-graph-max-bs; PyTorch: torch.compile(mode=\"reduce-overhead\")), or make the host faster: " +
			"the step would approach its busy time"
	}
	return f
}

// communication: allreduce and collective kernels hold at least CommShare of the step.
// With a rank view, the matched calls split into waiting for the last rank and transfer.
func communication(r *Report, d int, knobs map[string]string) *Finding {
	dr := &r.Devices[d]
	sm := &dr.Summary
	ar, coll := perStep(sm, kernelclass.AllReduce), perStep(sm, kernelclass.Collective)
	stake := ar + coll
	if frac(stake, sm.Mean) < CommShare {
		return nil
	}
	calls := sm.Categories[kernelclass.AllReduce].KernelsPerStep + sm.Categories[kernelclass.Collective].KernelsPerStep
	f := &Finding{ID: FindCommunication, AtStake: stake, Evidence: []Fact{
		share("comm_share", frac(stake, sm.Mean)),
		ns("allreduce_ns", ar),
		ns("collective_ns", coll),
		cnt("calls_per_step", calls),
	}}
	var tips []string
	small := false
	if rk := r.Ranks; rk != nil && d < len(rk.Devices) && len(rk.Steps) > 0 {
		rd := &rk.Devices[d]
		n := time.Duration(len(rk.Steps))
		waitShare := frac(rd.Wait, rd.Wait+rd.Transfer)
		f.Evidence = append(f.Evidence, ns("wait_ns", rd.Wait/n), ns("transfer_ns", rd.Transfer/n), share("wait_share", waitShare))
		if rd.CollectivesMatched > 0 {
			perCall := rd.Transfer / time.Duration(rd.CollectivesMatched)
			f.Evidence = append(f.Evidence, ns("transfer_per_call_ns", perCall))
			small = perCall < CommSmallTransfer
		}
		if waitShare >= CommWaitShare {
			late, most := -1, time.Duration(0)
			for i, w := range rd.WaitFor {
				if w > most {
					late, most = i, w
				}
			}
			if late >= 0 {
				ld := &rk.Devices[late]
				matched := 0
				if len(rk.Calls) > 0 {
					matched = len(rk.Calls)
				}
				f.Evidence = append(f.Evidence, cnt("late_rank", float64(ld.Device)), ns("wait_for_late_rank_ns", most/n),
					cnt("late_rank_last_arrivals", float64(ld.LastArrivals)), cnt("matched_calls", float64(matched)))
				tips = append(tips, fmt.Sprintf("the time is spent waiting for rank %d, not transferring: find out why rank %d "+
					"arrives late (its own findings: a launch-bound or busier rank; CPU affinity, the GIL, a slower host thread) "+
					"and make the ranks arrive together (CUDA graphs on every rank)", ld.Device, ld.Device))
			}
		}
	}
	if len(tips) == 0 {
		tips = append(tips, "the transfer itself is the cost: overlap communication with compute, or reduce what is communicated")
	}
	if small {
		tips = append(tips, "transfers are small (latency-bound): try NCCL_PROTO=LL or LL128, a custom all-reduce "+
			"(vLLM/SGLang custom all-reduce, FlashInfer one-shot), or fuse the all-reduce with the following RMSNorm")
	}
	if kn := commKnobs(knobs); kn != "" {
		f.Evidence = append(f.Evidence, text("knobs", kn))
		tips = append(tips, "run configuration: "+kn)
	}
	f.Suggestion = strings.Join(tips, "; ")
	return f
}

// MaxCitedKnobs is the most knobs a finding cites; the rest are counted ("and 3 more"):
// every device's finding quotes them.
const MaxCitedKnobs = 16

// commKnobs lists the knobs that bear on communication, sorted: "NCCL_ALGO=Ring, NCCL_PROTO=LL",
// at most MaxCitedKnobs of them.
func commKnobs(knobs map[string]string) string {
	var kv []string
	for k, v := range knobs {
		if strings.HasPrefix(k, "NCCL_") || strings.Contains(k, "ALLREDUCE") || strings.Contains(k, "ALL_REDUCE") {
			kv = append(kv, k+"="+v)
		}
	}
	slices.Sort(kv)
	if n := len(kv) - MaxCitedKnobs; n > 0 {
		kv = append(kv[:MaxCitedKnobs], fmt.Sprintf("and %d more (see the run configuration)", n))
	}
	return strings.Join(kv, ", ")
}

// kernelStorm: at least KernelStormCount kernels per step run under ShortKernel, and
// together hold at least KernelStormShare of the step.
func kernelStorm(dr *DeviceReport) *Finding {
	sm := &dr.Summary
	if sm.ShortPerStep < KernelStormCount || frac(sm.ShortBusyPerStep, sm.Mean) < KernelStormShare {
		return nil
	}
	g := &sm.Gaps
	f := &Finding{ID: FindKernelStorm, AtStake: sm.ShortBusyPerStep, Evidence: []Fact{
		cnt("short_kernels_per_step", sm.ShortPerStep),
		ns("short_kernels_ns", sm.ShortBusyPerStep),
		cnt("kernels_per_step", sm.KernelsPerStep),
		cnt("gaps_under_10us_per_step", float64(g.Sizes[GapUnder10us])/float64(sm.Steps)),
		ns("gaps_under_10us_ns", perSteps(sm, g.SizeNS[GapUnder10us])),
	}}
	f.Suggestion = "fuse the short kernels (elementwise chains, norms, casts, routing ops): torch.compile, fused " +
		"kernels of the serving engine (fused RMSNorm+residual, fused MoE/top-k), fewer separate ops per layer"
	if !graphLaunched(sm) {
		f.Suggestion += "; CUDA graphs remove their launch cost but not their own time"
	}
	return f
}

// hostSync: in idle gaps of 10 µs or more, the GPU idles while the host synchronizes or
// copies for at least HostSyncShare of the step. Shorter gaps are left out: they are the
// device's own gaps between kernels (on the graph captures, the ~1-2 µs between a replay's
// nodes while the host blocks in the token read-back), there whether or not the host waits,
// and kernel_storm's evidence; counting them put dense-graph's read-back at 41.75µs/step
// (10.6%) where the read-back's own idle is under 10µs/step.
func hostSync(dr *DeviceReport) *Finding {
	sm := &dr.Summary
	sync := perSteps(sm, sm.Gaps.HostLong[HostSync])
	cp := perSteps(sm, sm.Gaps.HostLong[HostCopy])
	if frac(sync+cp, sm.Mean) < HostSyncShare {
		return nil
	}
	return &Finding{ID: FindHostSync, AtStake: sync + cp, Evidence: []Fact{
		ns("idle_host_synchronizing_ns", perSteps(sm, sm.Gaps.Host[HostSync])),
		ns("idle_host_copying_ns", perSteps(sm, sm.Gaps.Host[HostCopy])),
		ns("idle_host_synchronizing_long_gaps_ns", sync),
		ns("idle_host_copying_long_gaps_ns", cp),
		ns("memory_ns", perStep(sm, kernelclass.Memory)),
		cnt("memory_ops_per_step", sm.Categories[kernelclass.Memory].KernelsPerStep),
	}, Suggestion: "the GPU waits while the host synchronizes or copies inside the step: keep one token read-back per " +
		"step, into pinned memory with non_blocking=True; remove .item()/.cpu()/.tolist() calls from the step; " +
		"prepare the next step's inputs while the GPU runs (asynchronous scheduling)"}
}

// moeRouting: routing time is at least MoERoutingOfBusy of the step's busy (non-idle)
// time and, when expert kernels are classified as such, at least MoERoutingOfMoE of routing
// + expert time. Busy time, not the step, is the measure: a launch-bound step's idle time
// would hide any kernel cost.
func moeRouting(dr *DeviceReport) *Finding {
	sm := &dr.Summary
	rt, ex := perStep(sm, kernelclass.MoERouting), perStep(sm, kernelclass.MoEExpert)
	busy := sm.Mean - perStep(sm, kernelclass.Idle)
	if rt == 0 || frac(rt, busy) < MoERoutingOfBusy || (ex > 0 && frac(rt, rt+ex) < MoERoutingOfMoE) {
		return nil
	}
	return &Finding{ID: FindMoERouting, AtStake: rt, Evidence: []Fact{
		ns("routing_ns", rt),
		ns("expert_ns", ex),
		ns("busy_ns", busy),
		share("routing_of_busy", frac(rt, busy)),
		share("routing_of_moe", frac(rt, rt+ex)),
		cnt("routing_kernels_per_step", sm.Categories[kernelclass.MoERouting].KernelsPerStep),
	}, Suggestion: "route with fused kernels (one top-k gating softmax and one expert alignment kernel per layer, as " +
		"vLLM's fused_moe topk_softmax and moe_align_block_size) instead of a chain of torch ops"}
}

// farFromSOL: the measured step is at least FarFromSOLRatio times the speed-of-light floor.
func farFromSOL(dr *DeviceReport) *Finding {
	s := dr.SOL
	if s == nil || s.Floor <= 0 || s.Ratio < FarFromSOLRatio {
		return nil
	}
	f := &Finding{ID: FindFarFromSOL, AtStake: max(dr.Summary.Mean-s.Floor, 0), Evidence: []Fact{
		ns("floor_ns", s.Floor),
		ns("median_step_ns", s.Measured),
		ratio("ratio", s.Ratio),
		share("efficiency", s.Efficiency),
	}, Suggestion: "the step is far from what memory bandwidth allows: the findings above say where the rest goes; " +
		"if none applies, look at the GEMMs' and attention's achieved bandwidth (Nsight Compute)"}
	return f
}

// coverage: the report cannot say much about part of the step: time in other (kernels no
// rule matched) or untraced_graph (graphs traced at graph level), or steps found by a weak
// method.
func coverage(dr *DeviceReport) *Finding {
	sm := &dr.Summary
	unclassified := perStep(sm, kernelclass.Other)
	untraced := perStep(sm, kernelclass.UntracedGraph)
	other := unclassified + untraced
	weak := dr.Method == MethodPeriodic || dr.Method == MethodWhole
	if frac(other, sm.Mean) < CoverageShare && !weak {
		return nil
	}
	f := &Finding{ID: FindCoverage, AtStake: other, Evidence: []Fact{
		ns("other_ns", other), // other + untraced_graph
		share("other_share", frac(other, sm.Mean)),
		ns("unclassified_ns", unclassified),
		ns("untraced_graph_ns", untraced),
		text("step_method", dr.Method.String()),
	}}
	var tips []string
	if frac(other, sm.Mean) >= CoverageShare && unclassified > 0 {
		tips = append(tips, "classify the kernels in other: 'stepstat classify' lists them; add classification rules "+
			"or map the NVTX ranges they run in to a category")
	}
	if frac(other, sm.Mean) >= CoverageShare && untraced > 0 {
		tips = append(tips, "re-capture with nsys profile --cuda-graph-trace=node: graphs traced at graph level "+
			"hide the kernels inside them")
	}
	if weak {
		tips = append(tips, "steps were found by "+dr.Method.String()+", a weak method: name the NVTX ranges that are "+
			"steps, or capture with an NVTX range around each step")
	}
	f.Suggestion = strings.Join(tips, "; ")
	return f
}
