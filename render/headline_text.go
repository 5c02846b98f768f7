package render

import (
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
	w := 0
	for i := range gs {
		g := &gs[i]
		if !g.Top().Warning() {
			continue
		}
		if w == 0 {
			ew.printf("Warnings about the report (not causes; left out of the limiter):\n")
		}
		w++
		ew.printf("  - %s%s: %s\n", g.ID, onRanks(r, g), TerminalSafe(g.Top().Claim))
		ew.printf("    try: %s\n", TerminalSafe(findingSuggestion(g.Top())))
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
