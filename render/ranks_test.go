package render

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
	"github.com/stepstat/stepstat/render/schema"
)

// rkReport is a two-rank report built by hand: 10 aligned decode steps of 9.84 ms on rank 0
// and 9.9 ms on rank 1, 16 all-reduces a step, rank 0 waiting 31 ms a step for rank 1.
func rkReport() *breakdown.Report {
	const ms = time.Millisecond
	r := &breakdown.Report{Path: "tp2.sqlite", Meta: nsys.Meta{NsysVersion: "2025.3.2.0"}}
	for dev, step := range []time.Duration{9840 * time.Microsecond, 9900 * time.Microsecond} {
		d := breakdown.DeviceReport{Device: nsys.DeviceID(dev), GPU: "NVIDIA H200", Method: breakdown.MethodSync, MethodDetail: "sync"}
		for i := range 10 {
			at := nsys.Time(i) * nsys.Time(20*ms)
			d.Steps = append(d.Steps, breakdown.Step{Index: i, Phase: breakdown.Decode, Start: at, End: at + nsys.Time(step)})
		}
		sm := &d.Summary
		sm.Phase, sm.Steps, sm.Median, sm.P10, sm.P90, sm.Mean = breakdown.Decode, 10, step, step, step, step
		sm.Categories[kernelclass.AllReduce] = breakdown.CategorySummary{Median: 3 * ms, Mean: step * 3 / 10, Share: 0.3, KernelsPerStep: 16, CallsMedian: 16, BusyPerCall: 2337600}
		sm.Categories[kernelclass.GEMM] = breakdown.CategorySummary{Median: 6 * ms, Mean: step * 6 / 10, Share: 0.6, KernelsPerStep: 100, CallsMedian: 100, BusyPerCall: 60 * time.Microsecond}
		sm.Categories[kernelclass.Idle] = breakdown.CategorySummary{Median: ms, Mean: step - step*3/10 - step*6/10, Share: 0.1}
		r.Devices = append(r.Devices, d)
	}
	rr := &breakdown.RankReport{AlignedBy: "index", Straggler: 1, SpreadMedian: 60 * time.Microsecond, SpreadP90: 80 * time.Microsecond}
	rr.Devices = []breakdown.RankDevice{
		{Device: 0, GPU: "NVIDIA H200", MedianStep: 9840 * time.Microsecond, CollectivesMatched: 160, Wait: 310 * ms, Transfer: 64 * ms,
			LastArrivals: 10, WaitFor: []time.Duration{0, 310 * ms},
			AllReduce:  breakdown.RankComm{Calls: 160, Time: 374 * ms, Wait: 310 * ms, Transfer: 64 * ms, WaitFor: []time.Duration{0, 310 * ms}},
			Collective: breakdown.RankComm{WaitFor: []time.Duration{0, 0}}},
		{Device: 1, GPU: "NVIDIA H200", MedianStep: 9900 * time.Microsecond, CollectivesMatched: 160, Wait: 2 * ms, Transfer: 64 * ms,
			LastArrivals: 150, WaitFor: []time.Duration{2 * ms, 0},
			AllReduce:  breakdown.RankComm{Calls: 160, Time: 66 * ms, Wait: 2 * ms, Transfer: 64 * ms, WaitFor: []time.Duration{2 * ms, 0}},
			Collective: breakdown.RankComm{WaitFor: []time.Duration{0, 0}}},
	}
	for i := range 10 {
		rr.Steps = append(rr.Steps, breakdown.RankStep{Steps: []int{i, i}, Wall: []time.Duration{9840 * time.Microsecond, 9900 * time.Microsecond},
			Spread: 60 * time.Microsecond, Calls: 16, Wait: []time.Duration{31 * ms, 200 * time.Microsecond},
			Transfer: []time.Duration{6400 * time.Microsecond, 6400 * time.Microsecond}, LastArrivals: []int{1, 15}})
	}
	rr.Calls = make([]breakdown.CollectiveCall, 160)
	r.Ranks = rr
	return r
}

func rkText(t *testing.T, r *breakdown.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := Text(&b, findings.Of(r), TextOptions{Width: MaxTextLine}); err != nil {
		t.Fatal(err)
	}
	return unwrapped(b.String()) // the sentences whole, as written before wrapping
}

