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

// launchBound: the GPU idles while the host launches kernels or runs no CUDA call (Python,
// scheduling) for at least LaunchBoundShare of the step. Headroom: the step's busy
// (non-idle) time, which CUDA graphs or a faster host would approach.
func launchBound(dr *breakdown.DeviceReport) *Finding {
	sm := &dr.Summary
	g := &sm.Gaps
	launch := perSteps(sm, g.Host[breakdown.HostLaunch])
	none := perSteps(sm, g.Host[breakdown.HostNone])
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
		f.Suggestion = "capture the step in CUDA graphs (vLLM: drop --enforce-eager; SGLang: keep CUDA graphs on " +
			"and raise --cuda-graph-max-bs; PyTorch: torch.compile(mode=\"reduce-overhead\")), or make the host faster: " +
			"the step would approach its busy time"
	}
	return f
}

// communication: allreduce and collective kernels hold at least CommShare of the step.
// With a rank view, the matched calls split into waiting for the last rank and transfer.
func communication(r *breakdown.Report, d int, knobs map[string]string) *Finding {
	dr := &r.Devices[d]
	sm := &dr.Summary
	ar, coll := perStep(sm, kernelclass.AllReduce), perStep(sm, kernelclass.Collective)
	stake := ar + coll
	if frac(stake, sm.Mean) < CommShare {
		return nil
	}
	calls := sm.Categories[kernelclass.AllReduce].KernelsPerStep + sm.Categories[kernelclass.Collective].KernelsPerStep
	f := &Finding{ID: Communication, AtStake: stake, Evidence: []Fact{
		share("comm_share", frac(stake, sm.Mean)),
		ns("allreduce_ns", ar),
		ns("collective_ns", coll),
		cnt("calls_per_step", calls),
	}}
	claim := []string{fmt.Sprintf("allreduce %s + collective %s per step = %s of the step, %.1f calls/step", dur(ar), dur(coll),
		pct(frac(stake, sm.Mean)), calls)}
	tips, small := commRanks(f, &claim, r.Ranks, d)
	if len(tips) == 0 {
		tips = append(tips, "the transfer itself is the cost: overlap communication with compute, or reduce what is communicated")
	}
	if small {
		tips = append(tips, "transfers are small (latency-bound): try NCCL_PROTO=LL or LL128, a custom all-reduce "+
			"(vLLM/SGLang custom all-reduce, FlashInfer one-shot), or fuse the all-reduce with the following RMSNorm")
	}
	if kn := commKnobs(knobs); kn != "" {
		f.Evidence = append(f.Evidence, text("knobs", kn))
		claim = append(claim, "knobs: "+kn)
		tips = append(tips, "run configuration: "+kn)
	}
	f.Claim = strings.Join(claim, "; ")
	f.Suggestion = strings.Join(tips, "; ")
	return f
}

// commRanks adds the rank view's evidence to the communication finding f of device d and
// its clauses to claim: waiting and transfer time of the matched calls, the transfer per
// call, and the rank this one waits for when waiting is most of it. It returns the tips
// that follow and whether the transfers are small.
func commRanks(f *Finding, claim *[]string, rk *breakdown.RankReport, d int) (tips []string, small bool) {
	if rk == nil || d >= len(rk.Devices) || len(rk.Steps) == 0 {
		return nil, false
	}
	rd := &rk.Devices[d]
	n := time.Duration(len(rk.Steps))
	waitShare := frac(rd.Wait, rd.Wait+rd.Transfer)
	f.Evidence = append(f.Evidence, ns("wait_ns", rd.Wait/n), ns("transfer_ns", rd.Transfer/n), share("wait_share", waitShare))
	*claim = append(*claim, fmt.Sprintf("matched calls: %s/step waiting for the last rank (%s), %s/step transfer", dur(rd.Wait/n),
		pct(waitShare), dur(rd.Transfer/n)))
	var perCall string
	if rd.CollectivesMatched > 0 {
		pc := rd.Transfer / time.Duration(rd.CollectivesMatched)
		f.Evidence = append(f.Evidence, ns("transfer_per_call_ns", pc))
		perCall = fmt.Sprintf("transfer %s per call", dur(pc))
		small = pc < CommSmallTransfer
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
			matched := len(rk.Calls)
			f.Evidence = append(f.Evidence, cnt("late_rank", float64(ld.Device)), ns("wait_for_late_rank_ns", most/n),
				cnt("late_rank_last_arrivals", float64(ld.LastArrivals)), cnt("matched_calls", float64(matched)))
			*claim = append(*claim, fmt.Sprintf("rank %d arrived last at %d of %d matched calls and this rank waited %s/step for it",
				ld.Device, ld.LastArrivals, matched, dur(most/n)))
			tips = append(tips, fmt.Sprintf("the time is spent waiting for rank %d, not transferring: find out why rank %d "+
				"arrives late (its own findings: a launch-bound or busier rank; CPU affinity, the GIL, a slower host thread) "+
				"and make the ranks arrive together (CUDA graphs on every rank)", ld.Device, ld.Device))
		}
	}
	if perCall != "" {
		*claim = append(*claim, perCall)
	}
	return tips, small
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
