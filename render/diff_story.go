package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// diffStory writes what diff leads with: the change of the mean per step of the whole step
// and of each category that changed significantly, biggest first, each with the ranks whose
// change differs from the pooled one and, when the median disagrees, why; the launches and
// kernels per step; the findings that appeared, vanished or changed; and for 2+ GPUs the
// wait and transfer of each rank and the straggler, before and after.
func diffStory(ew *errWriter, c *compare.Comparison, bl, nl string) {
	verdict := fmt.Sprintf("permutation test on the difference of means, ± its %g%% interval; verdict at p < %g and at least %s/step",
		100*c.Options.Confidence, c.Options.Alpha, breakdown.FormatDurationF(c.MinChangeNS))
	if c.Token != nil {
		verdict += fmt.Sprintf(" (%s/token)", breakdown.FormatDurationF(c.TokenMinChangeNS))
	}
	if !c.Tested {
		verdict = "no verdict: too few samples to test"
	}
	ew.printf("What changed (%s -> %s; change of the mean per %s step, which adds up; %s):\n", bl, nl, c.Phase, verdict)
	story := c.Story()
	nameW := 12
	for _, it := range story {
		nameW = max(nameW, len(it.Row.Name))
	}
	if c.Token != nil { // the verdict: per token, before the step (a speculative round)
		ew.printf("  %s\n", strings.Replace(storyLine(c, c.Token, fmt.Sprintf("%-*s", nameW, "per token")), "/step", "/token", 1))
	}
	changed := 0
	for _, it := range story {
		if it.Row.NotComparable == "" {
			ew.printf("  %s\n", storyLine(c, it.Row, fmt.Sprintf("%-*s", nameW, it.Row.Name)))
		} else {
			ew.printf("  %-*s not comparable pooled (see above); per rank:\n", nameW, it.Row.Name)
		}
		if it.Row.Name != "whole step" {
			changed++
		}
		for _, l := range it.Ranks {
			ew.printf("    %s\n", storyLine(c, l.Row, fmt.Sprintf("%-*s", nameW-2, fmt.Sprintf("rank %d", l.Rank))))
		}
		if it.Row.Why != "" {
			ew.printf("    why: %s\n", it.Row.Why)
		}
		for _, l := range it.Ranks {
			if l.Row.Why != "" {
				ew.printf("    why (rank %d): %s\n", l.Rank, l.Row.Why)
			}
		}
	}
	if changed == 0 && c.Tested {
		ew.printf("  %s\n", noChangeLine(c))
	}
	ew.printf("  %s; %s\n", countChange("host launches/step", c.Base.LaunchesPerStep, c.New.LaunchesPerStep),
		countChange("kernels/step", c.Base.KernelsPerStep, c.New.KernelsPerStep))
	for _, f := range c.Findings {
		if f.Change == compare.FindingSame {
			continue
		}
		ew.printf("  finding %s\n", findingChangeText(c, &f))
	}
	diffRankWait(ew, c)
	ew.printf("\n")
}

// noChangeLine says why no category is in the story: none changed enough, or none can be
// compared.
func noChangeLine(c *compare.Comparison) string {
	for i := range c.Categories {
		r := &c.Categories[i]
		if r.NotComparable == "" && (r.Mean.Base != 0 || r.Mean.New != 0) {
			return fmt.Sprintf("no category's mean changed significantly (by at least %s/step)", breakdown.FormatDurationF(c.MinChangeNS))
		}
	}
	return "no category can be compared (see above): only the whole step"
}

// storyLine is one change of the mean: "idle   1.967ms -> 159.9µs   -1.807ms/step ± 61.0µs   -91.87%  (p=0.000 n=12)",
// "~" in place of the percentage when not significant, "no test" when the samples are too few.
func storyLine(c *compare.Comparison, r *compare.Row, name string) string {
	m := &r.Mean
	head := fmt.Sprintf("%s %9s -> %-9s %11s/step", name, breakdown.FormatDurationF(m.Base), breakdown.FormatDurationF(m.New), signedDuration(m.Delta))
	if !m.Tested || !c.Tested {
		return fmt.Sprintf("%s  %s  (no test: n=%s)", head, meanPct(m), meanN(m))
	}
	v := "~"
	if m.Significant {
		v = meanPct(m)
	}
	return fmt.Sprintf("%s ± %-8s %8s  (p=%.3f n=%s)", head, breakdown.FormatDurationF(halfWidth(m)), v, m.P, meanN(m))
}

// meanPct is the change of the mean in percent of the base mean ("+∞%" from zero).
func meanPct(m *compare.MeanChange) string {
	if m.Base == 0 {
		if m.New == 0 {
			return "+0.00%"
		}
		return "new"
	}
	return fmt.Sprintf("%+.2f%%", (m.New/m.Base-1)*100)
}

func meanN(m *compare.MeanChange) string {
	if m.NBase == m.NNew {
		return fmt.Sprint(m.NBase)
	}
	return fmt.Sprintf("%d+%d", m.NBase, m.NNew)
}

func halfWidth(m *compare.MeanChange) float64 { return (m.Hi - m.Lo) / 2 }