func TestRanksText(t *testing.T) {
	out := rkText(t, rkReport())
	for _, want := range []string{
		// The decode table's mean first, then the matched calls (a synthetic report: their
		// kernel time is not the steps' exclusive time), labelled as such.
		"  allreduce: 2.952ms/step = 30.0% of the mean decode step; matched collectives over the 10 aligned steps: 16 calls/step, 37.40ms/step kernel time, of which 31.00ms waiting for rank 1\n",
		"  allreduce: 2.970ms/step = 30.0% of the mean decode step; matched collectives over the 10 aligned steps: 16 calls/step, 6.600ms/step kernel time, of which 200.0µs waiting for rank 0\n",
		"  gemm: 5.904ms/step = 60.0% of the mean decode step; 100.0 calls/step x 60.00µs busy each\n",
		"Ranks: 2 devices, 10 aligned steps (by index), 160 collectives matched on every rank\n",
		"Step spread across ranks: median 60.00µs  p90 80.00µs\n",
		"rank median step allreduce/step collective/step  wait/step transfer/step wait share     times last\n",
		"   0     9.840ms        37.40ms             0ns    31.00ms       6.400ms      82.9%     10 (6.25%)\n",
		"   1     9.900ms        6.600ms             0ns    200.0µs       6.400ms      3.03%    150 (93.8%)\n",
		// rank 0 waits 31.00ms/step for rank 1: material (the synthetic step is shorter than the wait)
		"Straggler: rank 1 makes rank 0 wait 31.00ms/step (315.0% of its median step); rank 1 arrived last at 150 of 160 matched collectives (93.8%)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "16.0 calls/step x 2.338ms busy each") {
		t.Errorf("multi-rank text keeps the single-rank allreduce sentence:\n%s", out)
	}
	if strings.Index(out, "Ranks:") < strings.Index(out, "Device 1") {
		t.Error("rank table before the device sections")
	}

	// One device: the single-rank sentence, no rank table.
	r := rkReport()
	r.Ranks = nil
	r.Devices = r.Devices[:1]
	out = rkText(t, r)
	if !strings.Contains(out, "  allreduce: 2.952ms/step = 30.0% of the mean decode step; 16.0 calls/step x 2.338ms busy each\n") || strings.Contains(out, "Ranks:") {
		t.Errorf("single-rank text:\n%s", out)
	}
}

func TestRankSentenceShares(t *testing.T) {
	r := rkReport()
	// Three ranks: rank 0 waited 3/4 of its time for rank 1 and 1/4 for rank 2.
	cm := &r.Ranks.Devices[0].AllReduce
	cm.WaitFor = []time.Duration{0, 232500 * time.Microsecond, 77500 * time.Microsecond}
	r.Ranks.Devices = append(r.Ranks.Devices, breakdown.RankDevice{Device: 2})
	s, ok := rankSentence(r.Ranks, 0, kernelclass.AllReduce)
	if want := "allreduce: 16 calls/step, 37.40ms/step, of which 31.00ms waiting, 75.0% of it for rank 1"; !ok || s != want {
		t.Errorf("got %q, want %q", s, want)
	}
	if _, ok := rankSentence(r.Ranks, 0, kernelclass.Collective); ok {
		t.Error("sentence for a category without matched calls")
	}
	r.Ranks.Devices[1].AllReduce.Wait = 0
	if s, _ := rankSentence(r.Ranks, 1, kernelclass.AllReduce); s != "allreduce: 16 calls/step, 6.600ms/step, none of it waiting for another rank" {
		t.Errorf("no wait: %q", s)
	}
}

func TestSOLText(t *testing.T) {
	r := rkReport()
	r.Ranks = nil
	r.Devices = r.Devices[:1]
	d := &r.Devices[0]
	d.SOL = &breakdown.SOL{Floor: 7125 * time.Microsecond, Bytes: 34_200_000_000, Bandwidth: 4.8e12,
		Source: breakdown.SourceDatasheet, Datasheet: "H200 datasheet HBM3e bandwidth", Measured: 9840 * time.Microsecond, Ratio: 9.84 / 7.125, Efficiency: 7.125 / 9.84,
		TokensPerSec: 1e3 / 9.84, Batch: 64, TotalTokensPerSec: 64e3 / 9.84}
	want := "Speed of light: floor 7.125ms = 34.2 GB / 4.8 TB/s (H200 datasheet HBM3e bandwidth); " +
		"measured median decode step 9.840ms = 1.38x floor, 72.4% efficient; 101.6 tokens/s per sequence, 6,504 tokens/s total at batch 64\n"
	if out := rkText(t, r); !strings.Contains(out, want) {
		t.Errorf("text lacks\n%s\n%s", want, out)
	}
	d.SOL = &breakdown.SOL{Floor: 7130 * time.Microsecond, Source: breakdown.SourceStep, Measured: 9840 * time.Microsecond,
		Ratio: 9.84 / 7.13, Efficiency: 7.13 / 9.84, TokensPerSec: 1e3 / 9.84}
	want = "Speed of light: floor 7.130ms (--sol-step); measured median decode step 9.840ms = 1.38x floor, 72.5% efficient; 101.6 tokens/s per sequence\n"
	if out := rkText(t, r); !strings.Contains(out, want) {
		t.Errorf("text lacks\n%s\n%s", want, out)
	}
}

