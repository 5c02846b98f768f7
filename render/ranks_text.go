package render

import (
	"fmt"

	"github.com/stepstat/stepstat/breakdown"
)

// textRanks writes the per-rank table of a multi-device report; nothing for one device.
func textRanks(ew *errWriter, r *breakdown.Report) {
	rr := r.Ranks
	if rr == nil {
		return
	}
	n := len(rr.Steps)
	ew.printf("\nRanks: %d devices, %d aligned step%s (by %s), %d collective%s matched on every rank",
		len(rr.Devices), n, plural(n), rr.AlignedBy, len(rr.Calls), plural(len(rr.Calls)))
	if rr.Unmatched > 0 {
		ew.printf(", %d kernel%s unmatched", rr.Unmatched, plural(rr.Unmatched))
	}
	ew.printf("\n")
	if n == 0 {
		ew.printf("  no aligned steps to compare\n")
		return
	}
	ew.printf("Step spread across ranks: median %s  p90 %s\n", breakdown.FormatDuration(int64(rr.SpreadMedian)), breakdown.FormatDuration(int64(rr.SpreadP90)))
	ew.printf("Per rank, means per aligned step of the matched collectives (allreduce + collective = wait + transfer), beside the median step:\n")
	ew.printf(tableRow+"%4s %11s %14s %15s %10s %13s %10s %14s\n", "rank", "median step", "allreduce/step", "collective/step",
		"wait/step", "transfer/step", "wait share", "times last")
	for i := range rr.Devices {
		d := &rr.Devices[i]
		last := fmt.Sprintf("%d (%s)", d.LastArrivals, breakdown.FormatPercent(frac(int64(d.LastArrivals), int64(len(rr.Calls)))))
		ew.printf(tableRow+"%4d %11s %14s %15s %10s %13s %10s %14s\n", d.Device, breakdown.FormatDuration(int64(d.MedianStep)),
			perStep(d.AllReduce.Time, n), perStep(d.Collective.Time, n), perStep(d.Wait, n), perStep(d.Transfer, n),
			breakdown.FormatPercent(frac(int64(d.Wait), int64(d.Wait+d.Transfer))), last)
	}
	if s := stragglerLine(rr); s != "" {
		ew.printf("%s\n", s)
	}
}
