package render

import (
	"fmt"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// findingHeadline is a finding's first line: id, severity and the time at stake, e.g.
// "launch_bound [high]: 1.779ms of a 2.200ms step (80.9%)".
func findingHeadline(f *findings.Finding) string {
	return fmt.Sprintf("%s [%s]: %s of a %s step (%s) at stake", f.ID, f.Severity, breakdown.FormatDuration(int64(f.AtStake)),
		breakdown.FormatDuration(int64(f.Step)), breakdown.FormatPercent(frac(int64(f.AtStake), int64(f.Step))))
}

// findingSuggestion is the finding's suggestion, with the stepstat flags that act on it
// (breakdown words suggestions without this front end's flags).
func findingSuggestion(f *findings.Finding) string {
	if f.ID == findings.Coverage {
		return f.Suggestion + " (stepstat: --rules FILE, --nvtx-category REGEX=CATEGORY, --steps nvtx:REGEX)"
	}
	return f.Suggestion
}
