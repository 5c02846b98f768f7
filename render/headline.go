package render

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds the answer a report starts with, in text and HTML alike: one line per
// device with the decode step (median, p10-p90, steps), the limiter (the finding with the
// most time at stake on any device), the findings, and the mean decode step by category.
// It is built on findings.Finding alone, whatever the rules are.

// deviceHeadline is a device's first line, e.g. "device 0 (NVIDIA H200): decode step median
// 12.30ms, p10-p90 12.10ms-12.90ms, 40 steps".
func deviceHeadline(d *breakdown.DeviceReport) string {
	sm := &d.Summary
	if sm.Steps == 0 {
		if d.Skipped > 0 && len(d.Steps) == 0 {
			return fmt.Sprintf("device %d (%s): no %ss to summarise (%d step%s found, all skipped)", d.Device, gpuName(d.GPU), phaseWhat(sm), d.Skipped, plural(d.Skipped))
		}
		return fmt.Sprintf("device %d (%s): no %ss to summarise (%d step%s found)", d.Device, gpuName(d.GPU), phaseWhat(sm), len(d.Steps), plural(len(d.Steps)))
	}
	return fmt.Sprintf("device %d (%s): %s median %s, p10-p90 %s-%s, %d step%s", d.Device, gpuName(d.GPU), phaseWhat(sm),
		breakdown.FormatDuration(int64(sm.Median)), breakdown.FormatDuration(int64(sm.P10)), breakdown.FormatDuration(int64(sm.P90)), sm.Steps, plural(sm.Steps))
}

// rankedFinding is a finding with the device it holds on.
type rankedFinding struct {
	dev int // index into Report.Devices
	f   *findings.Finding
}

// allFindings returns the findings of every device, most time at stake first (ties: device
// order, then each device's own order).
func allFindings(r *findings.Report) []rankedFinding {
	var out []rankedFinding
	for d := range r.Findings {
		for k := range r.Findings[d] {
			out = append(out, rankedFinding{d, &r.Findings[d][k]})
		}
	}
	slices.SortStableFunc(out, func(a, b rankedFinding) int { return cmp.Compare(b.f.AtStake, a.f.AtStake) })
	return out
}

// limiterLine names what limits the step: the finding with the most time at stake, e.g.
// "Limiter: launch_bound on device 0, 1.779ms of the 2.200ms mean decode step (80.9%) at
// stake". Without findings it names the largest category of the first device's mean step.
func limiterLine(r *findings.Report) string {
	if fs := allFindings(r); len(fs) > 0 {
		top := fs[0]
		d := &r.Devices[top.dev]
		return fmt.Sprintf("Limiter: %s on device %d, %s of the %s mean %s (%s) at stake", top.f.ID, d.Device,
			breakdown.FormatDuration(int64(top.f.AtStake)), breakdown.FormatDuration(int64(top.f.Step)), phaseWhat(&d.Summary),
			breakdown.FormatPercent(frac(int64(top.f.AtStake), int64(top.f.Step))))
	}
	for i := range r.Devices {
		sm := &r.Devices[i].Summary
		if sm.Steps == 0 {
			continue
		}
		big := kernelclass.Order[0]
		for _, c := range kernelclass.Order {
			if sm.Categories[c].Mean > sm.Categories[big].Mean {
				big = c
			}
		}
		return fmt.Sprintf("Limiter: no rule of the README's \"Findings\" holds; the largest part of the mean %s is %s, %s of %s (%s)",
			phaseWhat(sm), big, breakdown.FormatDuration(int64(sm.Categories[big].Mean)), breakdown.FormatDuration(int64(sm.Mean)),
			breakdown.FormatPercent(sm.Categories[big].Share))
	}
	return "Limiter: no steps to summarise"
}

// catPart is one category's part of a mean step.
type catPart struct {
	Cat   kernelclass.Category
	Mean  string
	Share string
	Pct   float64 // percent of the mean step, for widths
	Color string
}

// stepParts returns the categories of the mean step with time, largest first.
func stepParts(sm *breakdown.Summary) []catPart {
	var out []catPart
	for _, c := range kernelclass.Order {
		cs := &sm.Categories[c]
		if cs.Mean <= 0 {
			continue
		}
		out = append(out, catPart{Cat: c, Mean: breakdown.FormatDuration(int64(cs.Mean)), Share: breakdown.FormatPercent(frac(int64(cs.Mean), int64(sm.Mean))),
			Pct: chartRound2(100 * frac(int64(cs.Mean), int64(sm.Mean))), Color: categoryColors[c]})
	}
	slices.SortStableFunc(out, func(a, b catPart) int { return cmp.Compare(b.Pct, a.Pct) })
	return out
}

