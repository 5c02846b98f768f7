package breakdown

import (
	"fmt"
	"math"
	"strconv"
)

// This file holds how stepstat writes a time and a share in text: the findings' claims
// (package findings) and every format of package render use it.

// FormatDuration formats nanoseconds with about four significant digits and an explicit
// unit (5.120ms, 812.4µs, 42ns), the way benchstat and pprof do; never time.Duration.String.
func FormatDuration(ns int64) string {
	return FormatDurationF(float64(ns))
}

// FormatDurationF is FormatDuration of a fractional number of nanoseconds (a median). A
// value that rounds up to 1000 of its unit is written in the next unit: 999.96µs is
// 1.000ms, never 1000.0µs.
func FormatDurationF(ns float64) string {
	neg := ns < 0
	a := math.Abs(ns)
	units := [...]struct {
		scale float64
		name  string
	}{{1, "ns"}, {1e3, "µs"}, {1e6, "ms"}, {1e9, "s"}}
	u := 0
	for u < len(units)-1 && a >= units[u+1].scale {
		u++
	}
	var s string
	for {
		v := a / units[u].scale
		if u == 0 {
			s = fmt.Sprintf("%.0f", v)
		} else {
			// Three decimals under 10, two under 100, one above, judged on the rounded
			// value (9.9996 is 10.00, not 10.000).
			for digits := 3; digits >= 1; digits-- {
				s = fmt.Sprintf("%.*f", digits, v)
				if r, _ := strconv.ParseFloat(s, 64); digits == 1 || r < []float64{0, 100, 10}[digits-1] {
					break
				}
			}
		}
		if r, _ := strconv.ParseFloat(s, 64); r >= 1000 && u < len(units)-1 {
			u++ // rounded up into the next unit
			continue
		}
		s += units[u].name
		break
	}
	if neg {
		return "-" + s
	}
	return s
}

// FormatPercent formats a fraction (0.421) as a percentage with a precision that suits its
// size, like pprof's Percentage.
func FormatPercent(f float64) string {
	p := 100 * f
	switch a := math.Abs(p); {
	case a >= 99.95 && a <= 100.05:
		return "100%"
	case a >= 10:
		return fmt.Sprintf("%.1f%%", p)
	case a >= 1:
		return fmt.Sprintf("%.2f%%", p)
	case a == 0:
		return "0%"
	default:
		return fmt.Sprintf("%.2g%%", p)
	}
}
