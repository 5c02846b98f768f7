package render

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// diffMeans prints the mean per step of each category on both sides and its change with
// the permutation test's interval and verdict: the rows add up to the mean step
// (Summary's rounding).
func diffMeans(ew *errWriter, c *compare.Comparison, bl, nl string, nameW int) {
	ew.printf("\nMeans per %s step (the rows add up to the mean step; each change tested by a permutation test, ± its %g%% interval):\n", c.Phase, 100*c.Options.Confidence)
	ew.printf(tableRow+"%-*s %12s %12s %14s %10s %8s\n", nameW, "", bl, nl, "change/step", "±", "vs base")
	line := func(name string, r *compare.Row) {
		m := &r.Mean
		ew.printf(tableRow+"%-*s %12s %12s %14s %10s %8s %s\n", nameW, name, breakdown.FormatDurationF(m.Base), breakdown.FormatDurationF(m.New),
			meanDelta(r), meanRange(c, r), meanVerdict(c, r), meanPN(c, r))
	}
	for i, cat := range kernelclass.Order {
		r := &c.Categories[i]
		if c.Base.Means[cat] == 0 && c.New.Means[cat] == 0 {
			continue
		}
		line(cat.String(), r)
	}
	line("mean step", &c.Step)
}

// DiffText writes the comparison in benchstat's layout, then counts, NCCL kernels and
// kernel changes, then numbered warnings. The answer (the rounds warning, each side's
// step and the verdict) and the rest are wrapped to width (0: DefaultTextWidth), table rows kept.
func DiffText(w io.Writer, c *compare.Comparison, width int) error {
	var answer, details strings.Builder
	hw, ew := &errWriter{w: &answer}, &errWriter{w: &details}
	bl, nl := TerminalSafe(c.Base.Label), TerminalSafe(c.New.Label)
	diffTextAnswer(hw, c)
	diffTextLead(ew, c)
	diffStory(ew, c, bl, nl)
	nameW := diffMedians(ew, c, bl, nl)
	diffMeans(ew, c, bl, nl, nameW)
	diffTextCounts(ew, c, bl, nl)
	diffTextChanges(ew, c, bl, nl)
	ew.printf("\nNote: %s\n", diffCaveat(c))
	if ws := diffRowWarnings(c); len(ws) > 0 {
		ew.printf("\nNotes on the medians' tests:\n")
		for i, w := range ws {
			ew.printf("  %d. %s\n", i+1, TerminalSafe(w))
		}
	}
	if err := errors.Join(hw.err, ew.err); err != nil {
		return err
	}
	_, err := io.WriteString(w, wrapText(answer.String(), textWidth(width))+wrapText(details.String(), textWidth(width)))
	return err
}

// diffTextAnswer writes the answer the text leads with: the rounds warning, each side's
// step, the verdict per token where both sides know their tokens, and the verdict on the
// step time.
func diffTextAnswer(hw *errWriter, c *compare.Comparison) {
	for _, l := range diffLead(c) {
		hw.printf("%s\n", TerminalSafe(l))
	}
	for _, l := range diffHeadlines(c) { // the answer first (headline.go)
		hw.printf("%s\n", TerminalSafe(l))
	}
	if v := tokenVerdict(c); v != "" {
		hw.printf("%s\n", v)
	}
	hw.printf("%s\n", diffVerdict(c))
}

