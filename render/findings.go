package render

import (
	"github.com/stepstat/stepstat/breakdown/findings"
)

// findingSuggestion is the finding's suggestion, with the stepstat flags that act on it
// (breakdown words suggestions without this front end's flags).
func findingSuggestion(f *findings.Finding) string {
	if f.ID == findings.Coverage {
		return f.Suggestion + " (stepstat: --rules FILE, --nvtx-category REGEX=CATEGORY, --steps nvtx:REGEX)"
	}
	return f.Suggestion
}
