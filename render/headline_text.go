package render

import (
	"github.com/stepstat/stepstat/breakdown/findings"
)

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