// diffTextLead writes what follows the answer: the sides and the sample, then what keeps
// a row from a verdict, the captures' warnings and the knobs that changed.
func diffTextLead(ew *errWriter, c *compare.Comparison) {
	ew.printf("\n")
	unit := sampleWords(c)
	if c.Options.PerRun {
		unit = "run (each run's median per step for the medians, its mean per step for the means)"
		if ranked(c) {
			unit += " over its aligned steps (each the step on the slowest rank)"
		}
	}
	ew.printf("base: %s  (%s)\nnew:  %s  (%s)\n%s steps; one sample per %s\n\n", TerminalSafe(c.Base.Label), TerminalSafe(strings.Join(c.Base.Paths, ", ")),
		TerminalSafe(c.New.Label), TerminalSafe(strings.Join(c.New.Paths, ", ")), c.Phase, unit)
	if c.Untested != "" { // first: no verdict follows
		ew.printf("Cannot test: %s.\n\n", TerminalSafe(strings.TrimPrefix(c.Untested, "cannot test: ")))
	}
	if nc := c.NotComparableRows(); len(nc) > 0 {
		ew.printf("Not comparable (a side cannot measure these; no verdict and no change shown):\n")
		for _, g := range nc {
			ew.printf("  %s: %s\n", strings.Join(g.Rows, ", "), TerminalSafe(g.Reason))
		}
		for _, rk := range c.Ranks {
			if rk.NotComparable != "" {
				ew.printf("  rank %d: %s\n", rk.Rank, TerminalSafe(rk.NotComparable))
			}
		}
		ew.printf("\n")
	} else {
		for _, rk := range c.Ranks {
			if rk.NotComparable != "" {
				ew.printf("Not comparable: rank %d: %s\n\n", rk.Rank, TerminalSafe(rk.NotComparable))
			}
		}
	}
	if ws := diffTopWarnings(c); len(ws) > 0 {
		ew.printf("Warnings (the captures' own, then the comparison's):\n")
		for i, w := range ws {
			ew.printf("  %d. %s\n", i+1, TerminalSafe(w))
		}
		ew.printf("\n")
	}
	if len(c.Config) > 0 { // what changed comes first: the knobs
		ew.printf("Run configuration changed (recorded environment, allow-listed knobs):\n")
		for _, ch := range c.Config {
			ew.printf("  %s\n", TerminalSafe(configChangeText(ch)))
		}
		ew.printf("\n")
	}
}

// diffMedians writes benchstat's table: each row's median per step on each side, the
// change and the test; it returns the width of the name column.
func diffMedians(ew *errWriter, c *compare.Comparison, bl, nl string) int {
	const colW = 16
	var rows []compare.Row
	nameW := 12 // wider only when a longer id (untraced_graph) is shown
	for _, r := range append(append([]compare.Row{}, c.Categories...), c.Step) {
		if !r.Whole && r.Base.Center == 0 && r.New.Center == 0 && r.Mean.Base == 0 && r.Mean.New == 0 && r.Base.N > 0 {
			continue // a category neither side has
		}
		rows = append(rows, r)
		nameW = max(nameW, len(r.Name))
	}
	ew.printf("Medians per %s step, each row its own samples and test (medians do not add up; the means below do):\n", c.Phase)
	ew.printf(tableRow+"%-*s │%s│%s│\n", nameW, "", center(bl, colW+1), center(nl, colW+26))
	ew.printf(tableRow+"%-*s │%s│%s│\n", nameW, "", center("time/step", colW+1), center("time/step    vs base", colW+26))
	for i := range rows {
		r := &rows[i]
		ew.printf(tableRow+"%-*s  %9s %-6s  %9s %-6s %9s %s\n", nameW, r.Name, breakdown.FormatDuration(int64(r.Base.Center)), pctRange(r.Base),
			breakdown.FormatDuration(int64(r.New.Center)), pctRange(r.New), rowDelta(r), rowPN(r))
	}
	return nameW
}

// diffTextCounts writes the counts per step of each side and their NCCL kernels.
func diffTextCounts(ew *errWriter, c *compare.Comparison, bl, nl string) {
	ew.printf("\n%-22s %12s %12s\n", "", bl, nl)
	ew.printf(tableRow+"%-22s %12d %12d\n", c.Phase.String()+" steps", c.Base.Steps, c.New.Steps)
	ew.printf(tableRow+"%-22s %12.1f %12.1f\n", "host launches/step", c.Base.LaunchesPerStep, c.New.LaunchesPerStep)
	ew.printf(tableRow+"%-22s %12.1f %12.1f\n", "kernels/step", c.Base.KernelsPerStep, c.New.KernelsPerStep)
	ew.printf(tableRow+"%-22s %12.1f %12.1f\n", "idle gaps/step", c.Base.GapsPerStep, c.New.GapsPerStep)
	ew.printf(tableRow+"%-22s %12s %12s\n", "step method", strings.Join(c.Base.Methods, "+"), strings.Join(c.New.Methods, "+"))
	if len(c.Base.NCCL)+len(c.New.NCCL) > 0 {
		ew.printf("\nNCCL kernels:\n%-6s %-14s %-10s %-7s %-6s %8s %10s\n", "side", "op", "algo", "proto", "dtype", "count", "total")
		for _, s := range []struct {
			label string
			n     []compare.NCCLCount
		}{{bl, c.Base.NCCL}, {nl, c.New.NCCL}} {
			for _, n := range s.n {
				ew.printf(tableRow+"%-6s %-14s %-10s %-7s %-6s %8d %10s\n", s.label, orDefault(n.Op, "-"), orDefault(n.Algo, "-"),
					orDefault(n.Proto, "-"), orDefault(n.DType, "-"), n.Count, breakdown.FormatDuration(int64(n.Total)))
			}
		}
		for _, s := range []struct {
			label string
			ss    *compare.SideSummary
		}{{bl, &c.Base}, {nl, &c.New}} {
			if n := ncclProtoNote(s.ss.Config, sideProtos(s.ss)); n != "" {
				ew.printf("  %s: %s\n", s.label, TerminalSafe(n))
			}
		}
	}
}

