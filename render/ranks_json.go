package render

import (
	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/render/schema"
)

func nsSlice[T ~int64](xs []T) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = int64(x)
	}
	return out
}

func rankCommJSON(c *breakdown.RankComm) schema.RankCommJSON {
	return schema.RankCommJSON{Calls: c.Calls, NS: int64(c.Time), WaitNS: int64(c.Wait), TransferNS: int64(c.Transfer),
		WaitForNS: nsSlice(c.WaitFor)}
}

// ranksJSON builds the "ranks" object; nil for a report of one device.
func ranksJSON(rr *breakdown.RankReport) *schema.RanksJSON {
	if rr == nil {
		return nil
	}
	out := &schema.RanksJSON{AlignedBy: rr.AlignedBy, AlignedSteps: len(rr.Steps), MatchedCalls: len(rr.Calls),
		UnmatchedKernels: rr.Unmatched, Spread: schema.SpreadJSON{MedianNS: int64(rr.SpreadMedian), P90NS: int64(rr.SpreadP90)},
		Devices: []schema.RankDeviceJSON{}, Steps: []schema.RankStepJSON{}}
	if rr.Straggler >= 0 && len(rr.Calls) > 0 {
		d := &rr.Devices[rr.Straggler]
		out.Straggler = &schema.StragglerJSON{Device: int(d.Device), LastArrivals: d.LastArrivals,
			Share: round6(frac(int64(d.LastArrivals), int64(len(rr.Calls))))}
	}
	if sk := findings.SkewOf(rr); sk.Waiter >= 0 {
		out.Skew = &schema.SkewJSON{Waiter: int(rr.Devices[sk.Waiter].Device), Late: int(rr.Devices[sk.Late].Device), WaitNS: int64(sk.Wait),
			StepNS: int64(sk.Step), Material: sk.Material}
	}
	for i := range rr.Devices {
		d := &rr.Devices[i]
		out.Devices = append(out.Devices, schema.RankDeviceJSON{Device: int(d.Device), GPU: d.GPU, MedianStepNS: int64(d.MedianStep),
			CollectivesMatched: d.CollectivesMatched, WaitNS: int64(d.Wait), TransferNS: int64(d.Transfer),
			WaitShare: round6(frac(int64(d.Wait), int64(d.Wait+d.Transfer))), LastArrivals: d.LastArrivals,
			WaitForNS: nsSlice(d.WaitFor), AllReduce: rankCommJSON(&d.AllReduce), Collective: rankCommJSON(&d.Collective)})
	}
	for i := range rr.Steps {
		s := &rr.Steps[i]
		out.Steps = append(out.Steps, schema.RankStepJSON{Steps: s.Steps, WallNS: nsSlice(s.Wall), SpreadNS: int64(s.Spread),
			Calls: s.Calls, WaitNS: nsSlice(s.Wait), TransferNS: nsSlice(s.Transfer), LastArrivals: s.LastArrivals})
	}
	return out
}

// solJSON builds a device's "sol" object; nil without a floor.
func solJSON(s *breakdown.SOL) *schema.SOLJSON {
	if s == nil {
		return nil
	}
	return &schema.SOLJSON{FloorNS: int64(s.Floor), Bytes: s.Bytes, BandwidthBytesPerS: s.Bandwidth, Source: solSource(s),
		MeasuredNS: int64(s.Measured), Ratio: round6(s.Ratio), Efficiency: round6(s.Efficiency),
		TokensPerS: round3(s.TokensPerSec), Batch: s.Batch, TotalTokensPerS: round3(s.TotalTokensPerSec)}
}
