package breakdown

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Quantile returns the q-quantile of ds with linear interpolation between order statistics,
// rounded to the nanosecond.
func Quantile(ds []time.Duration, q float64) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(math.Floor(QuantileF(xs, q) + 0.5))
}

// QuantileF is Quantile of float samples, unrounded (package compare reads medians with it).
func QuantileF(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}