// diffTextChanges writes the kernel families that appeared, vanished or changed variant.
func diffTextChanges(ew *errWriter, c *compare.Comparison, bl, nl string) {
	changes := func(title string, cs []compare.KernelChange, total func(k compare.KernelChange) (int, int64)) {
		if len(cs) == 0 {
			return
		}
		ew.printf("\n%s:\n", title)
		var names []string
		for _, k := range cs[:min(len(cs), 10)] {
			names = append(names, TerminalSafe(k.Family))
		}
		names = elideNames(names, MaxTextLine-34) // the row's numbers take 34
		for i, k := range cs {
			if i == 10 {
				ew.printf("  ... and %d more (see --format json)\n", len(cs)-10)
				break
			}
			n, t := total(k)
			ew.printf(tableRow+"  %-12s %6d %10s  %s\n", k.Category, n, breakdown.FormatDuration(t), names[i])
		}
	}
	changes("Kernels only in "+nl, c.Appeared, func(k compare.KernelChange) (int, int64) { return k.NewCount, int64(k.NewTotal) })
	changes("Kernels only in "+bl, c.Vanished, func(k compare.KernelChange) (int, int64) { return k.BaseCount, int64(k.BaseTotal) })
	if len(c.Variants) > 0 {
		ew.printf("\nChanged variants (same kernel family, other tile or template choice):\n")
		for i, k := range c.Variants {
			if i == 10 {
				ew.printf("  ... and %d more (see --format json)\n", len(c.Variants)-10)
				break
			}
			ew.printf("  %-12s %s (%d -> %d names)\n    only in %s: %s\n    only in %s: %s\n", k.Category, elideNames([]string{TerminalSafe(k.Family)}, MaxTextLine-40)[0], len(k.BaseNames), len(k.NewNames),
				bl, variantNames(k.BaseNames, k.NewNames), nl, variantNames(k.NewNames, k.BaseNames))
		}
	}
}

// maxVariantNames is how many names of a changed variant the text lists per side.
const maxVariantNames = 3

// variantNames lists the names of a kernel family on one side that the other side lacks,
// elided as in the kernel tables (elideNames) together with those the other side alone
// has, so that a name only in one side never reads as one only in the other; at most
// maxVariantNames, then how many more; "none" when there are none.
func variantNames(names, other []string) string {
	onlyIn := func(a, b []string) []string {
		var only []string
		for _, n := range a {
			if !slices.Contains(b, n) {
				only = append(only, n)
			}
		}
		return only
	}
	only, otherOnly := onlyIn(names, other), onlyIn(other, names)
	if len(only) == 0 {
		return "none"
	}
	var out []string
	var safe []string
	shown := min(len(only), maxVariantNames)
	for _, n := range only[:shown] {
		safe = append(safe, TerminalSafe(n))
	}
	for _, n := range otherOnly[:min(len(otherOnly), maxVariantNames)] {
		safe = append(safe, TerminalSafe(n))
	}
	safe = elideNames(safe, MaxTextLine-20)[:shown] // one name a line once wrapped, told apart from both sides
	for i := range only {
		if i == maxVariantNames {
			out = append(out, fmt.Sprintf("and %d more (see --format json)", len(only)-i))
			break
		}
		out = append(out, safe[i])
	}
	return strings.Join(out, "; ")
}

