package render

import (
	"fmt"
	"math"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
)

// Findings returns the findings of device di of r (breakdown.Findings), with the run's
// recorded knobs (Report.Config) for the rules that cite them, names and values clipped
// (ClipValue): every device's findings quote them, and JSON keeps the whole values once,
// in "config".
func Findings(r *breakdown.Report, di int) []breakdown.Finding {
	var knobs map[string]string
	if len(r.Config) > 0 {
		knobs = make(map[string]string, len(r.Config))
		for _, v := range r.Config {
			knobs[ClipValue(v.Name)] = ClipValue(v.Value)
		}
	}
	return breakdown.Findings(r, di, breakdown.FindingOptions{Knobs: knobs})
}

// findingsJSON converts findings to the JSON contract: evidence in raw units (ns as
// integers, shares as fractions, counts per step).
func findingsJSON(fs []breakdown.Finding) []FindingJSON {
	out := make([]FindingJSON, 0, len(fs))
	for _, f := range fs {
		ev := map[string]any{}
		for _, e := range f.Evidence {
			switch e.Unit {
			case breakdown.UnitNS:
				ev[e.Key] = int64(math.Round(e.N))
			case breakdown.UnitShare:
				ev[e.Key] = round6(e.N)
			case breakdown.UnitText:
				ev[e.Key] = e.Text
			default:
				ev[e.Key] = round3(e.N)
			}
		}
		out = append(out, FindingJSON{ID: f.ID, Severity: f.Severity.String(), NSPerStep: int64(f.AtStake),
			StepNS: int64(f.Step), Evidence: ev, Suggestion: FindingSuggestion(&f)})
	}
	return out
}

// FindingHeadline is a finding's first line: id, severity and the time at stake, e.g.
// "launch_bound [high]: 1.779ms of a 2.200ms step (80.9%)".
func FindingHeadline(f *breakdown.Finding) string {
	return fmt.Sprintf("%s [%s]: %s of a %s step (%s) at stake", f.ID, f.Severity, Duration(int64(f.AtStake)),
		Duration(int64(f.Step)), Percent(frac(int64(f.AtStake), int64(f.Step))))
}

