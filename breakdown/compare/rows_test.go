package compare_test

import (
	"testing"

	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// TestRowsTyped: every row says what it is about without its name being parsed back: the
// whole step's row (pooled and per rank) is Whole and named compare.WholeStep, each
// category row carries its category, in kernelclass.Order, named by it; and Story returns
// the same items each time (computed once by Compare), pointing at the comparison's rows.
func TestRowsTyped(t *testing.T) {
	c := compareWith(t, []string{"tp2-moe-eager"}, []string{"tp2-moe-graph"}, defaults)
	if len(c.Ranks) == 0 {
		t.Fatal("no per-rank rows on the 2-GPU pair")
	}
	check := func(where string, step *compare.Row, cats []compare.Row) {
		if !step.Whole || step.Name != compare.WholeStep {
			t.Errorf("%s: step row whole %v, name %q", where, step.Whole, step.Name)
		}
		if len(cats) != len(kernelclass.Order) {
			t.Fatalf("%s: %d category rows, want %d", where, len(cats), len(kernelclass.Order))
		}
		for i, r := range cats {
			if r.Whole || r.Category != kernelclass.Order[i] || r.Name != r.Category.String() {
				t.Errorf("%s row %d: whole %v, category %v, name %q; want %v", where, i, r.Whole, r.Category, r.Name, kernelclass.Order[i])
			}
		}
	}
	check("pooled", &c.Step, c.Categories)
	for _, rk := range c.Ranks {
		check("rank", &rk.Step, rk.Categories)
	}
	a, b := c.Story(), c.Story()
	if len(a) == 0 || &a[0] != &b[0] || a[0].Row != &c.Step {
		t.Errorf("Story: %d items, not the same slice each time or not led by the step row", len(a))
	}
}