// stepMixLine is the text form of the stacked bar: the mean step by category, largest
// first, e.g. "device 0 mean 12.50ms: idle 45.0% 5.625ms · gemm 30.0% 3.750ms · ...".
func stepMixLine(d *breakdown.DeviceReport) string {
	sm := &d.Summary
	if sm.Steps == 0 {
		return ""
	}
	var parts []string
	for _, p := range stepParts(sm) {
		parts = append(parts, fmt.Sprintf("%s %s %s", p.Cat, p.Share, p.Mean))
	}
	return fmt.Sprintf("device %d mean %s: %s", d.Device, breakdown.FormatDuration(int64(sm.Mean)), strings.Join(parts, " · "))
}

// textHeadline writes the answer at the top of the text report.
func textHeadline(ew *errWriter, r *findings.Report) {
	for i := range r.Devices {
		ew.printf("%s\n", TerminalSafe(capitalize(deviceHeadline(&r.Devices[i]))))
	}
	ew.printf("%s\n", limiterLine(r))
	fs := allFindings(r)
	if len(fs) == 0 {
		ew.printf("Findings: none (no rule of README \"Findings\" holds)\n")
	} else {
		ew.printf("Findings (means per step, most time at stake first):\n")
		for i, rf := range fs {
			ew.printf("  %d. device %d: %s\n", i+1, r.Devices[rf.dev].Device, findingHeadline(rf.f))
			ew.printf("     %s\n", TerminalSafe(rf.f.Claim))
			ew.printf("     try: %s\n", TerminalSafe(findingSuggestion(rf.f)))
		}
	}
	first := true
	for i := range r.Devices {
		if s := stepMixLine(&r.Devices[i]); s != "" {
			if first {
				ew.printf("Mean %s by category:\n", phaseWhat(&r.Devices[i].Summary))
				first = false
			}
			ew.printf("  %s\n", s)
		}
	}
}

// htmlAnswer is the first screen of an HTML page ("answer" in html.tmpl).
type htmlAnswer struct {
	Lines      []string // one per device (report) or per side (diff)
	Limiter    string
	Findings   []htmlFinding
	NoFindings bool
	// ChangesTitle heads the findings list (the diff's "What changed"); NoneText replaces
	// it when there is nothing.
	ChangesTitle, NoneText string
	MixTitle               string
	Mix                    []mixRow
	Legend                 []catPart // the categories of the bars, in the bars' order of the first row
}

// mixRow is one stacked bar: a device's (or a side's) mean step by category.
type mixRow struct {
	Label string
	Parts []mixPart
}

type mixPart struct {
	catPart
	Style template.CSS // the segment's width and colour
}

// newMixRow is the stacked bar of a mean step.
func newMixRow(label string, sm *breakdown.Summary) mixRow {
	row := mixRow{Label: label}
	for _, p := range stepParts(sm) {
		row.Parts = append(row.Parts, mixPart{p, template.CSS(fmt.Sprintf("width:%.2f%%;background:%s", p.Pct, p.Color))})
	}
	return row
}

// mixLegend lists the categories of the rows once, largest first in the first row.
func mixLegend(rows []mixRow) []catPart {
	var out []catPart
	seen := map[kernelclass.Category]bool{}
	for _, r := range rows {
		for _, p := range r.Parts {
			if !seen[p.Cat] {
				seen[p.Cat] = true
				out = append(out, p.catPart)
			}
		}
	}
	return out
}

// reportAnswer is the first screen of the report page.
func reportAnswer(r *findings.Report) *htmlAnswer {
	a := &htmlAnswer{Limiter: limiterLine(r)}
	for i := range r.Devices {
		d := &r.Devices[i]
		a.Lines = append(a.Lines, capitalize(deviceHeadline(d)))
		if d.Summary.Steps > 0 {
			a.Mix = append(a.Mix, newMixRow(fmt.Sprintf("device %d: %s", d.Device, breakdown.FormatDuration(int64(d.Summary.Mean))), &d.Summary))
			a.MixTitle = "Mean " + phaseWhat(&d.Summary) + " by category (hover a segment for its time)"
		}
	}
	a.Legend = mixLegend(a.Mix)
	for _, rf := range allFindings(r) {
		f := rf.f
		a.Findings = append(a.Findings, htmlFinding{Device: fmt.Sprintf("device %d", r.Devices[rf.dev].Device),
			Severity: f.Severity.String(), Headline: findingHeadline(f), Claim: f.Claim, Suggestion: findingSuggestion(f)})
	}
	a.NoFindings = len(a.Findings) == 0
	return a
}

