package render

import (
	"encoding/json"
	"fmt"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"io"
	"math"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
)

func diffRowJSON(r *compare.Row) DiffRowJSON {
	out := DiffRowJSON{BaseMedianNS: int64(math.Round(r.Base.Center)), NewMedianNS: int64(math.Round(r.New.Center)),
		PValue: round6(r.P), Significant: r.Significant, BaseN: r.Base.N, NewN: r.New.N}
	if !math.IsNaN(r.DeltaPct) {
		d := round3(r.DeltaPct)
		out.DeltaPct = &d
	}
	return out
}

// diffMeans prints the mean per step of each category on both sides and its change: the
// rows add up to the mean step (Summary's rounding).
func diffMeans(ew *errWriter, c *compare.Comparison, bl, nl string, nameW int) {
	ew.printf("\nMeans per %s step (the rows add up to the mean step):\n", c.Phase)
	ew.printf("%-*s %12s %12s %14s\n", nameW, "", bl, nl, "change/step")
	for _, cat := range kernelclass.Order {
		b, n := c.Base.Means[cat], c.New.Means[cat]
		if b == 0 && n == 0 {
			continue
		}
		ew.printf("%-*s %12s %12s %14s\n", nameW, cat, breakdown.FormatDuration(int64(b)), breakdown.FormatDuration(int64(n)), signedDuration(float64(n-b)))
	}
	ew.printf("%-*s %12s %12s %14s\n", nameW, "mean step", breakdown.FormatDuration(int64(c.Base.MeanStep)), breakdown.FormatDuration(int64(c.New.MeanStep)),
		signedDuration(float64(c.New.MeanStep-c.Base.MeanStep)))
}

func sideJSON(s *compare.SideSummary) DiffSideJSON {
	out := DiffSideJSON{Label: s.Label, Path: strings.Join(s.Paths, ","), Paths: s.Paths, DecodeSteps: s.Steps,
		MedianStepNS: int64(s.MedianStep), LaunchesPerStep: round3(s.LaunchesPerStep), KernelsPerStep: round3(s.KernelsPerStep),
		GapsPerStep: round3(s.GapsPerStep), StepMethods: s.Methods, NCCL: []NCCLCountJSON{}, Config: configJSON(s.Config),
		MeanStepNS: int64(s.MeanStep), MeanNS: map[string]int64{}}
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
		Step: diffRowJSON(&c.Step), Categories: map[string]DiffRowJSON{}, Appeared: changesJSON(c.Appeared),
		Vanished: changesJSON(c.Vanished), Variants: changesJSON(c.Variants), Warnings: []string{}}
	for i := range c.Categories {
		out.Categories[c.Categories[i].Name] = diffRowJSON(&c.Categories[i])
	}
	for _, w := range diffWarnings(c) {
		out.Warnings = append(out.Warnings, w)
	}
	out.Findings = findingChangesJSON(c.Findings)
	out.Ranks = diffRanksJSON(c.Ranks)
	return out
}

// diffWarnings collects the comparison's warnings and the rows', without repeats.
func diffWarnings(c *compare.Comparison) []string {
	var out []string
	seen := map[string]bool{}
	add := func(err error) {
		if s := err.Error(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, w := range c.Warnings {
		add(w)
	}
	for _, w := range c.Step.Warnings {
		add(w)
	}
	for i := range c.Categories {
		for _, w := range c.Categories[i].Warnings {
			add(w)
		}
	}
	return out
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
	case r.Base.N == 0 || r.New.N == 0:
		return "?"
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
	return fmt.Sprintf("(p=%.3f %s)", r.P, n)
}

// DiffText writes the comparison in benchstat's layout, then counts, NCCL kernels and
// kernel changes, then numbered warnings.
func DiffText(w io.Writer, c *compare.Comparison) error {
	ew := &errWriter{w: w}
	unit := "step"
	if c.Options.PerRun {
		unit = "run (median per step of each run)"
	}
	ew.printf("base: %s  (%s)\nnew:  %s  (%s)\n%s steps; one sample per %s\n\n", TerminalSafe(c.Base.Label), TerminalSafe(strings.Join(c.Base.Paths, ", ")),
		TerminalSafe(c.New.Label), TerminalSafe(strings.Join(c.New.Paths, ", ")), c.Phase, unit)
	bl, nl := TerminalSafe(c.Base.Label), TerminalSafe(c.New.Label)
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
		if r.Name != "whole step" && r.Base.Center == 0 && r.New.Center == 0 && r.Base.N > 0 {
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
		ew.printf("%-*s  %9s %-6s  %9s %-6s %8s %s\n", nameW, r.Name, breakdown.FormatDuration(int64(r.Base.Center)), pctRange(r.Base),
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
		for i, k := range cs {
			if i == 10 {
				ew.printf("  ... and %d more (see --format json)\n", len(cs)-10)
				break
			}
			n, t := total(k)
			ew.printf("  %-12s %6d %10s  %s\n", k.Category, n, breakdown.FormatDuration(t), TerminalSafe(k.Family))
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
			ew.printf("  %-12s %s\n    %s: %s\n    %s: %s\n", k.Category, TerminalSafe(k.Family), bl, TerminalSafe(strings.Join(k.BaseNames, ", ")),
				nl, TerminalSafe(strings.Join(k.NewNames, ", ")))
		}
	}
	ew.printf("\nNote: %s\n", diffCaveat)
	if ws := diffWarnings(c); len(ws) > 0 {
		ew.printf("\nWarnings:\n")
		for i, w := range ws {
			ew.printf("  %d. %s\n", i+1, TerminalSafe(w))
		}
	}
	return ew.err
}

// diffCaveat explains what the p-values mean for steps of one run.
const diffCaveat = "consecutive steps of one run are not independent samples (step time drifts with KV-cache length and batch makeup), " +
	"so with many steps tiny shifts test as significant; read the effect size, use --min-change, and prefer several runs per side with --unit run."

func center(s string, w int) string {
	n := len([]rune(s))
	if n >= w {
		return " " + s + " "
	}
	l := (w - n) / 2
	return strings.Repeat(" ", l) + s + strings.Repeat(" ", w-n-l)
}
