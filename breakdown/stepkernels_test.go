package breakdown_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// summarised returns the steps a device's summary covers: the decode steps, outliers left out.
func summarised(t *testing.T, d *breakdown.DeviceReport) []breakdown.Step {
	t.Helper()
	sel, _, _ := breakdown.SelectSteps(d.Steps, breakdown.DecodeSteps)
	var out []breakdown.Step
	for _, s := range sel {
		if !slices.Contains(d.Summary.Outliers.Steps, s.Index) {
			out = append(out, s)
		}
	}
	if len(out) != d.Summary.Steps {
		t.Fatalf("device %d: %d summarised steps, the summary says %d", d.Device, len(out), d.Summary.Steps)
	}
	return out
}

// TestStepKernelsAddUp checks the top-kernels table of the summarised steps on the real
// captures: per device, its totals per category add up to the busy time of those steps'
// categories, and its counts to the steps' activity counts, to the nanosecond; graph
// replays traced at graph level are a row of their own; and the devices' tables sum to the
// report's.
func TestStepKernelsAddUp(t *testing.T) {
	for _, name := range []string{"tp2-moe-eager", "tp2-moe-graph", "tp2-moe-graph-serve", "hf-qwen3moe-compile-graphlevel", "dense-eager"} {
		t.Run(name, func(t *testing.T) {
			rep := captureReport(t, name, breakdown.Options{})
			var all time.Duration
			for i := range rep.Devices {
				d := &rep.Devices[i]
				var busy [kernelclass.NumCategories]time.Duration
				var count [kernelclass.NumCategories]int
				for _, s := range summarised(t, d) {
					for c := range busy {
						busy[c] += s.Busy[c]
						count[c] += s.Kernels[c]
					}
				}
				var got [kernelclass.NumCategories]time.Duration
				var gotN [kernelclass.NumCategories]int
				graphRows := 0
				for _, k := range d.StepKernels {
					got[k.Category] += k.Total
					gotN[k.Category] += k.Count
					all += k.Total
					if k.Name == breakdown.GraphReplayName {
						graphRows++
						if k.Category != kernelclass.UntracedGraph {
							t.Errorf("device %d: graph replays as %s", d.Device, k.Category)
						}
					}
				}
				busy[kernelclass.Idle], count[kernelclass.Idle] = 0, 0
				if got != busy || gotN != count {
					t.Errorf("device %d: step kernels per category %v (counts %v), the steps' busy time %v (counts %v)", d.Device, got, gotN, busy, count)
				}
				if want := min(1, count[kernelclass.UntracedGraph]); graphRows != want {
					t.Errorf("device %d: %d graph replay rows, want %d (%d replays)", d.Device, graphRows, want, count[kernelclass.UntracedGraph])
				}
			}
			var sum time.Duration
			for _, k := range rep.StepKernels {
				sum += k.Total
			}
			if sum != all || !slices.IsSortedFunc(rep.StepKernels, func(a, b breakdown.KernelStat) int { return int(b.Total - a.Total) }) {
				t.Errorf("report's step kernels sum to %v, the devices' to %v (or not sorted)", sum, all)
			}
		})
	}
}

// TestStepKernelsTP2Eager: on the 2-GPU eager capture, rank 0 waits in all-reduce in
// every decode step, but most of the whole trace's all-reduce time is outside them (prefill
// and the outlier-free decode steps hold a fraction): the steps view's all-reduce row is
// not the whole-trace total.
func TestStepKernelsTP2Eager(t *testing.T) {
	rep := captureReport(t, "tp2-moe-eager", breakdown.Options{})
	whole, steps := rep.Kernels[0], rep.StepKernels[0]
	if whole.Category != kernelclass.AllReduce || steps.Category != kernelclass.AllReduce || whole.Name != steps.Name {
		t.Fatalf("top rows: whole %s %s, steps %s %s", whole.Category, whole.Name, steps.Category, steps.Name)
	}
	if steps.Total >= whole.Total || steps.Count >= whole.Count {
		t.Errorf("all-reduce over the summarised steps %v (%d calls) is not below the whole trace's %v (%d calls)", steps.Total, steps.Count, whole.Total, whole.Count)
	}
	// 8 all-reduce calls per decode step per rank, as the decode table says.
	n := rep.Devices[0].Summary.Steps + rep.Devices[1].Summary.Steps
	if steps.Count != 8*n {
		t.Errorf("all-reduce calls in the summarised steps: %d, want 8 x %d", steps.Count, n)
	}
}
