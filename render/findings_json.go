package render

import (
	"math"

	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/render/schema"
)

// findingsJSON converts findings to the JSON contract: evidence in raw units (ns as
// integers, shares as fractions, counts per step).
func findingsJSON(fs []findings.Finding) []schema.FindingJSON {
	out := make([]schema.FindingJSON, 0, len(fs))
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
		out = append(out, schema.FindingJSON{ID: string(f.ID), Severity: f.Severity.String(), NSPerStep: int64(f.AtStake),
			StepNS: int64(f.Step), Evidence: ev, Suggestion: findingSuggestion(&f)})
	}
	return out
}
