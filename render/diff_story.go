package render

import (
	"fmt"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// diffStory writes what diff leads with: the significant category changes, biggest first,
// the launches and kernels per step, the findings that appeared, vanished or changed, and
// per rank the significant changes of each device position.
func diffStory(ew *errWriter, c *compare.Comparison, bl, nl string) {
	ew.printf("What changed (%s -> %s; medians per %s step; significant changes, biggest first):\n", bl, nl, c.Phase)
	big := compare.BiggestChanges(c.Categories)
	if len(big) == 0 {
		ew.printf("  no category changed significantly\n")
	}
	for i := range big {
		ew.printf("  %s\n", storyRow(&big[i]))
	}
	ew.printf("  %s; %s\n", countChange("host launches/step", c.Base.LaunchesPerStep, c.New.LaunchesPerStep),
		countChange("kernels/step", c.Base.KernelsPerStep, c.New.KernelsPerStep))
	for _, f := range c.Findings {
		if f.Change == compare.FindingSame {
			continue
		}
		ew.printf("  finding %s\n", findingChangeText(c, &f))
	}
	for _, rk := range c.Ranks {
		rows := compare.BiggestChanges(rk.Categories)
		if len(rows) == 0 {
			ew.printf("  rank %d: no category changed significantly\n", rk.Rank)
		}
		for i := range rows {
			ew.printf("  rank %d: %s\n", rk.Rank, storyRow(&rows[i]))
		}
	}
	ew.printf("\n")
}

// storyRow is one significant change: "idle  1.951ms -> 168.4µs  (-1.783ms/step, -91.37%, p=0.000)".
func storyRow(r *compare.Row) string {
	return fmt.Sprintf("%-12s %9s -> %-9s (%s/step, %s, p=%.3f)", r.Name, breakdown.FormatDuration(int64(r.Base.Center)), breakdown.FormatDuration(int64(r.New.Center)),
		signedDuration(r.New.Center-r.Base.Center), rowDelta(r), r.P)
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
	switch f.Change {
	case compare.FindingAppeared:
		return fmt.Sprintf("%s appeared%s (%s)", f.ID, where, side(f.New))
	case compare.FindingVanished:
		return fmt.Sprintf("%s vanished%s (was %s)", f.ID, where, side(f.Base))
	}
	return fmt.Sprintf("%s changed%s: %s -> %s", f.ID, where, side(f.Base), side(f.New))
}

func findingChangesJSON(fs []compare.FindingChange) []FindingChangeJSON {
	out := []FindingChangeJSON{}
	for _, f := range fs {
		fj := FindingChangeJSON{Rank: f.Rank, ID: f.ID, Change: f.Change}
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

func diffRanksJSON(rs []compare.RankComparison) []DiffRankJSON {
	var out []DiffRankJSON
	for _, r := range rs {
		rj := DiffRankJSON{Rank: r.Rank, BaseDevice: r.BaseDev, NewDevice: r.NewDev, Step: diffRowJSON(&r.Step), Categories: map[string]DiffRowJSON{}}
		for i := range r.Categories {
			rj.Categories[r.Categories[i].Name] = diffRowJSON(&r.Categories[i])
		}
		out = append(out, rj)
	}
	return out
}
