package render

import (
	"fmt"
	"math"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// findingsJSON converts findings to the JSON contract: evidence in raw units (ns as
// integers, shares as fractions, counts per step).
func findingsJSON(fs []findings.Finding) []FindingJSON {
	out := make([]FindingJSON, 0, len(fs))
	for _, f := range fs {
		ev := map[string]any{}
		for _, e := range f.Evidence {
			switch e.Unit {
			case findings.UnitNS:
				ev[e.Key] = int64(math.Round(e.N))
			case findings.UnitShare:
				ev[e.Key] = round6(e.N)
			case findings.UnitText:
				ev[e.Key] = e.Text
			default:
				ev[e.Key] = round3(e.N)
			}
		}
		out = append(out, FindingJSON{ID: f.ID, Severity: f.Severity.String(), NSPerStep: int64(f.AtStake),
			StepNS: int64(f.Step), Evidence: ev, Suggestion: findingSuggestion(&f)})
	}
	return out
}

// findingHeadline is a finding's first line: id, severity and the time at stake, e.g.
// "launch_bound [high]: 1.779ms of a 2.200ms step (80.9%)".
func findingHeadline(f *findings.Finding) string {
	return fmt.Sprintf("%s [%s]: %s of a %s step (%s) at stake", f.ID, f.Severity, breakdown.FormatDuration(int64(f.AtStake)),
		breakdown.FormatDuration(int64(f.Step)), breakdown.FormatPercent(frac(int64(f.AtStake), int64(f.Step))))
}

// textFindings writes a device's findings under its summary.
func textFindings(ew *errWriter, fs []findings.Finding) {
	if len(fs) == 0 {
		ew.printf("Findings: none (no rule of README \"Findings\" holds)\n")
		return
	}
	ew.printf("Findings (means per step, most time at stake first):\n")
	for i := range fs {
		f := &fs[i]
		ew.printf("  %d. %s\n", i+1, findingHeadline(f))
		ew.printf("     %s\n", f.Claim)
		ew.printf("     try: %s\n", findingSuggestion(f))
	}
}

// findingSuggestion is the finding's suggestion, with the stepstat flags that act on it
// (breakdown words suggestions without this front end's flags).
func findingSuggestion(f *findings.Finding) string {
	if f.ID == findings.Coverage {
		return f.Suggestion + " (stepstat: --rules FILE, --nvtx-category REGEX=CATEGORY, --steps nvtx:REGEX)"
	}
	return f.Suggestion
}