// diffRankWait writes, for 2+ GPUs, each rank's wait and transfer in matched collectives
// per step on both sides, the times it arrived last, and the straggler before and after.
func diffRankWait(ew *errWriter, c *compare.Comparison) {
	if len(c.Ranks) == 0 || (c.Base.Ranks == nil && c.New.Ranks == nil) {
		return
	}
	ew.printf("  ranks, wait vs transfer in matched collectives per aligned step (wait + transfer = the rank's matched allreduce + collective time):\n")
	ew.printf("  %4s %24s %24s %24s\n", "rank", "wait/step", "transfer/step", "times last")
	for _, rk := range c.Ranks {
		ew.printf("  %4d %24s %24s %24s\n", rk.Rank, rankTimeText(rk.Base, true)+" -> "+rankTimeText(rk.New, true),
			rankTimeText(rk.Base, false)+" -> "+rankTimeText(rk.New, false), lastText(rk.Base)+" -> "+lastText(rk.New))
	}
	ew.printf("  straggler: %s -> %s\n", stragglerWords(c.Base.Ranks), stragglerWords(c.New.Ranks))
}

// rankTimeText is a rank's wait (or transfer) per step, "-" on a side without matched calls.
func rankTimeText(t compare.RankTime, wait bool) string {
	if t.Calls == 0 {
		return "-"
	}
	if wait {
		return breakdown.FormatDuration(int64(t.Wait))
	}
	return breakdown.FormatDuration(int64(t.Transfer))
}

// lastText is "2 of 108": the matched calls at which a rank arrived last, "-" without any.
func lastText(t compare.RankTime) string {
	if t.Calls == 0 {
		return "-"
	}
	return fmt.Sprintf("%d of %d", t.LastArrivals, t.Calls)
}

// stragglerWords names a side's straggler: "rank 1 (last at 106 of 108, 98.1%)".
func stragglerWords(w *compare.RankWait) string {
	if w == nil || w.Straggler < 0 || w.Calls == 0 {
		return "none (no matched collectives)"
	}
	n := w.LastArrivals[w.Straggler]
	return fmt.Sprintf("rank %d (last at %d of %d, %s)", w.Straggler, n, w.Calls, breakdown.FormatPercent(float64(n)/float64(w.Calls)))
}

func signedDuration(ns float64) string {
	if ns >= 0 {
		return "+" + breakdown.FormatDurationF(ns)
	}
	return breakdown.FormatDurationF(ns)
}

func countChange(name string, b, n float64) string {
	if b == n {
		return fmt.Sprintf("%s %.1f (same)", name, b)
	}
	return fmt.Sprintf("%s %.1f -> %.1f", name, b, n)
}

// findingChangeText describes one finding that appeared, vanished or changed.
func findingChangeText(c *compare.Comparison, f *compare.FindingChange) string {
	where := ""
	if c.Base.Devices > 1 || c.New.Devices > 1 {
		where = fmt.Sprintf(" on rank %d", f.Rank)
	}
	side := func(x *findings.Finding) string {
		return fmt.Sprintf("%s, %s of a %s step", x.Severity, breakdown.FormatDuration(int64(x.AtStake)), breakdown.FormatDuration(int64(x.Step)))
	}
	expected := ""
	if f.Expected {
		expected = fmt.Sprintf("; expected: %s's then named it", c.Base.Label)
	}
	switch f.Change {
	case compare.FindingAppeared:
		return fmt.Sprintf("%s appeared%s (%s)%s", f.ID, where, side(f.New), expected)
	case compare.FindingVanished:
		return fmt.Sprintf("%s vanished%s (was %s)", f.ID, where, side(f.Base))
	}
	return fmt.Sprintf("%s changed%s: %s -> %s%s", f.ID, where, side(f.Base), side(f.New), expected)
}

func findingChangesJSON(fs []compare.FindingChange) []FindingChangeJSON {
	out := []FindingChangeJSON{}
	for _, f := range fs {
		fj := FindingChangeJSON{Rank: f.Rank, ID: f.ID, Change: f.Change, Expected: f.Expected}
		if f.Base != nil {
			fj.Base = &findingsJSON([]findings.Finding{*f.Base})[0]
		}
		if f.New != nil {
			fj.New = &findingsJSON([]findings.Finding{*f.New})[0]
		}
		out = append(out, fj)
	}
	return out
}

func diffRanksJSON(c *compare.Comparison) []DiffRankJSON {
	var out []DiffRankJSON
	means := func(m [kernelclass.NumCategories]time.Duration) map[string]int64 {
		out := map[string]int64{}
		for _, cat := range kernelclass.Order {
			out[cat.String()] = int64(m[cat])
		}
		return out
	}
	for _, r := range c.Ranks {
		rj := DiffRankJSON{Rank: r.Rank, BaseDevice: r.BaseDev, NewDevice: r.NewDev, Step: diffRowJSON(c, &r.Step), Categories: map[string]DiffRowJSON{},
			Comparable: r.NotComparable == "", Reason: r.NotComparable,
			BaseMeanStepNS: int64(r.BaseMeanStep), NewMeanStepNS: int64(r.NewMeanStep), BaseMeanNS: means(r.BaseMeans), NewMeanNS: means(r.NewMeans),
			BaseWaitNS: int64(r.Base.Wait), NewWaitNS: int64(r.New.Wait), BaseTransferNS: int64(r.Base.Transfer), NewTransferNS: int64(r.New.Transfer),
			BaseLastArrivals: r.Base.LastArrivals, NewLastArrivals: r.New.LastArrivals, BaseCalls: r.Base.Calls, NewCalls: r.New.Calls}
		for i := range r.Categories {
			rj.Categories[r.Categories[i].Name] = diffRowJSON(c, &r.Categories[i])
		}
		out = append(out, rj)
	}
	return out
}
