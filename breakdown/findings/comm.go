package findings

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds the communication rule (rules.go the others): the time in collectives,
// each rank's wait and transfer, and the advice that reads the NCCL knobs.

// communication: allreduce and collective kernels hold at least CommShare of the step.
// With a rank view, the matched calls split into waiting for the last rank and transfer.
func communication(r *breakdown.Report, d int, knobs map[string]string) *Finding {
	dr := &r.Devices[d]
	sm := &dr.Summary
	ar, coll := perStep(sm, kernelclass.AllReduce), perStep(sm, kernelclass.Collective)
	stake := ar + coll
	if !material(stake, sm.Mean) {
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
	tips, small, waiting := commRanks(f, &claim, r.Ranks, d)
	if !material(f.AtStake, sm.Mean) {
		return nil // what is left at stake without an immaterial wait
	}
	if len(tips) == 0 && !waiting {
		tips = append(tips, "the transfer itself is the cost: overlap communication with compute, or reduce what is communicated")
	}
	if small && !waiting {
		tips = append(tips, "transfers are small (latency-bound): try "+protoTip(knobs)+customAllReduce(StackOf(r))+
			", or fuse the all-reduce with the following RMSNorm")
	}
	if kn := commKnobs(knobs); kn != "" {
		f.Evidence = append(f.Evidence, text("knobs", kn))
		claim = append(claim, "knobs: "+kn) // evidence, not advice: the suggestion names only knobs to change
	}
	f.Claim = strings.Join(claim, "; ")
	f.Suggestion = strings.Join(tips, "; ")
	return f
}

// commRanks adds the rank view's evidence to the communication finding f of device d and
// its clauses to claim: waiting and transfer time of the matched calls, the transfer per
// call, and the rank this one waits for when waiting is most of it. It returns the tips
// that follow, whether the transfers are small, and whether waiting is most of the time
// (then protocol and algorithm tips do not apply: the transfer is not the cost).
func commRanks(f *Finding, claim *[]string, rk *breakdown.RankReport, d int) (tips []string, small, waiting bool) {
	if rk == nil || d >= len(rk.Devices) || len(rk.Steps) == 0 {
		return nil, false, false
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
	waiting = waitShare >= CommWaitShare
	if waiting {
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
			if material(most/n, rd.MedianStep) {
				tips = append(tips, fmt.Sprintf("the time is spent waiting for rank %d, not transferring: find out why rank %d "+
					"arrives late (its own findings: a launch-bound or busier rank; CPU affinity, the GIL, a slower host thread) "+
					"and make the ranks arrive together (CUDA graphs on every rank)", ld.Device, ld.Device))
			} else {
				// A wait under what makes it material is not a finding: the ranks are
				// balanced and the wait is not at stake; the rest (the transfer) is, when
				// it is material itself (communication checks).
				f.AtStake -= min(f.AtStake, rd.Wait/n)
				f.Evidence = append(f.Evidence, ns("immaterial_wait_ns", rd.Wait/n))
				tips = append(tips, fmt.Sprintf("most of the time is waiting, but the wait for rank %d (%s/step, %s of the step) is "+
					"under what makes a wait material (%s of the step and %s, both): the ranks are balanced and the wait is not "+
					"at stake; the collectives' own cost is their number: fewer, larger collectives (fusion)",
					ld.Device, dur(most/n), pct(frac(most/n, rd.MedianStep)), pct(MaterialShare), dur(MaterialWait)))
			}
		}
	}
	if perCall != "" {
		*claim = append(*claim, perCall)
	}
	return tips, small, waiting
}

// protoTip suggests the NCCL protocol for small (latency-bound) transfers: LL, NCCL's
// low-latency protocol for small messages (LL128 and Simple are for larger ones).
// "NCCL_PROTO=LL (NCCL picks it by size; forcing it rules out the others), " when
// NCCL_PROTO is unset, "NCCL_PROTO=LL (the run has NCCL_PROTO=Simple), " when the run's
// value excludes LL, "" when it already allows LL. Advice never names a knob at the value
// the run has.
func protoTip(knobs map[string]string) string {
	v, set := knobs["NCCL_PROTO"]
	switch {
	case !set:
		return "NCCL_PROTO=LL (the protocol for small messages; NCCL picks by size when unset), "
	case protoAllowed(v, "LL"):
		return ""
	}
	return "NCCL_PROTO=LL (the protocol for small messages; the run has NCCL_PROTO=" + v + "), "
}

// protoAllowed reports whether the NCCL_PROTO value v (a comma list, or "^" and the
// protocols it excludes) lets NCCL use protocol p.
func protoAllowed(v, p string) bool {
	v = strings.TrimSpace(v)
	exclude := strings.HasPrefix(v, "^")
	in := false
	for _, x := range strings.Split(strings.TrimPrefix(v, "^"), ",") {
		if strings.EqualFold(strings.TrimSpace(x), p) {
			in = true
		}
	}
	return in != exclude
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
