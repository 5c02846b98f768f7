package findings

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds the rules. Each reads the device's summary (and the rank view), decides
// whether it holds, and writes its finding whole: time at stake, evidence, claim and
// suggestion, the claim from the same values as the evidence.

// Thresholds of the rules (README "Findings" states each).
const (
	// launch_bound: idle while the host launches or runs no CUDA call, as a share of the step.
	LaunchBoundShare = 0.30
	// communication_bound: allreduce + collective exclusive time is material: at least
	// MaterialShare of the step and MaterialWait per step (below).
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

func frac(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// perStep returns the summary's mean exclusive time of category c per step (the decode
// table's row).
func perStep(sm *breakdown.Summary, c kernelclass.Category) time.Duration {
	return sm.Categories[c].Mean
}

func ns(key string, d time.Duration) Fact { return Fact{Key: key, Unit: UnitNS, N: float64(d)} }
func cnt(key string, n float64) Fact      { return Fact{Key: key, Unit: UnitCount, N: n} }
func share(key string, f float64) Fact    { return Fact{Key: key, Unit: UnitShare, N: f} }
func ratio(key string, f float64) Fact    { return Fact{Key: key, Unit: UnitRatio, N: f} }
func text(key string, s string) Fact      { return Fact{Key: key, Unit: UnitText, Text: s} }
func perSteps(sm *breakdown.Summary, d time.Duration) time.Duration {
	return d / time.Duration(sm.Steps)
}

// countPerStep is a whole-phase count per step.
func countPerStep(sm *breakdown.Summary, n int) float64 { return float64(n) / float64(sm.Steps) }

// dur and pct word a claim's numbers as the report's text does.
func dur(d time.Duration) string { return breakdown.FormatDuration(int64(d)) }
func pct(f float64) string       { return breakdown.FormatPercent(f) }

// graphLaunched reports whether the steps run as CUDA graphs: far fewer host launches than
// kernels.
func graphLaunched(sm *breakdown.Summary) bool {
	if sm.Categories[kernelclass.UntracedGraph].KernelsPerStep > 0 {
		return true // graphs traced at graph level count one kernel per replay
	}
	return sm.KernelsPerStep > 0 && sm.LaunchesPerStp*4 <= sm.KernelsPerStep
}

// launchBound: the GPU idles while the host launches ordinary kernels or runs no CUDA call
// (Python, scheduling) for at least LaunchBoundShare of the step, outside the gaps of a
// host stall (host_stall's) and not inside graph launch calls (graph_launch's), module
// loading, memory management or other CUDA calls. Headroom: the step's busy
// (non-idle) time, which CUDA graphs or a faster host would approach.
func launchBound(dr *breakdown.DeviceReport, stack Stack) *Finding {
	sm := &dr.Summary
	g := &sm.Gaps
	launch, none := ordinaryIdle(dr)
	stake := launch + none
	if frac(stake, sm.Mean) < LaunchBoundShare {
		return nil
	}
	idle := perStep(sm, kernelclass.Idle)
	busy := sm.Mean - idle
	idleShare := sm.Categories[kernelclass.Idle].Share
	under10 := countPerStep(sm, g.Sizes[breakdown.GapUnder10us])
	mid := countPerStep(sm, g.Sizes[breakdown.Gap10to100us])
	over100 := countPerStep(sm, g.Sizes[breakdown.Gap100usTo1ms]+g.Sizes[breakdown.GapOver1ms])
	speedup := frac(sm.Mean, busy)
	f := &Finding{ID: LaunchBound, AtStake: stake, Evidence: []Fact{
		share("idle_share", idleShare),
		ns("idle_ns", idle),
		cnt("gaps_per_step", sm.GapsPerStep),
		cnt("gaps_under_10us_per_step", under10),
		cnt("gaps_10_100us_per_step", mid),
		cnt("gaps_over_100us_per_step", over100),
		ns("host_launching_ns", launch),
		ns("host_no_cuda_call_ns", none),
		cnt("launches_per_step", sm.LaunchesPerStp),
		cnt("kernels_per_step", sm.KernelsPerStep),
		ns("busy_ns", busy),
		ratio("possible_speedup", speedup),
	}}
	f.Claim = fmt.Sprintf("the GPU is idle %s/step (%s of the step) in %.1f gaps/step (%.1f under 10µs, %.1f of 10-100µs, %.1f over 100µs) "+
		"while the host launches (%s) or runs no CUDA call (%s); %.1f host launches for %.1f kernels/step; busy time %s/step: up to %.1fx faster",
		dur(idle), pct(idleShare), sm.GapsPerStep, under10, mid, over100, dur(launch), dur(none), sm.LaunchesPerStp,
		sm.KernelsPerStep, dur(busy), speedup)
	if graphLaunched(sm) {
		f.Suggestion = "the step already runs as a CUDA graph: the idle time is the host between graph launches " +
			"(scheduling, input preparation, the token read-back); overlap it with the GPU (asynchronous scheduling, " +
			"pinned non-blocking copies) or capture more of the step in the graph"
	} else {
		f.Suggestion = graphAdvice(stack) + ", or make the host faster: the step would approach its busy time"
	}
	return f
}

// kernelStorm: at least KernelStormCount kernels per step run under ShortKernel, and
// together hold at least KernelStormShare of the step.
func kernelStorm(dr *breakdown.DeviceReport) *Finding {
	sm := &dr.Summary
	if sm.ShortPerStep < KernelStormCount || frac(sm.ShortBusyPerStep, sm.Mean) < KernelStormShare {
		return nil
	}
	g := &sm.Gaps
	under10 := countPerStep(sm, g.Sizes[breakdown.GapUnder10us])
	under10NS := perSteps(sm, g.SizeNS[breakdown.GapUnder10us])
	f := &Finding{ID: KernelStorm, AtStake: sm.ShortBusyPerStep, Evidence: []Fact{
		cnt("short_kernels_per_step", sm.ShortPerStep),
		ns("short_kernels_ns", sm.ShortBusyPerStep),
		cnt("kernels_per_step", sm.KernelsPerStep),
		cnt("gaps_under_10us_per_step", under10),
		ns("gaps_under_10us_ns", under10NS),
	}}
	f.Claim = fmt.Sprintf("%.1f of %.1f kernels/step run under 5µs, %s/step together; %.1f gaps under 10µs/step between them (%s/step)",
		sm.ShortPerStep, sm.KernelsPerStep, dur(sm.ShortBusyPerStep), under10, dur(under10NS))
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
func hostSync(dr *breakdown.DeviceReport) *Finding {
	sm := &dr.Summary
	sync := perSteps(sm, sm.Gaps.HostLong[breakdown.HostSync])
	cp := perSteps(sm, sm.Gaps.HostLong[breakdown.HostCopy])
	if frac(sync+cp, sm.Mean) < HostSyncShare {
		return nil
	}
	allSync := perSteps(sm, sm.Gaps.Host[breakdown.HostSync])
	allCopy := perSteps(sm, sm.Gaps.Host[breakdown.HostCopy])
	mem := perStep(sm, kernelclass.Memory)
	memOps := sm.Categories[kernelclass.Memory].KernelsPerStep
	return &Finding{ID: HostSync, AtStake: sync + cp, Evidence: []Fact{
		ns("idle_host_synchronizing_ns", allSync),
		ns("idle_host_copying_ns", allCopy),
		ns("idle_host_synchronizing_long_gaps_ns", sync),
		ns("idle_host_copying_long_gaps_ns", cp),
		ns("memory_ns", mem),
		cnt("memory_ops_per_step", memOps),
	}, Claim: fmt.Sprintf("in idle gaps of 10µs or more, the GPU is idle %s/step while the host synchronizes and %s/step while it copies "+
		"(in all gaps, shorter ones between kernels included: %s and %s); %.1f memory operations/step on the GPU (%s/step)",
		dur(sync), dur(cp), dur(allSync), dur(allCopy), memOps, dur(mem)),
		Suggestion: "the GPU waits while the host synchronizes or copies inside the step: keep one token read-back per " +
			"step, into pinned memory with non_blocking=True; remove .item()/.cpu()/.tolist() calls from the step; " +
			"prepare the next step's inputs while the GPU runs (asynchronous scheduling)"}
}

// moeRouting: routing time is at least MoERoutingOfBusy of the step's busy (non-idle)
// time and, when expert kernels are classified as such, at least MoERoutingOfMoE of routing
// + expert time. Busy time, not the step, is the measure: a launch-bound step's idle time
// would hide any kernel cost.
func moeRouting(dr *breakdown.DeviceReport) *Finding {
	sm := &dr.Summary
	rt, ex := perStep(sm, kernelclass.MoERouting), perStep(sm, kernelclass.MoEExpert)
	busy := sm.Mean - perStep(sm, kernelclass.Idle)
	if rt == 0 || frac(rt, busy) < MoERoutingOfBusy || (ex > 0 && frac(rt, rt+ex) < MoERoutingOfMoE) {
		return nil
	}
	kernels := sm.Categories[kernelclass.MoERouting].KernelsPerStep
	claim := fmt.Sprintf("MoE routing takes %s/step, %s of the step's busy time %s", dur(rt), pct(frac(rt, busy)), dur(busy))
	if ex > 0 {
		claim += fmt.Sprintf(", against %s/step of expert kernels (%s of MoE time)", dur(ex), pct(frac(rt, rt+ex)))
	} else {
		claim += " (no kernel is classified moe_expert)"
	}
	return &Finding{ID: MoERouting, AtStake: rt, Evidence: []Fact{
		ns("routing_ns", rt),
		ns("expert_ns", ex),
		ns("busy_ns", busy),
		share("routing_of_busy", frac(rt, busy)),
		share("routing_of_moe", frac(rt, rt+ex)),
		cnt("routing_kernels_per_step", kernels),
	}, Claim: claim + fmt.Sprintf("; %.1f routing kernels/step", kernels),
		Suggestion: "route with fused kernels (one top-k gating softmax and one expert alignment kernel per layer, as " +
			"vLLM's fused_moe topk_softmax and moe_align_block_size) instead of a chain of torch ops"}
}

// farFromSOL: the measured step is at least FarFromSOLRatio times the speed-of-light floor.
func farFromSOL(dr *breakdown.DeviceReport) *Finding {
	s := dr.SOL
	if s == nil || s.Floor <= 0 || s.Ratio < FarFromSOLRatio {
		return nil
	}
	return &Finding{ID: FarFromSOL, AtStake: max(dr.Summary.Mean-s.Floor, 0), Evidence: []Fact{
		ns("floor_ns", s.Floor),
		ns("median_step_ns", s.Measured),
		ratio("ratio", s.Ratio),
		share("efficiency", s.Efficiency),
	}, Claim: fmt.Sprintf("the median step %s is %.1fx its speed-of-light floor %s (efficiency %s)", dur(s.Measured),
		s.Ratio, dur(s.Floor), pct(s.Efficiency)),
		Suggestion: "the step is far from what memory bandwidth allows: the findings above say where the rest goes; " +
			"if none applies, look at the GEMMs' and attention's achieved bandwidth (Nsight Compute)"}
}

// coverage: the report cannot say much about part of the step: time in other (kernels no
// rule matched) or untraced_graph (graphs traced at graph level), or steps found by a weak
// method.
func coverage(dr *breakdown.DeviceReport) *Finding {
	sm := &dr.Summary
	unclassified := perStep(sm, kernelclass.Other)
	untraced := perStep(sm, kernelclass.UntracedGraph)
	other := unclassified + untraced
	weak := dr.Method == breakdown.MethodPeriodic || dr.Method == breakdown.MethodWhole
	if frac(other, sm.Mean) < CoverageShare && !weak {
		return nil
	}
	f := &Finding{ID: Coverage, AtStake: other, Evidence: []Fact{
		ns("other_ns", other), // other + untraced_graph
		share("other_share", frac(other, sm.Mean)),
		ns("unclassified_ns", unclassified),
		ns("untraced_graph_ns", untraced),
		text("step_method", dr.Method.String()),
	}}
	var claim []string
	if other > 0 {
		claim = append(claim, fmt.Sprintf("%s/step (%s of the step) is unnamed work: %s in other (unclassified kernels), %s in untraced_graph (graphs traced at graph level)",
			dur(other), pct(frac(other, sm.Mean)), dur(unclassified), dur(untraced)))
	}
	f.Claim = strings.Join(append(claim, "steps found by "+dr.Method.String()), "; ")
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

// Thresholds of the rules added for issue 22 (README "Findings" states each).
const (
	// host_stall: the longest gap of at least HostStallSteps of the summarised steps is
	// breakdown.StallGap or longer and waits for the same kernel, and those gaps hold at
	// least HostStallShare of the step.
	HostStallSteps = 0.5
	HostStallShare = 0.10
	// graph_launch: idle while the host is inside a graph launch call, as a share of the step.
	GraphLaunchShare = 0.05
	// A rank's wait for another is material from MaterialShare of its step and MaterialWait
	// per step on: below both, the communication finding and the rank view call the ranks
	// balanced.
	MaterialShare = 0.05
	MaterialWait  = 50 * time.Microsecond
)

// apiPerStep is the summary's idle time per step while the host was in group g.
func apiPerStep(sm *breakdown.Summary, g breakdown.APIGroup) time.Duration {
	return perSteps(sm, sm.Gaps.API[g])
}

// apiClause words what the host did during some idle time, largest group first, groups
// under 1% of total left out: "module loading 1.15ms, no CUDA call 37.6ms".
func apiClause(api *[breakdown.NumAPIGroups]time.Duration, div time.Duration) string {
	var total time.Duration
	for _, x := range api {
		total += x
	}
	type part struct {
		g breakdown.APIGroup
		d time.Duration
	}
	var ps []part
	for _, g := range breakdown.APIGroupOrder {
		if x := api[g]; x > 0 && frac(x, total) >= 0.01 {
			ps = append(ps, part{g, x})
		}
	}
	slices.SortStableFunc(ps, func(a, b part) int { return int(b.d - a.d) })
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s %s", breakdown.APIGroupNames[p.g], dur(p.d/div)))
	}
	if len(out) == 0 {
		return "no CUDA call"
	}
	return strings.Join(out, ", ")
}

// clip shortens a kernel name for a claim.
func clip(s string) string {
	if r := []rune(s); len(r) > 90 {
		return string(r[:60]) + " … " + string(r[len(r)-25:])
	}
	return s
}

// outliers: steps of the phase longer than breakdown.OutlierFactor times its median were
// left out of the summary; this finding says how many, how long and what filled them.
// Its time at stake is what they add per step of the phase (their time beyond the median,
// spread over every step of the phase), at most the summarised step: a step that long is
// not the usual step's cost, and no finding puts more than the step at stake.
func outliers(dr *breakdown.DeviceReport) *Finding {
	sm := &dr.Summary
	o := &sm.Outliers
	n := len(o.Steps)
	if n == 0 {
		return nil
	}
	all := time.Duration(sm.Steps + n)
	excess := (o.Wall - time.Duration(n)*o.Median) / all
	stake := min(excess, sm.Mean)
	idx := make([]string, 0, min(n, 8))
	for i, s := range o.Steps {
		if i == 8 {
			idx = append(idx, "…")
			break
		}
		idx = append(idx, fmt.Sprint(s))
	}
	lg := &o.LongGap
	f := &Finding{ID: Outliers, AtStake: stake, Evidence: []Fact{
		cnt("outlier_steps", float64(n)),
		cnt("phase_steps", float64(sm.Steps+n)),
		text("outlier_indexes", strings.Join(idx, ",")),
		ns("phase_median_ns", o.Median),
		ns("limit_ns", o.Limit),
		ns("outlier_wall_ns", o.Wall),
		ns("longest_outlier_ns", o.Longest),
		ns("outlier_idle_ns", o.Idle),
		ns("longest_gap_ns", lg.Dur()),
		ns("excess_per_step_ns", excess),
	}}
	f.Claim = fmt.Sprintf("%d of %d %s steps took over %dx the median step %s (step %s; %s in all, the longest %s, %s of it idle; "+
		"its longest gap %s while the host was in %s); they are left out of the summary and the other findings; "+
		"spread over all %d steps they add %s/step",
		n, sm.Steps+n, sm.Phase, breakdown.OutlierFactor, dur(o.Median), strings.Join(idx, ", "), dur(o.Wall), dur(o.Longest),
		dur(o.Idle), dur(lg.Dur()), apiClause(&lg.API, 1), sm.Steps+n, dur(excess))
	f.Suggestion = "find what the host did in the slow steps (the gap above: a pause, a collection, a new shape compiled, " +
		"a request arriving late); if it recurs in production, it is the latency users see: remove it or move it out of the loop"
	return f
}

// hostStall: in at least HostStallSteps of the summarised steps, the longest idle gap is a
// stall (breakdown.StallGap or longer) before the same kernel, and those gaps hold at least
// HostStallShare of the step. The evidence says what the host was in meanwhile; module
// loading or run-time compilation there is a library building code for a new shape.
func hostStall(dr *breakdown.DeviceReport) *Finding {
	sm := &dr.Summary
	st := &sm.Stall
	if st.Steps == 0 || float64(st.Steps) < HostStallSteps*float64(sm.Steps) {
		return nil
	}
	stake := perSteps(sm, st.Total)
	if frac(stake, sm.Mean) < HostStallShare {
		return nil
	}
	per := st.Total / time.Duration(st.Steps)
	f := &Finding{ID: HostStall, AtStake: stake, Evidence: []Fact{
		cnt("stall_steps", float64(st.Steps)),
		cnt("steps", float64(sm.Steps)),
		text("kernel", st.Name),
		ns("stall_ns", per),
	}}
	for _, g := range breakdown.APIGroupOrder {
		f.Evidence = append(f.Evidence, ns("stall_"+breakdown.APIGroupKeys[g]+"_ns", perSteps(sm, st.API[g])))
	}
	f.Claim = fmt.Sprintf("in %d of %d steps the GPU waits %s in one gap before %s (%s/step over the summarised steps, %s of the step); "+
		"the host meanwhile: %s per step", st.Steps, sm.Steps, dur(per), clip(st.Name), dur(stake), pct(frac(stake, sm.Mean)),
		apiClause(&st.API, time.Duration(sm.Steps)))
	var tips []string
	if st.API[breakdown.APIModuleLoading] > 0 {
		tips = append(tips, "the host loads or compiles device code in the gap every step: a library builds a kernel for a new "+
			"shape (cuDNN SDPA builds and loads an attention plan per sequence length, Triton/inductor compiles per shape): warm up "+
			"every shape before serving, pad shapes to a few sizes, pin the attention backend (e.g. FlashAttention instead of "+
			"cuDNN SDPA) or keep its plan cache")
	}
	if st.API[breakdown.APIMemoryManagement] > 0 {
		tips = append(tips, "memory is allocated or registered in the gap: keep the caching allocator warm, preallocate buffers")
	}
	if frac(st.API[breakdown.APINone], st.Total) >= 0.5 {
		tips = append(tips, "most of the gap is the host's own code (no CUDA call): profile the launching thread in that gap "+
			"(nsys --sample=cpu, py-spy) to see which library or Python code runs before this kernel")
	}
	if st.API[breakdown.APISynchronizing]+st.API[breakdown.APICopying] > 0 && frac(st.API[breakdown.APISynchronizing]+st.API[breakdown.APICopying], st.Total) >= 0.25 {
		tips = append(tips, "the host synchronizes or copies in the gap: move the read-back or copy out of the step")
	}
	if len(tips) == 0 {
		tips = append(tips, "find what the launching thread does in this gap each step and move it out of the loop")
	}
	f.Suggestion = strings.Join(tips, "; ")
	return f
}

// graphLaunch: in idle gaps of 10 µs or more, the GPU idles while the host is inside
// cudaGraphLaunch / cuGraphLaunch for at least GraphLaunchShare of the step: the launch
// call's own cost (uploading the graph, many nodes) is not hidden behind GPU work. Shorter
// gaps are the graph's own gaps between nodes, which the GPU runs while the launch call is
// still returning (as for host_sync_copy): on tp2-moe-graph they are 41µs of rank 0's
// 156µs/step of idle in graph launch calls.
func graphLaunch(dr *breakdown.DeviceReport) *Finding {
	sm := &dr.Summary
	gl := perSteps(sm, sm.Gaps.APILong[breakdown.APIGraphLaunching])
	all := apiPerStep(sm, breakdown.APIGraphLaunching)
	if frac(gl, sm.Mean) < GraphLaunchShare {
		return nil
	}
	f := &Finding{ID: GraphLaunch, AtStake: gl, Evidence: []Fact{
		ns("idle_in_graph_launch_ns", gl),
		ns("idle_in_graph_launch_all_gaps_ns", all),
		share("graph_launch_share", frac(gl, sm.Mean)),
		cnt("launches_per_step", sm.LaunchesPerStp),
		cnt("kernels_per_step", sm.KernelsPerStep),
		ns("idle_ns", perStep(sm, kernelclass.Idle)),
	}}
	f.Claim = fmt.Sprintf("in idle gaps of 10µs or more, the GPU is idle %s/step (%s of the step) while the host is inside a CUDA graph "+
		"launch call (in all gaps, the graph's own gaps between nodes included: %s); %.1f host launches for %.1f kernels/step",
		dur(gl), pct(frac(gl, sm.Mean)), dur(all), sm.LaunchesPerStp, sm.KernelsPerStep)
	f.Suggestion = "the graph launch call itself costs time the GPU waits for: upload the graph once after instantiating it " +
		"(cudaGraphUpload), make it smaller (fewer nodes: fuse kernels, torch.compile), and launch the next step's graph " +
		"before the token read-back so the launch overlaps GPU work"
	return f
}

// ordinaryIdle is the idle time per step that launch_bound counts: while the host launches
// ordinary kernels or runs no CUDA call, outside the host stall's gaps (host_stall's own).
func ordinaryIdle(dr *breakdown.DeviceReport) (launch, none time.Duration) {
	sm := &dr.Summary
	launch, none = sm.Gaps.API[breakdown.APILaunching], sm.Gaps.API[breakdown.APINone]
	if hostStall(dr) != nil {
		launch -= sm.Stall.API[breakdown.APILaunching]
		none -= sm.Stall.API[breakdown.APINone]
	}
	return perSteps(sm, launch), perSteps(sm, none)
}
