package kernelclass

import "testing"

// TestCategoryRows: the table of categories has one row per category: Order lists each
// category once, and each has its own non-empty identifier and its own priority, idle
// lowest.
func TestCategoryRows(t *testing.T) {
	seen := map[Category]bool{}
	names := map[string]bool{}
	prios := map[int]bool{}
	for _, c := range Order {
		if seen[c] || c >= NumCategories {
			t.Errorf("Order lists %v twice or out of range", c)
		}
		seen[c] = true
		if n := c.String(); n == "" || names[n] {
			t.Errorf("category %d: identifier %q empty or not unique", c, n)
		} else {
			names[n] = true
		}
		if p := c.Priority(); prios[p] {
			t.Errorf("%v: priority %d not unique", c, p)
		} else {
			prios[p] = true
		}
		if c != Idle && c.Priority() <= Idle.Priority() {
			t.Errorf("%v ranks at or below idle", c)
		}
	}
	if len(seen) != int(NumCategories) {
		t.Errorf("Order lists %d categories, want %d", len(seen), NumCategories)
	}
}
