package render

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// This file holds the words of the rank view (collectives matched across devices: wait and
// transfer, stragglers, step-time spread) and of the speed-of-light view that every format
// uses; ranks_text.go, ranks_json.go and ranks_html.go write them.

// perStep formats a total over n steps as time per step.
func perStep[T ~int64](total T, n int) string {
	return breakdown.FormatDuration(int64(total) / int64(max(n, 1)))
}

// stragglerLine names a straggler only when the waiting it causes is material
// (findings.SkewOf: the largest wait of one rank for another, at least
// findings.MaterialShare of the waiting rank's step and findings.MaterialWait per step),
// e.g. "Straggler: rank 1 makes rank 0 wait 9.720ms/step (68.4% of its median step); rank 1
// arrived last at 106 of 108 matched collectives (98.1%)"; otherwise it says the ranks are
// balanced, with the largest wait. "" when no collective was matched.
func stragglerLine(rr *breakdown.RankReport) string {
	if rr == nil || rr.Straggler < 0 || len(rr.Calls) == 0 {
		return ""
	}
	sk := findings.SkewOf(rr)
	if sk.Waiter < 0 {
		return ""
	}
	w, l := &rr.Devices[sk.Waiter], &rr.Devices[sk.Late]
	if !sk.Material {
		return fmt.Sprintf("Ranks balanced: the largest wait of one rank for another is rank %d's for rank %d, %s/step (%s of its median step), "+
			"under %s of the step or %s", w.Device, l.Device, breakdown.FormatDuration(int64(sk.Wait)),
			breakdown.FormatPercent(frac(int64(sk.Wait), int64(sk.Step))), breakdown.FormatPercent(findings.MaterialShare),
			breakdown.FormatDuration(int64(findings.MaterialWait)))
	}
	return fmt.Sprintf("Straggler: rank %d makes rank %d wait %s/step (%s of its median step); rank %d arrived last at %d of %d matched collectives (%s)",
		l.Device, w.Device, breakdown.FormatDuration(int64(sk.Wait)), breakdown.FormatPercent(frac(int64(sk.Wait), int64(sk.Step))),
		l.Device, l.LastArrivals, len(rr.Calls), breakdown.FormatPercent(frac(int64(l.LastArrivals), int64(len(rr.Calls)))))
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
					out[i] = rankSummarySentence(s, rs, r)
				}
			}
		}
	}
	return out
}

// rankSummarySentence joins a category's summary sentence (sum: its mean per step as the
// decode table prints it, and its share) with its rank sentence (rank: the matched calls
// over the aligned steps), labelled, so that each number is printed from one value: the
// first is the category's exclusive time over the summarised steps, the second the kernel
// time of the matched collectives over the aligned steps (every step of the phase,
// outliers included), as the rank table shows it. E.g. "allreduce: 9.764ms/step = 66.3% of
// the mean decode step; matched collectives over the 12 aligned steps: 8 calls/step,
// 9.764ms/step kernel time, of which 9.720ms waiting for rank 1".
func rankSummarySentence(sum, rank string, r *breakdown.Report) string {
	head, _, _ := strings.Cut(sum, ";")
	_, tail, _ := strings.Cut(rank, ": ")
	calls, rest, _ := strings.Cut(tail, ", ")
	per, rest, _ := strings.Cut(rest, ", ")
	outl := ""
	for i := range r.Devices {
		if len(r.Devices[i].Summary.Outliers.Steps) > 0 {
			outl = ", outliers included"
		}
	}
	n := len(r.Ranks.Steps)
	return fmt.Sprintf("%s; matched collectives over the %d aligned step%s%s: %s, %s kernel time, %s", head, n, plural(n), outl, calls, per, rest)
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
