package render

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

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
	a := &htmlAnswer{Lead: diffLead(c), Lines: diffHeadlines(c), Limiter: lead, ChangesTitle: "What changed (the mean per step; significant changes, biggest first)"}
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
	if c.Base.Steps > 0 {
		a.Mix = append(a.Mix, meansRow(bl+": "+breakdown.FormatDuration(int64(c.Base.MeanStep)), &c.Base.Means, c.Base.MeanStep))
	}
	if c.New.Steps > 0 {
		a.Mix = append(a.Mix, meansRow(nl+": "+breakdown.FormatDuration(int64(c.New.MeanStep)), &c.New.Means, c.New.MeanStep))
	}
	a.MixTitle = "Mean " + c.Phase.String() + " step by category (hover a segment for its time" + scaleTitle(a.Mix, oneScale(a.Mix)) + ")"
	a.Legend = mixLegend(a.Mix)
	return a
}

// htmlAnswer is the first screen of an HTML page ("answer" in html.tmpl).
type htmlAnswer struct {
	Lead       []string // what to read first (steps are speculative rounds)
	Lines      []string // one per device (report) or per side (diff)
	Limiter    string
	Then       string
	Findings   []htmlFinding
	NoFindings bool
	Minor      string        // the minor causes, one line
	Warnings   []htmlFinding // about the report (outlier steps, coverage)
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
	mean  time.Duration // the row's mean step: oneScale draws every row on one time scale
}

type mixPart struct {
	catPart
	Style template.CSS // the segment's width and colour
}

// newMixRow is the stacked bar of a mean step.
func newMixRow(label string, sm *breakdown.Summary) mixRow {
	row := mixRow{Label: label, mean: sm.Mean}
	for _, p := range stepParts(sm) {
		row.Parts = append(row.Parts, mixPart{p, template.CSS(fmt.Sprintf("width:%.2f%%;background:%s", p.Pct, p.Color))})
	}
	return row
}

// oneScale draws the rows on one time scale: the longest mean step fills the bar, a
// shorter one its share of it (two sides of a diff, 91 ms and 3.4 ms, looked the same
// at full width each). It returns the scale's length for the title.
func oneScale(rows []mixRow) time.Duration {
	var longest time.Duration
	for _, r := range rows {
		longest = max(longest, r.mean)
	}
	if longest <= 0 {
		return 0
	}
	for i := range rows {
		f := float64(rows[i].mean) / float64(longest)
		for j := range rows[i].Parts {
			p := &rows[i].Parts[j]
			p.Style = template.CSS(fmt.Sprintf("width:%.2f%%;background:%s", p.Pct*f, p.Color))
		}
	}
	return longest
}

// scaleTitle says what the bars' full width is, when there are several rows.
func scaleTitle(rows []mixRow, longest time.Duration) string {
	if len(rows) < 2 || longest <= 0 {
		return ""
	}
	return "; one time scale, the full bar " + breakdown.FormatDuration(int64(longest))
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
		a.Lines = append(a.Lines, capitalize(perTokenHeadline(r, i)))
		if d.Summary.Steps > 0 {
			a.Mix = append(a.Mix, newMixRow(fmt.Sprintf("%s: %s", d.Name(), breakdown.FormatDuration(int64(d.Summary.Mean))), &d.Summary))
			a.MixTitle = "Mean " + phaseWhat(&d.Summary) + " by category (hover a segment for its time"
		}
	}
	if a.MixTitle != "" {
		a.MixTitle += scaleTitle(a.Mix, oneScale(a.Mix)) + ")"
	}
	a.Legend = mixLegend(a.Mix)
	a.Then, a.Lead = thenLine(r), leadWarnings(r)
	gs := r.Groups()
	for i := range gs {
		g := &gs[i]
		f := g.Top()
		hf := htmlFinding{Severity: f.Severity.String(), Headline: groupHeadline(r, g), PerRank: perRankLine(r, g),
			Claim: evidenceOf(r, g) + f.Claim, Suggestion: findingSuggestion(f)}
		switch {
		case f.Warning():
			hf.Severity, hf.Headline = "warning", string(g.ID)+onRanks(r, g)
			a.Warnings = append(a.Warnings, hf)
		case listed(g):
			a.Findings = append(a.Findings, hf)
		}
	}
	a.Minor = minorLine(r, gs)
	a.NoFindings = len(a.Findings) == 0
	return a
}