func center(s string, w int) string {
	n := len([]rune(s))
	if n >= w {
		return " " + s + " "
	}
	l := (w - n) / 2
	return strings.Repeat(" ", l) + s + strings.Repeat(" ", w-n-l)
}

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
		if !it.Row.Whole {
			changed++
		}
		for _, l := range it.Ranks {
			ew.printf("    %s\n", storyLine(c, l.Row, fmt.Sprintf("%-*s", nameW-2, fmt.Sprintf("rank %d", l.Rank))))
		}
		if it.Row.Why != "" {
			ew.printf("    why: %s\n", it.Row.Why)
		}
		if n := pooledNote(c, it.Row); n != "" {
			ew.printf("    note: %s\n", n)
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

// diffRankWait writes, for 2+ GPUs, each rank's wait and transfer in matched collectives
// per step on both sides, the times it arrived last, and the straggler before and after.
func diffRankWait(ew *errWriter, c *compare.Comparison) {
	if len(c.Ranks) == 0 || (c.Base.Ranks == nil && c.New.Ranks == nil) {
		return
	}
	ew.printf("  ranks, wait vs transfer in matched collectives per aligned step (wait + transfer = the rank's matched allreduce + collective time):\n")
	ew.printf(tableRow+"  %4s %24s %24s %24s\n", "rank", "wait/step", "transfer/step", "times last")
	for _, rk := range c.Ranks {
		ew.printf(tableRow+"  %4d %24s %24s %24s\n", rk.Rank, rankTimeText(rk.Base, true)+" -> "+rankTimeText(rk.New, true),
			rankTimeText(rk.Base, false)+" -> "+rankTimeText(rk.New, false), lastText(rk.Base)+" -> "+lastText(rk.New))
	}
	ew.printf("  straggler: %s -> %s\n", stragglerWords(c.Base.Ranks), stragglerWords(c.New.Ranks))
}

// pooledNote explains a pooled category row whose mean lies outside every rank's own on a
// side: the pooled sample of an aligned step is its slowest rank's step, so a category that
// the slowest rank spends less in (an all-reduce the late rank does not wait in) comes out
// under both ranks' means. "" when the pooled means lie within the ranks' or there are no
// ranks.
func pooledNote(c *compare.Comparison, r *compare.Row) string {
	if r.Whole || len(c.Ranks) < 2 {
		return ""
	}
	var parts []string
	for _, side := range []struct {
		label  string
		pooled float64
		means  func(rk *compare.RankComparison) time.Duration
	}{
		{c.Base.Label, r.Mean.Base, func(rk *compare.RankComparison) time.Duration { return rk.BaseMeans[r.Category] }},
		{c.New.Label, r.Mean.New, func(rk *compare.RankComparison) time.Duration { return rk.NewMeans[r.Category] }},
	} {
		lo, hi, n := math.Inf(1), math.Inf(-1), 0
		var own []string
		for i := range c.Ranks {
			rk := &c.Ranks[i]
			if rk.NotComparable != "" {
				continue
			}
			m := float64(side.means(rk))
			lo, hi, n = math.Min(lo, m), math.Max(hi, m), n+1
			own = append(own, fmt.Sprintf("rank %d %s", rk.Rank, breakdown.FormatDurationF(m)))
		}
		if n < 2 {
			continue
		}
		where := ""
		switch {
		case side.pooled < lo-0.5:
			where = "under"
		case side.pooled > hi+0.5:
			where = "over"
		default:
			continue
		}
		parts = append(parts, fmt.Sprintf("on %s the pooled %s (%s) is %s every rank's own (%s)", TerminalSafe(side.label), r.Name,
			breakdown.FormatDurationF(side.pooled), where, strings.Join(own, ", ")))
	}
	if len(parts) == 0 {
		return ""
	}
	why := "a pooled sample is each aligned step's slowest rank, whose " + r.Name + " is not the ranks' mean"
	if r.Category == kernelclass.AllReduce || r.Category == kernelclass.Collective {
		why += " (the late rank waits least in collectives)"
	}
	return strings.Join(parts, "; ") + ": " + why
}
