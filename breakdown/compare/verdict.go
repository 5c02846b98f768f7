package compare

import (
	"fmt"
	"math"

	"github.com/stepstat/stepstat/breakdown"
)

// This file holds the comparison's verdict: the row it is on and whether it is a regression
// (diff --fail-on-regression).

// Regression reports whether the new side is significantly slower than the base: the
// headline row (time per token where both sides know their tokens, else the whole step)
// has a significant change of the mean, tested and at least MinChangeNS, upwards. what
// names the row and the change.
func (c *Comparison) Regression() (slower bool, what string) {
	r, name := c.Headline()
	m := &r.Mean
	what = fmt.Sprintf("%s %s -> %s (%+.2f%%, p=%.3f)", name, breakdown.FormatDurationF(m.Base), breakdown.FormatDurationF(m.New),
		pctOf(m.Delta, m.Base), m.P)
	return m.Significant && m.Delta > 0, what
}

// Headline returns the row the verdict is on, and its name: the time per token where both
// sides know their tokens (Token), else the whole step.
func (c *Comparison) Headline() (*Row, string) {
	if c.Token != nil {
		return c.Token, "mean time per token"
	}
	return &c.Step, "mean " + c.Phase.String() + " step"
}

// Undecided says why the comparison cannot decide whether the new side is slower ("" when
// it can): a side has too few samples for the test to reach Alpha (Untested), the headline
// row is not comparable, or its change was not tested. Regression's false then means
// "could not tell", not "not slower": diff --fail-on-regression exits 4.
func (c *Comparison) Undecided() string {
	r, name := c.Headline()
	switch {
	case !c.Tested:
		return c.Untested
	case r.NotComparable != "":
		return name + " not comparable: " + r.NotComparable
	case !r.Mean.Tested:
		return fmt.Sprintf("%s not tested (%d samples on the base side, %d on the new)", name, r.Mean.NBase, r.Mean.NNew)
	}
	return ""
}

func pctOf(d, base float64) float64 {
	if base == 0 {
		return math.Inf(1)
	}
	return 100 * d / base
}
