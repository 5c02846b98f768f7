package breakdown

import (
	"fmt"
	"math"
)

// This file holds how stepstat writes a time and a share in text: the findings' claims
// (package findings) and every format of package render use it.

// FormatDuration formats nanoseconds with about four significant digits and an explicit
// unit (5.120ms, 812.4µs, 42ns), the way benchstat and pprof do; never time.Duration.String.
func FormatDuration(ns int64) string {
	return FormatDurationF(float64(ns))
}

// FormatDurationF is FormatDuration of a fractional number of nanoseconds (a median).
func FormatDurationF(ns float64) string {
	neg := ns < 0
	a := math.Abs(ns)
	var v float64
	var unit string
	switch {
	case a >= 1e9:
		v, unit = a/1e9, "s"
	case a >= 1e6:
		v, unit = a/1e6, "ms"
	case a >= 1e3:
		v, unit = a/1e3, "µs"
	default:
		v, unit = a, "ns"
	}
	var s string
	switch {
	case unit == "ns":
		s = fmt.Sprintf("%.0f%s", v, unit)
	case v >= 100:
		s = fmt.Sprintf("%.1f%s", v, unit)
	case v >= 10:
		s = fmt.Sprintf("%.2f%s", v, unit)
	default:
		s = fmt.Sprintf("%.3f%s", v, unit)
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
