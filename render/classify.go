package render

import (
	"slices"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// classifyOrder puts unmatched names first, then by total time.
func classifyOrder(ks []breakdown.KernelStat) ([]breakdown.KernelStat, int64, int64) {
	out := slices.Clone(ks)
	slices.SortStableFunc(out, func(a, b breakdown.KernelStat) int {
		ao, bo := a.Category == kernelclass.Other, b.Category == kernelclass.Other
		switch {
		case ao && !bo:
			return -1
		case bo && !ao:
			return 1
		}
		return 0
	})
	var total, other int64
	for _, k := range ks {
		total += int64(k.Total)
		if k.Category == kernelclass.Other {
			other += int64(k.Total)
		}
	}
	return out, total, other
}
