package render

import (
	"fmt"
	"strings"

	"github.com/stepstat/stepstat/breakdown/findings"
)

// textHeadline writes the answer at the top of the text report: one line per device, the
// limiter and what would lead after it, one finding per rule (causes, then far_from_sol),
// the minor causes on one line, the warnings about the report, and the mean step by
// category.
func textHeadline(ew *errWriter, r *findings.Report) {
	for _, l := range leadWarnings(r) {
		ew.printf("%s\n", TerminalSafe(l))
	}
	for i := range r.Devices {
		ew.printf("%s\n", TerminalSafe(capitalize(perTokenHeadline(r, i))))
		if s := lifetimeLine(&r.Devices[i]); s != "" {
			ew.printf("  %s\n", s)
		}
	}
	ew.printf("%s\n", limiterLine(r))
	if t := thenLine(r); t != "" {
		ew.printf("%s\n", t)
	}
	gs := r.Groups()
	n := 0
	for i := range gs {
		g := &gs[i]
		if g.Top().Warning() || !listed(g) {
			continue
		}
		if n == 0 {
			ew.printf("Findings (means per step, most time at stake first%s):\n", solNote(gs))
		}
		n++
		ew.printf("  %d. %s\n", n, groupHeadline(r, g))
		if pr := perRankLine(r, g); pr != "" {
			per := "rank"
			if shared(r) {
				per = "loop"
			}
			ew.printf("     per %s: %s\n", per, pr)
		}
		ew.printf("     %s%s\n", evidenceOf(r, g), TerminalSafe(g.Top().Claim))
		ew.printf("     try: %s\n", TerminalSafe(findingSuggestion(g.Top())))
	}
	if n == 0 {
		if notInference(r) == "" {
			ew.printf("Findings: no cause above %g%% of the step\n", 100*findings.MinorShare)
		}
	}
	if m := minorLine(r, gs); m != "" {
		ew.printf("  %s\n", m)
	}
	// The warnings (the findings' about the report, the trace's) are one list, at the end
	// (reportWarnings); the answer says how many and which rules.
	var ids []string
	for i := range gs {
		if g := &gs[i]; g.Top().Warning() {
			ids = append(ids, string(g.ID)+onRanks(r, g))
		}
	}
	if n := len(ids) + len(r.Warnings); n > 0 {
		what := ""
		if len(ids) > 0 {
			what = " (" + strings.Join(ids, "; ") + ")"
		}
		ew.printf("Warnings: %d, listed at the end%s\n", n, what)
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

// reportWarnings writes the report's one list of warnings: the findings' about the report
// (outlier steps, coverage: not causes, left out of the limiter), then the trace's.
func reportWarnings(ew *errWriter, r *findings.Report) {
	gs := r.Groups()
	n := 0
	item := func(s string) {
		if n == 0 {
			ew.printf("\nWarnings:\n")
		}
		n++
		ew.printf("  %d. %s\n", n, s)
	}
	for i := range gs {
		g := &gs[i]
		if !g.Top().Warning() {
			continue
		}
		item(fmt.Sprintf("%s%s (about the report; not a cause): %s; try: %s", g.ID, onRanks(r, g), TerminalSafe(g.Top().Claim),
			TerminalSafe(findingSuggestion(g.Top()))))
	}
	for _, wn := range r.Warnings {
		item(TerminalSafe(warningText(wn)))
	}
}
