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
			StepNS: int64(f.Step), Evidence: ev, Suggestion: findingSuggestion(&f), Kind: findingKind(&f), Minor: f.Minor()})
	}
	return out
}

// findingKind is a finding's kind in the JSON contract: cause, headroom or warning.
func findingKind(f *findings.Finding) string {
	switch {
	case f.Warning():
		return "warning"
	case f.ID == findings.FarFromSOL:
		return "headroom"
	}
	return "cause"
}

// planJSON is the report's plan: the limiter, then, and one group per rule.
func planJSON(r *findings.Report) *schema.PlanJSON {
	out := &schema.PlanJSON{Groups: []schema.FindingGroupJSON{}}
	for _, g := range r.Groups() {
		f := g.Top()
		gj := schema.FindingGroupJSON{ID: string(g.ID), Kind: findingKind(f), Minor: f.Minor(), Devices: []int{}, NSPerStep: int64(f.AtStake), StepNS: int64(f.Step)}
		for _, m := range g.Members {
			gj.Devices = append(gj.Devices, int(r.Devices[m.Dev].Device))
		}
		out.Groups = append(out.Groups, gj)
	}
	g, ok := r.Limiter()
	if !ok {
		out.LargestPart = largestPart(r)
		return out
	}
	d, f := g.Members[0].Dev, g.Top()
	out.Limiter = &schema.PlanFindingJSON{ID: string(f.ID), Device: int(r.Devices[d].Device), NSPerStep: int64(f.AtStake), StepNS: int64(f.Step)}
	if d < len(r.Then) && r.Then[d] != nil {
		t := r.Then[d]
		tj := &schema.ThenJSON{After: string(t.After), StepNS: int64(t.Step)}
		if t.Next != nil {
			tj.Next, tj.NSPerStep, tj.Speedup = string(t.Next.ID), int64(t.Next.AtStake), round3(t.Speedup())
		}
		out.Then = tj
	}
	return out
}