// FindingClaim states a finding's evidence in one sentence.
func FindingClaim(f *breakdown.Finding) string {
	n := func(k string) float64 { e, _ := f.Fact(k); return e.N }
	d := func(k string) string { return Duration(int64(n(k))) }
	has := func(k string) bool { _, ok := f.Fact(k); return ok }
	switch f.ID {
	case breakdown.FindLaunchBound:
		return fmt.Sprintf("the GPU is idle %s/step (%s of the step) in %.1f gaps/step (%.1f under 10µs, %.1f of 10-100µs, %.1f over 100µs) "+
			"while the host launches (%s) or runs no CUDA call (%s); %.1f host launches for %.1f kernels/step; busy time %s/step: up to %.1fx faster",
			d("idle_ns"), Percent(n("idle_share")), n("gaps_per_step"), n("gaps_under_10us_per_step"), n("gaps_10_100us_per_step"),
			n("gaps_over_100us_per_step"), d("host_launching_ns"), d("host_no_cuda_call_ns"), n("launches_per_step"),
			n("kernels_per_step"), d("busy_ns"), n("possible_speedup"))
	case breakdown.FindCommunication:
		s := fmt.Sprintf("allreduce %s + collective %s per step = %s of the step, %.1f calls/step", d("allreduce_ns"),
			d("collective_ns"), Percent(n("comm_share")), n("calls_per_step"))
		if has("wait_ns") {
			s += fmt.Sprintf("; matched calls: %s/step waiting for the last rank (%s), %s/step transfer", d("wait_ns"),
				Percent(n("wait_share")), d("transfer_ns"))
		}
		if has("late_rank") {
			s += fmt.Sprintf("; rank %d arrived last at %d of %d matched calls and this rank waited %s/step for it",
				int(n("late_rank")), int(n("late_rank_last_arrivals")), int(n("matched_calls")), d("wait_for_late_rank_ns"))
		}
		if has("transfer_per_call_ns") {
			s += fmt.Sprintf("; transfer %s per call", d("transfer_per_call_ns"))
		}
		if e, ok := f.Fact("knobs"); ok {
			s += "; knobs: " + e.Text
		}
		return s
	case breakdown.FindKernelStorm:
		return fmt.Sprintf("%.1f of %.1f kernels/step run under 5µs, %s/step together; %.1f gaps under 10µs/step between them (%s/step)",
			n("short_kernels_per_step"), n("kernels_per_step"), d("short_kernels_ns"), n("gaps_under_10us_per_step"), d("gaps_under_10us_ns"))
	case breakdown.FindHostSync:
		return fmt.Sprintf("in idle gaps of 10µs or more, the GPU is idle %s/step while the host synchronizes and %s/step while it copies "+
			"(in all gaps, shorter ones between kernels included: %s and %s); %.1f memory operations/step on the GPU (%s/step)",
			d("idle_host_synchronizing_long_gaps_ns"), d("idle_host_copying_long_gaps_ns"), d("idle_host_synchronizing_ns"),
			d("idle_host_copying_ns"), n("memory_ops_per_step"), d("memory_ns"))
	case breakdown.FindMoERouting:
		s := fmt.Sprintf("MoE routing takes %s/step, %s of the step's busy time %s", d("routing_ns"), Percent(n("routing_of_busy")), d("busy_ns"))
		if n("expert_ns") > 0 {
			s += fmt.Sprintf(", against %s/step of expert kernels (%s of MoE time)", d("expert_ns"), Percent(n("routing_of_moe")))
		} else {
			s += " (no kernel is classified moe_expert)"
		}
		return s + fmt.Sprintf("; %.1f routing kernels/step", n("routing_kernels_per_step"))
	case breakdown.FindFarFromSOL:
		return fmt.Sprintf("the median step %s is %.1fx its speed-of-light floor %s (efficiency %s)", d("median_step_ns"),
			n("ratio"), d("floor_ns"), Percent(n("efficiency")))
	case breakdown.FindCoverage:
		m, _ := f.Fact("step_method")
		var parts []string
		if n("other_ns") > 0 {
			parts = append(parts, fmt.Sprintf("%s/step (%s of the step) is unnamed work: %s in other (unclassified kernels), %s in untraced_graph (graphs traced at graph level)",
				d("other_ns"), Percent(n("other_share")), d("unclassified_ns"), d("untraced_graph_ns")))
		}
		parts = append(parts, "steps found by "+m.Text)
		return strings.Join(parts, "; ")
	}
	var parts []string
	for _, e := range f.Evidence {
		parts = append(parts, e.Key+"="+fmt.Sprint(e.N))
	}
	return strings.Join(parts, ", ")
}

// textFindings writes a device's findings under its summary.
func textFindings(ew *errWriter, fs []breakdown.Finding) {
	if len(fs) == 0 {
		ew.printf("Findings: none (no rule of README \"Findings\" holds)\n")
		return
	}
	ew.printf("Findings (means per step, most time at stake first):\n")
	for i := range fs {
		f := &fs[i]
		ew.printf("  %d. %s\n", i+1, FindingHeadline(f))
		ew.printf("     %s\n", FindingClaim(f))
		ew.printf("     try: %s\n", FindingSuggestion(f))
	}
}

// FindingSuggestion is the finding's suggestion, with the stepstat flags that act on it
// (breakdown words suggestions without this front end's flags).
func FindingSuggestion(f *breakdown.Finding) string {
	if f.ID == breakdown.FindCoverage {
		return f.Suggestion + " (stepstat: --rules FILE, --nvtx-category REGEX=CATEGORY, --steps nvtx:REGEX)"
	}
	return f.Suggestion
}
