package render

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file renders the rank view (collectives matched across devices: wait and
// transfer, stragglers, step-time spread) and the speed-of-light view of a report.

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
	ew.printf("%4s %11s %14s %15s %10s %13s %10s %14s\n", "rank", "median step", "allreduce/step", "collective/step",
		"wait/step", "transfer/step", "wait share", "times last")
	for i := range rr.Devices {
		d := &rr.Devices[i]
		last := fmt.Sprintf("%d (%s)", d.LastArrivals, breakdown.FormatPercent(frac(int64(d.LastArrivals), int64(len(rr.Calls)))))
		ew.printf("%4d %11s %14s %15s %10s %13s %10s %14s\n", d.Device, breakdown.FormatDuration(int64(d.MedianStep)),
			perStep(d.AllReduce.Time, n), perStep(d.Collective.Time, n), perStep(d.Wait, n), perStep(d.Transfer, n),
			breakdown.FormatPercent(frac(int64(d.Wait), int64(d.Wait+d.Transfer))), last)
	}
	if s := stragglerLine(rr); s != "" {
		ew.printf("%s\n", s)
	}
}

// perStep formats a total over n steps as time per step.
func perStep[T ~int64](total T, n int) string {
	return breakdown.FormatDuration(int64(total) / int64(max(n, 1)))
}

// stragglerLine names the rank that arrived last at most matched collectives, e.g.
// "Straggler: rank 1 arrived last at 198 of 230 matched collectives (86.1%)"; "" when no
// collective was matched.
func stragglerLine(rr *breakdown.RankReport) string {
	if rr == nil || rr.Straggler < 0 || len(rr.Calls) == 0 {
		return ""
	}
	d := &rr.Devices[rr.Straggler]
	return fmt.Sprintf("Straggler: rank %d arrived last at %d of %d matched collectives (%s)", d.Device, d.LastArrivals,
		len(rr.Calls), breakdown.FormatPercent(frac(int64(d.LastArrivals), int64(len(rr.Calls)))))
}

// deviceSentences returns the canonical sentences of a device of the report: those of
// summarySentences, where in a multi-rank report the allreduce and collective sentences become
// rank sentences (see rankSentence).
func deviceSentences(r *breakdown.Report, d *breakdown.DeviceReport) []string {
	out := summarySentences(&d.Summary)
	if r == nil || r.Ranks == nil {
		return out
	}
	for i, s := range out {
		for _, c := range []kernelclass.Category{kernelclass.AllReduce, kernelclass.Collective} {
			if strings.HasPrefix(s, c.String()+": ") {
				if rs, ok := rankSentence(r.Ranks, d.Device, c); ok {
					out[i] = rs
				}
			}
		}
	}
	return out
}

// rankSentence describes one category of matched collectives on one rank, e.g.
// "allreduce: 16 calls/step, 37.40ms/step, of which 31.00ms waiting for rank 1": the matched
// calls per aligned step, the rank's kernel time in them per step, and the part of it spent
// waiting for the last rank to arrive, named when one rank caused all of it, else the rank
// that caused most. ok is false when the rank matched no call of the category.
func rankSentence(rr *breakdown.RankReport, device nsys.DeviceID, c kernelclass.Category) (string, bool) {
	if rr == nil || len(rr.Steps) == 0 {
		return "", false
	}
	var d *breakdown.RankDevice
	for i := range rr.Devices {
		if rr.Devices[i].Device == device {
			d = &rr.Devices[i]
		}
	}
	if d == nil {
		return "", false
	}
	cm := d.Comm(c)
	if cm == nil || cm.Calls == 0 {
		return "", false
	}
	n := len(rr.Steps)
	s := fmt.Sprintf("%s: %s calls/step, %s/step, ", c, fmtCalls(float64(cm.Calls)/float64(n)), perStep(cm.Time, n))
	if cm.Wait == 0 {
		return s + "none of it waiting for another rank", true
	}
	top := 0
	for r, w := range cm.WaitFor {
		if w > cm.WaitFor[top] {
			top = r
		}
	}
	s += fmt.Sprintf("of which %s waiting", perStep(cm.Wait, n))
	if cm.WaitFor[top] == cm.Wait {
		return s + fmt.Sprintf(" for rank %d", rr.Devices[top].Device), true
	}
	return s + fmt.Sprintf(", %s of it for rank %d", breakdown.FormatPercent(frac(int64(cm.WaitFor[top]), int64(cm.Wait))), rr.Devices[top].Device), true
}