func TestUnitsSOL(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{bytesText(34_200_000_000), "34.2 GB"},
		{bytesText(16 << 30), "17.18 GB"},
		{bytesText(512_000_000), "512 MB"},
		{bytesText(12), "12 B"},
		{bandwidthText(4.8e12), "4.8 TB/s"},
		{bandwidthText(1.792e12), "1.792 TB/s"},
		{bandwidthText(936e9), "936 GB/s"},
		{countText(101.626), "101.6"},
		{countText(6504.07), "6,504"},
		{countText(1234567.8), "1,234,568"},
		{countText(999.96), "1000.0"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestRanksJSON(t *testing.T) {
	r := rkReport()
	r.Devices[0].SOL = &breakdown.SOL{Floor: 7125 * time.Microsecond, Bytes: 34_200_000_000, Bandwidth: 4.8e12,
		Source: breakdown.SourceDatasheet, Datasheet: "H200 datasheet HBM3e bandwidth", Measured: 9840 * time.Microsecond, Ratio: 9.84 / 7.125, Efficiency: 7.125 / 9.84,
		TokensPerSec: 1e3 / 9.84, Batch: 64, TotalTokensPerSec: 64e3 / 9.84}
	var b bytes.Buffer
	if err := JSON(&b, findings.Of(r)); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Devices []struct {
			SOL *schema.SOLJSON `json:"sol"`
		} `json:"devices"`
		Ranks *schema.RanksJSON `json:"ranks"`
	}
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Ranks == nil || v.Ranks.AlignedSteps != 10 || v.Ranks.MatchedCalls != 160 || v.Ranks.Straggler == nil ||
		v.Ranks.Straggler.Device != 1 || v.Ranks.Straggler.LastArrivals != 150 || v.Ranks.Spread.MedianNS != 60000 {
		t.Fatalf("ranks %+v", v.Ranks)
	}
	d0 := v.Ranks.Devices[0]
	if d0.WaitNS != 310e6 || d0.TransferNS != 64e6 || d0.AllReduce.WaitForNS[1] != 310e6 || d0.WaitShare != 0.828877 {
		t.Errorf("rank 0 %+v", d0)
	}
	if st := v.Ranks.Steps[3]; st.WaitNS[0] != 31e6 || st.LastArrivals[1] != 15 || st.SpreadNS != 60000 || st.Steps[1] != 3 {
		t.Errorf("step 3 %+v", st)
	}
	if s := v.Devices[0].SOL; s == nil || s.FloorNS != 7125000 || s.Bytes != 34_200_000_000 || s.BandwidthBytesPerS != 4.8e12 ||
		s.Source != "H200 datasheet HBM3e bandwidth" || s.Efficiency != 0.724085 || s.TotalTokensPerS != 6504.065 {
		t.Errorf("sol %+v", s)
	}
	if v.Devices[1].SOL != nil {
		t.Error("sol on a device without a floor")
	}
	// One device: no "ranks" key at all.
	r.Ranks = nil
	b.Reset()
	if err := JSON(&b, findings.Of(r)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `"ranks"`) {
		t.Error(`"ranks" in a report without a rank view`)
	}
}

// TestRanksPublicText renders the rank view of a public 2-GPU capture (DDP on two RTX
// 3090s): the table, the straggler and the rank sentences.
func TestRanksPublicText(t *testing.T) {
	path := nsystest.PublicTrace(t, "cs336a2-lizhieffe__ddp53_profile.sqlite")
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := breakdown.Summarize(tr, breakdown.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := rkText(t, r)
	for _, want := range []string{
		"Ranks: 2 devices, 1 aligned step (by index), 230 collectives matched on every rank\n",
		"Straggler: rank 1 makes rank 0 wait 181.7ms/step (11.2% of its median step); rank 1 arrived last at 198 of 230 matched collectives (86.1%)\n",
		"  allreduce: 61.02ms/step = 3.76% of the mean step; matched collectives over the 1 aligned step: 119 calls/step, 61.02ms/step kernel time, of which 33.87ms waiting for rank 1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// TestRankTableAddsUp checks the text rank table of the 2-GPU captures under the statistic
// it names: per rank, the means per aligned step of the matched all-reduce and other
// collective time add up to wait + transfer, to the printed rounding.
func TestRankTableAddsUp(t *testing.T) {
	for _, name := range []string{"tp2-moe-eager", "tp2-moe-graph-nvtx", "hf-qwen3moe-tp2"} {
		r := traceReport(t, filepath.Join("..", "testdata", "traces", name+".sqlite.gz"), breakdown.Options{})
		var buf bytes.Buffer
		if err := Text(&buf, findings.Of(r), TextOptions{Width: MaxTextLine}); err != nil {
			t.Fatal(err)
		}
		rows, in := 0, false
		for _, line := range strings.Split(buf.String(), "\n") {
			f := strings.Fields(line)
			switch {
			case strings.HasPrefix(line, "Per rank, means per aligned step"):
				in = true
			case in && len(f) > 0 && f[0] == "rank":
			case in && len(f) >= 7 && f[0] != "Straggler:" && f[0] != "Ranks":
				var comm, split, slack float64
				for i, cell := range f[2:6] {
					v, h := printed(t, cell)
					if i < 2 {
						comm += v
					} else {
						split += v
					}
					slack += h
				}
				if math.Abs(comm-split) > slack*(1+1e-9) {
					t.Errorf("%s rank %s: allreduce + collective %g, wait + transfer %g; more than the rounding (%g) apart", name, f[0], comm, split, slack)
				}
				rows++
			default:
				in = false
			}
		}
		if rows != 2 {
			t.Errorf("%s: %d rank rows found, want 2:\n%s", name, rows, buf.String())
		}
	}
}
