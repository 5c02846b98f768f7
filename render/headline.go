package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds the answer a report starts with, in words every format uses (text in
// headline_text.go, HTML in headline_html.go): one line per
// device with the decode step (median, p10-p90, steps), the limiter (the finding with the
// most time at stake on any device), the findings, and the mean decode step by category.
// It is built on findings.Finding alone, whatever the rules are.

// deviceHeadline is a device's first line, e.g. "device 0 (NVIDIA H200): decode step median
// 12.30ms, p10-p90 12.10ms-12.90ms, 40 steps".
func deviceHeadline(d *breakdown.DeviceReport) string {
	sm := &d.Summary
	if sm.Steps == 0 {
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
	bl, nl := sideNames(c)
	return []string{sideHeadline("Base", bl, c.Phase, c.BaseSteps), sideHeadline("New", nl, c.Phase, c.NewSteps)}
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