// solLine describes a device's speed-of-light view in one line, e.g.
// "Speed of light: floor 7.125ms = 34.2 GB / 4.8 TB/s (H200 datasheet HBM3e bandwidth);
// measured median decode step 9.840ms = 1.38x floor, 72.4% efficient; 101.6 tokens/s per
// sequence, 6,504 tokens/s total at batch 64". "" when the device has none.
func solLine(d *breakdown.DeviceReport) string {
	s := d.SOL
	if s == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Speed of light: floor %s", breakdown.FormatDuration(int64(s.Floor)))
	if s.Bytes > 0 {
		fmt.Fprintf(&b, " = %s / %s", bytesText(s.Bytes), bandwidthText(s.Bandwidth))
	}
	fmt.Fprintf(&b, " (%s); ", solSource(s))
	what := "median " + d.Summary.Phase.String() + " step"
	if d.Summary.Phase == breakdown.Unknown {
		what = "median step"
	}
	if s.Measured <= 0 {
		fmt.Fprintf(&b, "measured: no steps")
		return b.String()
	}
	fmt.Fprintf(&b, "measured %s %s = %.2fx floor, %s efficient; %s tokens/s per sequence", what, breakdown.FormatDuration(int64(s.Measured)),
		s.Ratio, breakdown.FormatPercent(s.Efficiency), countText(s.TokensPerSec))
	if s.Batch > 0 {
		fmt.Fprintf(&b, ", %s tokens/s total at batch %d", countText(s.TotalTokensPerSec), s.Batch)
	}
	return b.String()
}

// bytesText formats a byte count in decimal units with up to four significant digits
// (34.2 GB, 17.18 GB, 512 MB).
func bytesText(n int64) string {
	v := float64(n)
	for _, u := range []struct {
		f    float64
		name string
	}{{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}} {
		if math.Abs(v) >= u.f {
			return strconv.FormatFloat(v/u.f, 'g', 4, 64) + " " + u.name
		}
	}
	return fmt.Sprintf("%d B", n)
}

// bandwidthText formats bytes per second in decimal units (4.8 TB/s, 900 GB/s).
func bandwidthText(bps float64) string {
	for _, u := range []struct {
		f    float64
		name string
	}{{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}} {
		if math.Abs(bps) >= u.f {
			return strconv.FormatFloat(bps/u.f, 'g', 4, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(bps, 'g', 4, 64) + " B/s"
}

// countText formats a rate: one decimal below 1,000, else a whole number with thousands
// separators (101.6, 6,504).
func countText(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "n/a"
	}
	if math.Abs(f) < 1000 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(math.Round(math.Abs(f))), 10)
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func nsSlice[T ~int64](xs []T) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}

func rankCommJSON(c *breakdown.RankComm) RankCommJSON {
	return RankCommJSON{Calls: c.Calls, NS: int64(c.Time), WaitNS: int64(c.Wait), TransferNS: int64(c.Transfer),
		WaitForNS: nsSlice(c.WaitFor)}
}

// ranksJSON builds the "ranks" object; nil for a report of one device.
func ranksJSON(rr *breakdown.RankReport) *RanksJSON {
	if rr == nil {
		return nil
	}
	out := &RanksJSON{AlignedBy: rr.AlignedBy, AlignedSteps: len(rr.Steps), MatchedCalls: len(rr.Calls),
		UnmatchedKernels: rr.Unmatched, Spread: SpreadJSON{MedianNS: int64(rr.SpreadMedian), P90NS: int64(rr.SpreadP90)},
		Devices: []RankDeviceJSON{}, Steps: []RankStepJSON{}}
	if rr.Straggler >= 0 && len(rr.Calls) > 0 {
		d := &rr.Devices[rr.Straggler]
		out.Straggler = &StragglerJSON{Device: int(d.Device), LastArrivals: d.LastArrivals,
			Share: round6(frac(int64(d.LastArrivals), int64(len(rr.Calls))))}
	}
	for i := range rr.Devices {
		d := &rr.Devices[i]
		out.Devices = append(out.Devices, RankDeviceJSON{Device: int(d.Device), GPU: d.GPU, MedianStepNS: int64(d.MedianStep),
			CollectivesMatched: d.CollectivesMatched, WaitNS: int64(d.Wait), TransferNS: int64(d.Transfer),
			WaitShare: round6(frac(int64(d.Wait), int64(d.Wait+d.Transfer))), LastArrivals: d.LastArrivals,
			WaitForNS: nsSlice(d.WaitFor), AllReduce: rankCommJSON(&d.AllReduce), Collective: rankCommJSON(&d.Collective)})
	}
	for i := range rr.Steps {
		s := &rr.Steps[i]
		out.Steps = append(out.Steps, RankStepJSON{Steps: s.Steps, WallNS: nsSlice(s.Wall), SpreadNS: int64(s.Spread),
			Calls: s.Calls, WaitNS: nsSlice(s.Wait), TransferNS: nsSlice(s.Transfer), LastArrivals: s.LastArrivals})
	}
	return out
}

// solJSON builds a device's "sol" object; nil without a floor.
func solJSON(s *breakdown.SOL) *SOLJSON {
	if s == nil {
		return nil
	}
	return &SOLJSON{FloorNS: int64(s.Floor), Bytes: s.Bytes, BandwidthBytesPerS: s.Bandwidth, Source: solSource(s),
		MeasuredNS: int64(s.Measured), Ratio: round6(s.Ratio), Efficiency: round6(s.Efficiency),
		TokensPerS: round3(s.TokensPerSec), Batch: s.Batch, TotalTokensPerS: round3(s.TotalTokensPerSec)}
}

// solSource names where a speed-of-light floor or its bandwidth came from: the flag that
// gave it, or the datasheet assumption.
func solSource(s *breakdown.SOL) string {
	switch s.Source {
	case breakdown.SourceStep:
		return "--sol-step"
	case breakdown.SourceBandwidth:
		return "--bandwidth"
	}
	return s.Datasheet
}