// sideHeadline is a diff side's first line: "base eager: decode step median 13.33ms,
// p10-p90 12.40ms-17.79ms, 12 steps" (quantiles over every compared step of the side).
func sideHeadline(side, label string, phase breakdown.Phase, runs [][]time.Duration) string {
	var walls []time.Duration
	for _, r := range runs {
		walls = append(walls, r...)
	}
	if len(walls) == 0 {
		return fmt.Sprintf("%s %s: no %s steps", side, label, phase)
	}
	slices.Sort(walls)
	q := func(p float64) string {
		pos := p * float64(len(walls)-1)
		lo := int(pos)
		v := float64(walls[lo])
		if lo+1 < len(walls) {
			v += (pos - float64(lo)) * float64(walls[lo+1]-walls[lo])
		}
		return breakdown.FormatDurationF(v)
	}
	return fmt.Sprintf("%s %s: %s step median %s, p10-p90 %s-%s, %d step%s", side, label, phase, q(0.5), q(0.1), q(0.9), len(walls), plural(len(walls)))
}

// diffHeadlines are the first lines of a diff: one per side.
func diffHeadlines(c *compare.Comparison) []string {
	// The lines name the side themselves ("Base de", "New de"): sideNames' "base de" would
	// say it twice.
	return []string{sideHeadline("Base", c.Base.Label, c.Phase, c.BaseSteps), sideHeadline("New", c.New.Label, c.Phase, c.NewSteps)}
}

// meansRow is the stacked bar of a diff side: its mean step by category.
func meansRow(label string, means *[kernelclass.NumCategories]time.Duration, total time.Duration) mixRow {
	sm := &breakdown.Summary{Mean: total, Steps: 1}
	for c := range means {
		sm.Categories[c].Mean = means[c]
	}
	return newMixRow(label, sm)
}

// maxAnswerChanges is the most changes the diff's first screen lists.
const maxAnswerChanges = 12

// diffAnswer is the first screen of the diff page: each side's step, the verdict on the
// step time, the significant changes (categories and findings), and both sides' mean step
// by category.
func diffAnswer(c *compare.Comparison, lead string) *htmlAnswer {
	bl, nl := sideNames(c)
	a := &htmlAnswer{Lines: diffHeadlines(c), Limiter: lead, ChangesTitle: "What changed (the mean per step; significant changes, biggest first)"}
	for _, it := range c.Story() { // the significant changes of the mean, biggest first
		if it.Row == &c.Step || it.Row.NotComparable != "" {
			continue
		}
		h := strings.Join(strings.Fields(storyLine(c, it.Row, it.Row.Name)), " ")
		if len(it.Ranks) > 0 {
			verb := "differ"
			if len(it.Ranks) == 1 {
				verb = "differs"
			}
			h += fmt.Sprintf("; %d rank%s %s (see What changed)", len(it.Ranks), plural(len(it.Ranks)), verb)
		}
		a.Findings = append(a.Findings, htmlFinding{Severity: "change", Headline: h})
	}
	for _, f := range c.Findings {
		if f.Change == compare.FindingSame {
			continue
		}
		a.Findings = append(a.Findings, htmlFinding{Severity: "change", Headline: "finding " + findingChangeText(c, &f)})
	}
	if len(a.Findings) > maxAnswerChanges { // the first screen; What changed has every row
		n := len(a.Findings)
		a.Findings = append(a.Findings[:maxAnswerChanges-1], htmlFinding{Severity: "change",
			Headline: fmt.Sprintf("… %d more changes in What changed below", n-maxAnswerChanges+1)})
	}
	a.NoFindings = len(a.Findings) == 0
	a.NoneText = noChangeLine(c) + "."
	a.MixTitle = "Mean " + c.Phase.String() + " step by category (hover a segment for its time)"
	if c.Base.Steps > 0 {
		a.Mix = append(a.Mix, meansRow(bl+": "+breakdown.FormatDuration(int64(c.Base.MeanStep)), &c.Base.Means, c.Base.MeanStep))
	}
	if c.New.Steps > 0 {
		a.Mix = append(a.Mix, meansRow(nl+": "+breakdown.FormatDuration(int64(c.New.MeanStep)), &c.New.Means, c.New.MeanStep))
	}
	a.Legend = mixLegend(a.Mix)
	return a
}

// diffVerdict is the text diff's line on the step time, the change of the mean per step
// as the story below tests it, e.g. "Decode step mean: 2.199ms -> 395.2µs, -82.03%, p=0.000,
// n=12" (the story's first row has the interval).
func diffVerdict(c *compare.Comparison) string {
	r := &c.Step
	test := "no test: n=" + meanN(&r.Mean)
	if r.NotComparable != "" {
		test = "not comparable"
	} else if c.Tested && r.Mean.Tested {
		test = fmt.Sprintf("p=%.3f, n=%s", r.Mean.P, meanN(&r.Mean))
	}
	return fmt.Sprintf("%s step mean: %s -> %s, %s, %s", capitalize(c.Phase.String()), breakdown.FormatDurationF(r.Mean.Base),
		breakdown.FormatDurationF(r.Mean.New), meanWords(c, r), test)
}
