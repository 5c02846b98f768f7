package breakdown_test

import (
	"context"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// waitShare runs the rank analysis on a 2-GPU capture and checks, for every matched
// collective, that each rank's wait + transfer is its kernel's duration to the nanosecond,
// and per step and rank that the waits and transfers add up to the step's all-reduce and
// collective kernels. It returns the share of collective time spent waiting, over all
// ranks, and the straggler's device.
func waitShare(t *testing.T, name string) (float64, int) {
	t.Helper()
	path := nsystest.GunzipInto(t, nsystest.CapturePath(name), t.TempDir())
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := breakdown.Summarize(tr, breakdown.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rr := rep.Ranks
	if rr == nil || len(rr.Devices) != 2 {
		t.Fatalf("%s: no 2-rank analysis", name)
	}
	if rr.AlignedBy != "index" || len(rr.Steps) != 12 || rr.Unmatched != 0 {
		t.Errorf("%s: %d steps aligned by %s, %d unmatched; want 12 decode steps by index, none unmatched",
			name, len(rr.Steps), rr.AlignedBy, rr.Unmatched)
	}
	// 8 all-reduces and the all-gather of the logits per decode step.
	if want := 12 * 9; len(rr.Calls) != want {
		t.Errorf("%s: %d matched calls, want %d", name, len(rr.Calls), want)
	}
	perStep := make([][2]time.Duration, len(rr.Steps))
	for _, c := range rr.Calls {
		for d, a := range c.Arrivals {
			k := tr.Kernels[a.Kernel]
			if a.Wait+a.Transfer != k.Duration() || a.Wait < 0 || a.Transfer < 0 {
				t.Fatalf("%s: step %d %s #%d rank %d: wait %d + transfer %d != duration %d",
					name, c.Step, c.Op, c.Seq, d, a.Wait, a.Transfer, k.Duration())
			}
			perStep[c.Step][d] += a.Wait + a.Transfer
		}
	}
	for g, st := range rr.Steps {
		for d := range rr.Devices {
			s := rep.Devices[d].Steps[st.Steps[d]]
			comm := s.Busy[kernelclass.AllReduce] + s.Busy[kernelclass.Collective]
			if perStep[g][d] != comm || st.Wait[d]+st.Transfer[d] != comm {
				t.Errorf("%s: step %d rank %d: matched %v, wait+transfer %v, collective kernels %v",
					name, g, d, perStep[g][d], st.Wait[d]+st.Transfer[d], comm)
			}
		}
	}
	var wait, all time.Duration
	for _, d := range rr.Devices {
		wait += d.Wait
		all += d.Wait + d.Transfer
	}
	t.Logf("%s: wait share %.1f%%; rank 0 %.1f%%, rank 1 %.1f%%; rank %d last at %d of %d calls", name,
		100*float64(wait)/float64(all), 100*float64(rr.Devices[0].Wait)/float64(rr.Devices[0].Wait+rr.Devices[0].Transfer),
		100*float64(rr.Devices[1].Wait)/float64(rr.Devices[1].Wait+rr.Devices[1].Transfer),
		rr.Straggler, rr.Devices[rr.Straggler].LastArrivals, len(rr.Calls))
	return float64(wait) / float64(all), rr.Straggler
}

// TestRanksOnCaptures is the rank analysis on the project's own 2-GPU captures: exact
// wait/transfer accounting, the rank that launches last, and a much smaller wait share with
// CUDA graphs than in eager mode (where one rank's Python launch overhead keeps the other
// waiting).
func TestRanksOnCaptures(t *testing.T) {
	eager, straggler := waitShare(t, "tp2-moe-eager")
	graph, _ := waitShare(t, "tp2-moe-graph")
	if straggler != 1 {
		t.Errorf("eager: straggler rank %d, want 1 (it launches last in this capture)", straggler)
	}
	if !(eager > 0.9 && graph < eager/1.5) {
		t.Errorf("wait share: eager %.1f%%, graph %.1f%%; want eager over 90%% and graph much smaller", 100*eager, 100*graph)
	}
}
