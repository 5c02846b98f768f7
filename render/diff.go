package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
)

func diffRowJSON(c *compare.Comparison, r *compare.Row) DiffRowJSON {
	out := DiffRowJSON{BaseMedianNS: int64(math.Round(r.Base.Center)), NewMedianNS: int64(math.Round(r.New.Center)),
		PValue: round6(r.P), Significant: r.Significant, BaseN: r.Base.N, NewN: r.New.N,
		BaseMeanNS: int64(math.Round(r.Mean.Base)), NewMeanNS: int64(math.Round(r.Mean.New)), MeanChangeNS: int64(math.Round(r.Mean.Delta)),
		MeanSignificant: r.Mean.Significant, Tested: c.Tested && r.Mean.Tested, Comparable: r.NotComparable == "",
		Reason: r.NotComparable, Why: r.Why}
	if !math.IsNaN(r.DeltaPct) {
		d := round3(r.DeltaPct)
		out.DeltaPct = &d
	}
	if out.Tested {
		lo, hi, p := int64(math.Round(r.Mean.Lo)), int64(math.Round(r.Mean.Hi)), round6(r.Mean.P)
		out.MeanChangeLoNS, out.MeanChangeHiNS, out.MeanPValue = &lo, &hi, &p
	}
	return out
}

// diffMeans prints the mean per step of each category on both sides and its change with
// the permutation test's interval and verdict: the rows add up to the mean step
// (Summary's rounding).
func diffMeans(ew *errWriter, c *compare.Comparison, bl, nl string, nameW int) {
	ew.printf("\nMeans per %s step (the rows add up to the mean step; each change tested by a permutation test, ± its %g%% interval):\n", c.Phase, 100*c.Options.Confidence)
	ew.printf("%-*s %12s %12s %14s %10s %8s\n", nameW, "", bl, nl, "change/step", "±", "vs base")
	line := func(name string, r *compare.Row) {
		m := &r.Mean
		ew.printf("%-*s %12s %12s %14s %10s %8s %s\n", nameW, name, breakdown.FormatDurationF(m.Base), breakdown.FormatDurationF(m.New),
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

func sideJSON(s *compare.SideSummary) DiffSideJSON {
	out := DiffSideJSON{Label: s.Label, Path: strings.Join(s.Paths, ","), Paths: s.Paths, DecodeSteps: s.Steps,
		MedianStepNS: int64(s.MedianStep), LaunchesPerStep: round3(s.LaunchesPerStep), KernelsPerStep: round3(s.KernelsPerStep),
		GapsPerStep: round3(s.GapsPerStep), StepMethods: s.Methods, NCCL: []NCCLCountJSON{}, Config: configJSON(s.Config),
		MeanStepNS: int64(s.MeanStep), MeanNS: map[string]int64{}, AlignedBy: s.AlignedBy}
	for _, c := range kernelclass.Order {
		out.MeanNS[c.String()] = int64(s.Means[c])
	}
	for _, n := range s.NCCL {
		out.NCCL = append(out.NCCL, NCCLCountJSON{n.Op, n.Algo, n.Proto, n.DType, n.Count, int64(n.Total), protoSet(s.Config)})
	}
	return out
}

func changesJSON(cs []compare.KernelChange) []KernelChangeJSON {
	out := []KernelChangeJSON{}
	for _, c := range cs {
		out = append(out, KernelChangeJSON{Family: c.Family, Category: c.Category.String(), BaseNames: nonNil(c.BaseNames),
			NewNames: nonNil(c.NewNames), BaseCount: c.BaseCount, NewCount: c.NewCount, BaseNS: int64(c.BaseTotal), NewNS: int64(c.NewTotal)})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// NewDiffJSON builds the JSON contract from a comparison.
func NewDiffJSON(c *compare.Comparison) *DiffJSON {
	unit := "step"
	if c.Options.PerRun {
		unit = "run"
	}
	out := &DiffJSON{Schema: DiffSchema, Phase: c.Phase.String(), Unit: unit, Config: configChangesJSON(c.Config),
		Base: sideJSON(&c.Base), New: sideJSON(&c.New),
		Step: diffRowJSON(c, &c.Step), Categories: map[string]DiffRowJSON{}, Appeared: changesJSON(c.Appeared),
		Vanished: changesJSON(c.Vanished), Variants: changesJSON(c.Variants), Warnings: []string{},
		MeanTest: "permutation", MedianTest: "mann-whitney-u", MinChangeNS: int64(math.Round(c.MinChangeNS)), Sample: sampleKind(c),
		Tested: c.Tested, Untested: c.Untested, WhatChanged: []StoryItemJSON{}}
	for i := range c.Categories {
		out.Categories[c.Categories[i].Name] = diffRowJSON(c, &c.Categories[i])
	}
	if c.Untested != "" {
		out.Warnings = append(out.Warnings, c.Untested)
	}
	out.Warnings = append(out.Warnings, diffTopWarnings(c)...)
	out.Warnings = append(out.Warnings, diffRowWarnings(c)...)
	out.Findings = findingChangesJSON(c.Findings)
	if c.Token != nil {
		t := diffRowJSON(c, c.Token)
		out.Token = &t
		out.TokenMinChangeNS = int64(math.Round(c.TokenMinChangeNS))
	}
	if c.BaseRounds.Rounds+c.NewRounds.Rounds > 0 {
		rj := func(r *compare.SideRounds) RoundsJSON {
			return RoundsJSON{Steps: r.Steps, Rounds: r.Rounds, DraftForwards: round3(r.DraftForwards), Speculative: r.Speculative,
				Tokens: r.Tokens, TokensFrom: r.TokensFrom, PerTokenNS: int64(r.PerToken), TokensPerStep: round3(r.TokensPerStep)}
		}
		out.Rounds = &DiffRoundsJSON{Base: rj(&c.BaseRounds), New: rj(&c.NewRounds)}
	}
	out.Ranks = diffRanksJSON(c)
	for _, it := range c.Story() {
		sj := StoryItemJSON{Name: it.Row.Name, Ranks: []int{}}
		for _, l := range it.Ranks {
			sj.Ranks = append(sj.Ranks, l.Rank)
		}
		out.WhatChanged = append(out.WhatChanged, sj)
	}
	if len(c.Ranks) > 0 {
		out.Straggler = &DiffStragglerJSON{Base: stragglerJSON(c, c.Base.Ranks, true), New: stragglerJSON(c, c.New.Ranks, false)}
	}
	return out
}

// stragglerJSON is a side's straggler with its device id (of the side's first run).
func stragglerJSON(c *compare.Comparison, w *compare.RankWait, base bool) *StragglerJSON {
	if w == nil || w.Straggler < 0 || w.Calls == 0 || w.Straggler >= len(c.Ranks) {
		return nil
	}
	n := w.LastArrivals[w.Straggler]
	dev := c.Ranks[w.Straggler].NewDev
	if base {
		dev = c.Ranks[w.Straggler].BaseDev
	}
	return &StragglerJSON{Device: dev, LastArrivals: n, Share: round6(float64(n) / float64(w.Calls))}
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

// DiffJSONWrite writes the comparison as JSON contract stepstat.diff.v1.
func DiffJSONWrite(w io.Writer, c *compare.Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewDiffJSON(c))
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

// DiffText writes the comparison in benchstat's layout, then counts, NCCL kernels and
// kernel changes, then numbered warnings. The answer (the rounds warning, each side's
// step and the verdict) is wrapped to width (0: DefaultTextWidth), the rest at MaxTextLine.
func DiffText(w io.Writer, c *compare.Comparison, width int) error {
	var answer, details strings.Builder
	hw := &errWriter{w: &answer}
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
	ew := &errWriter{w: &details}
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
	bl, nl := TerminalSafe(c.Base.Label), TerminalSafe(c.New.Label)
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
	diffStory(ew, c, bl, nl)
	const colW = 16
	var rows []compare.Row
	nameW := 12 // wider only when a longer id (untraced_graph) is shown
	for _, r := range append(append([]compare.Row{}, c.Categories...), c.Step) {
		if r.Name != "whole step" && r.Base.Center == 0 && r.New.Center == 0 && r.Mean.Base == 0 && r.Mean.New == 0 && r.Base.N > 0 {
			continue // a category neither side has
		}
		rows = append(rows, r)
		nameW = max(nameW, len(r.Name))
	}
	ew.printf("Medians per %s step, each row its own samples and test (medians do not add up; the means below do):\n", c.Phase)
	ew.printf("%-*s │%s│%s│\n", nameW, "", center(bl, colW+1), center(nl, colW+26))
	ew.printf("%-*s │%s│%s│\n", nameW, "", center("time/step", colW+1), center("time/step    vs base", colW+26))
	for i := range rows {
		r := &rows[i]
		ew.printf("%-*s  %9s %-6s  %9s %-6s %9s %s\n", nameW, r.Name, breakdown.FormatDuration(int64(r.Base.Center)), pctRange(r.Base),
			breakdown.FormatDuration(int64(r.New.Center)), pctRange(r.New), rowDelta(r), rowPN(r))
	}
	diffMeans(ew, c, bl, nl, nameW)
	ew.printf("\n%-22s %12s %12s\n", "", bl, nl)
	ew.printf("%-22s %12d %12d\n", c.Phase.String()+" steps", c.Base.Steps, c.New.Steps)
	ew.printf("%-22s %12.1f %12.1f\n", "host launches/step", c.Base.LaunchesPerStep, c.New.LaunchesPerStep)
	ew.printf("%-22s %12.1f %12.1f\n", "kernels/step", c.Base.KernelsPerStep, c.New.KernelsPerStep)
	ew.printf("%-22s %12.1f %12.1f\n", "idle gaps/step", c.Base.GapsPerStep, c.New.GapsPerStep)
	ew.printf("%-22s %12s %12s\n", "step method", strings.Join(c.Base.Methods, "+"), strings.Join(c.New.Methods, "+"))
	if len(c.Base.NCCL)+len(c.New.NCCL) > 0 {
		ew.printf("\nNCCL kernels:\n%-6s %-14s %-10s %-7s %-6s %8s %10s\n", "side", "op", "algo", "proto", "dtype", "count", "total")
		for _, s := range []struct {
			label string
			n     []compare.NCCLCount
		}{{bl, c.Base.NCCL}, {nl, c.New.NCCL}} {
			for _, n := range s.n {
				ew.printf("%-6s %-14s %-10s %-7s %-6s %8d %10s\n", s.label, orDefault(n.Op, "-"), orDefault(n.Algo, "-"),
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
			ew.printf("  %-12s %6d %10s  %s\n", k.Category, n, breakdown.FormatDuration(t), names[i])
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
	_, err := io.WriteString(w, wrapText(answer.String(), textWidth(width))+wrapText(details.String(), MaxTextLine))
	return err
}

// maxVariantNames is how many names of a changed variant the text lists per side.
const maxVariantNames = 3

// variantNames lists the names of a kernel family on one side that the other side lacks,
// elided as in the kernel tables (elideNames); at most maxVariantNames, then how many
// more; "none" when there are none.
func variantNames(names, other []string) string {
	var only []string
	for _, n := range names {
		if !slices.Contains(other, n) {
			only = append(only, n)
		}
	}
	if len(only) == 0 {
		return "none"
	}
	var out []string
	var safe []string
	for _, n := range only[:min(len(only), maxVariantNames)] {
		safe = append(safe, TerminalSafe(n))
	}
	safe = elideNames(safe, MaxTextLine-20) // one name a line once wrapped, told apart
	for i := range only {
		if i == maxVariantNames {
			out = append(out, fmt.Sprintf("and %d more (see --format json)", len(only)-i))
			break
		}
		out = append(out, safe[i])
	}
	return strings.Join(out, "; ")
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

func center(s string, w int) string {
	n := len([]rune(s))
	if n >= w {
		return " " + s + " "
	}
	l := (w - n) / 2
	return strings.Repeat(" ", l) + s + strings.Repeat(" ", w-n-l)
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

// sampleKind is the JSON's "sample": step, aligned_step (the slowest rank's) or run.
func sampleKind(c *compare.Comparison) string {
	switch {
	case c.Options.PerRun:
		return "run"
	case ranked(c):
		return "aligned_step"
	}
	return "step"
}
