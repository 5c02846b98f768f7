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

func pctOf(d, base float64) float64 {
	if base == 0 {
		return math.Inf(1)
	}
	return 100 * d / base
}
