package render

import (
	"fmt"
	"math"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// meanDelta is the change of the mean per step, "-" when the row is not comparable.
func meanDelta(r *compare.Row) string {
	if r.NotComparable != "" {
		return "-"
	}
	return signedDuration(r.Mean.Delta)
}

// meanRange is the half-width of a mean change's interval, "" without a test.
func meanRange(c *compare.Comparison, r *compare.Row) string {
	if !c.Tested || !r.Mean.Tested || r.NotComparable != "" {
		return ""
	}
	return "± " + breakdown.FormatDurationF(halfWidth(&r.Mean))
}

// meanVerdict is the change of the mean in percent when significant, "~" when not, "?"
// without a test, "n/c" when not comparable.
func meanVerdict(c *compare.Comparison, r *compare.Row) string {
	switch {
	case r.NotComparable != "":
		return "n/c"
	case !c.Tested || !r.Mean.Tested:
		return "?"
	case !r.Mean.Significant:
		return "~"
	}
	return meanPct(&r.Mean)
}

func meanPN(c *compare.Comparison, r *compare.Row) string {
	switch {
	case r.NotComparable != "":
		return "(not comparable)"
	case !c.Tested || !r.Mean.Tested:
		return fmt.Sprintf("(no test: n=%s)", meanN(&r.Mean))
	}
	return fmt.Sprintf("(p=%.3f n=%s)", r.Mean.P, meanN(&r.Mean))
}

// diffTopWarnings returns what the comparison warns about first: every capture-quality and
// self-check warning of either side's runs (labelled with the side, and the runs when not
// all), then the comparison's own, without repeats.
func diffTopWarnings(c *compare.Comparison) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, s := range []*compare.SideSummary{&c.Base, &c.New} {
		for _, w := range s.Warnings {
			who := s.Label
			if len(s.Paths) > 1 {
				if len(w.Runs) == len(s.Paths) {
					who += fmt.Sprintf(" (all %d runs)", len(s.Paths))
				} else {
					var names []string
					for _, r := range w.Runs {
						names = append(names, s.Paths[r])
					}
					who += " (" + strings.Join(names, ", ") + ")"
				}
			}
			add(who + ": " + w.Text)
		}
	}
	for _, w := range c.Warnings {
		add(w.Error())
	}
	return out
}

// diffRowWarnings returns the warnings of the tests of the median table's rows, each once.
func diffRowWarnings(c *compare.Comparison) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range append([]compare.Row{c.Step}, c.Categories...) {
		for _, w := range r.Warnings {
			if s := w.Error(); !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// diffWarnings is every warning of the comparison: the untested notice, the captures' and
// the comparison's, then the rows'.
func diffWarnings(c *compare.Comparison) []string {
	var out []string
	if c.Untested != "" {
		out = append(out, c.Untested)
	}
	return append(append(out, diffTopWarnings(c)...), diffRowWarnings(c)...)
}

// pctRange formats a confidence interval as "± x%" of its center, like benchstat.
func pctRange(s compare.Stat) string {
	if s.N == 0 {
		return ""
	}
	if s.Center == 0 {
		if s.Lo == 0 && s.Hi == 0 {
			return "± 0%"
		}
		return "± ∞"
	}
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return "± ∞"
	}
	v := math.Max(s.Hi/s.Center-1, 1-s.Lo/s.Center)
	return fmt.Sprintf("± %.0f%%", 100*v)
}

func rowDelta(r *compare.Row) string {
	switch {
	case r.NotComparable != "":
		return "n/c"
	case r.Base.N == 0 || r.New.N == 0:
		return "?"
	case !r.Mean.Tested:
		if math.IsNaN(r.DeltaPct) {
			return "?"
		}
		return fmt.Sprintf("%+.2f%%?", r.DeltaPct)
	case !r.Significant:
		return "~"
	case math.IsNaN(r.DeltaPct):
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", r.DeltaPct)
}

func rowPN(r *compare.Row) string {
	n := fmt.Sprintf("n=%d", r.Base.N)
	if r.Base.N != r.New.N {
		n = fmt.Sprintf("n=%d+%d", r.Base.N, r.New.N)
	}
	switch {
	case r.NotComparable != "":
		return fmt.Sprintf("(not comparable %s)", n)
	case !r.Mean.Tested && r.Base.N > 0 && r.New.N > 0:
		return fmt.Sprintf("(no test %s)", n)
	}
	return fmt.Sprintf("(p=%.3f %s)", r.P, n)
}

// diffCaveat explains what the p-values mean, and recommends runs per side only where
// there are enough of them for the test.
func diffCaveat(c *compare.Comparison) string {
	need := compare.SamplesNeeded(c.Options.Alpha)
	runs := min(len(c.Base.Paths), len(c.New.Paths))
	if c.Options.PerRun {
		if !c.Tested {
			return fmt.Sprintf("with one sample per run, the test needs at least %d runs a side (here %d and %d): capture the same workload %d or more times per side, or compare per step (--unit step, the default) and read the effect size.",
				need, len(c.Base.Paths), len(c.New.Paths), need)
		}
		return "one sample per run: runs are independent, so the verdicts hold across runs; the change shown is of the mean per step over all steps, the test is over the runs' means."
	}
	s := "consecutive steps of one run are not independent samples (step time drifts with KV-cache length and batch makeup), " +
		"so with many steps small shifts test as significant; read the change per step (--min-change sets the smallest that gets a verdict)"
	if runs >= need {
		return s + fmt.Sprintf(", and with %d runs a side, test across runs with --unit run.", runs)
	}
	return s + fmt.Sprintf("; to test across runs, capture the same workload %d or more times per side and use --unit run.", need)
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

// sideNames returns the labels of the two sides, told apart when they are equal (the
// charts' legends merge series of the same name).
func sideNames(c *compare.Comparison) (string, string) {
	bl, nl := c.Base.Label, c.New.Label
	if bl == nl {
		return "base " + bl, "new " + nl
	}
	return bl, nl
}

// meanWords says the change of the mean of a row in the lead line.
func meanWords(c *compare.Comparison, r *compare.Row) string {
	switch v := meanVerdict(c, r); v {
	case "~":
		return "no significant change"
	case "?":
		return "not tested: " + meanPct(&r.Mean)
	case "n/c":
		return "not comparable"
	default:
		return v
	}
}

// ranked reports whether a side's runs have two or more devices with steps of the phase:
// its samples are aligned steps.
func ranked(c *compare.Comparison) bool { return len(c.Base.AlignedBy)+len(c.New.AlignedBy) > 0 }

// sampleWords says what one sample of the step is: "step", or with several ranks "aligned
// step: the step's wall on the slowest of the ranks (they run in lock step), ranks not
// pooled; per-rank rows below" and how the steps were aligned.
func sampleWords(c *compare.Comparison) string {
	if !ranked(c) {
		return "step"
	}
	how := map[string]bool{}
	var hs []string
	for _, h := range append(append([]string{}, c.Base.AlignedBy...), c.New.AlignedBy...) {
		if !how[h] {
			how[h] = true
			hs = append(hs, h)
		}
	}
	return fmt.Sprintf("aligned step (ranks aligned by %s): the step on the slowest rank, as ranks run in lock step; ranks are not pooled (n = aligned steps), each rank has its rows below", strings.Join(hs, "; "))
}
