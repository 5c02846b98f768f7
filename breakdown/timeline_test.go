package breakdown_test

import (
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// TestStepTimelines checks the kept steps of real captures against the accounting of the
// same steps: the work that starts in the step is the step's activity count per category,
// the gaps add up to its idle time, the host lane holds launches, and with two ranks both
// lanes show the same aligned step, the median's wall time no more than the slowest's; also
// with graphs traced at graph level, and with the whole trace as one step.
func TestStepTimelines(t *testing.T) {
	whole, err := steps.ParseStepMethod("whole")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opt  breakdown.Options
	}{{"tp2-moe-eager", breakdown.Options{}}, {"dense-eager", breakdown.Options{}}, {"tp2-moe-graph", breakdown.Options{}},
		{"moe-graph", breakdown.Options{}}, {"hf-qwen3moe-compile-graphlevel", breakdown.Options{}},
		{"tp2-moe-eager", breakdown.Options{Steps: whole, Phase: breakdown.AllSteps}}} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			rep := captureReport(t, name, tc.opt)
			if len(rep.Timelines) == 0 {
				t.Fatal("no step timelines")
			}
			if rep.Timelines[0].Which != "median" {
				t.Errorf("first timeline is %q, want median", rep.Timelines[0].Which)
			}
			var walls []time.Duration
			for _, st := range rep.Timelines {
				if got, want := len(st.Lanes), len(rep.Devices); got != want {
					t.Fatalf("%s: %d lanes, want one per device (%d)", st.Which, got, want)
				}
				if rr := rep.Ranks; rr != nil {
					for d, l := range st.Lanes {
						if want := rr.Steps[st.Aligned].Steps[d]; l.Step != want {
							t.Errorf("%s: device %d shows step %d, aligned step %d is %d there", st.Which, l.Device, l.Step, st.Aligned, want)
						}
					}
				}
				var wall time.Duration
				for d, l := range st.Lanes {
					s := stepOf(t, &rep.Devices[d], l.Step)
					wall = max(wall, s.Wall())
					var starts [kernelclass.NumCategories]int
					for _, a := range l.Activities {
						if a.End <= s.Start || a.Start >= s.End {
							t.Errorf("%s device %d: activity %s [%d, %d) outside the step [%d, %d)", st.Which, l.Device, a.Name, a.Start, a.End, s.Start, s.End)
						}
						if a.Start >= s.Start {
							starts[a.Category]++
						}
					}
					if starts != s.Kernels {
						t.Errorf("%s device %d step %d: activities starting in the step by category %v, the step counts %v", st.Which, l.Device, s.Index, starts, s.Kernels)
					}
					var idle time.Duration
					for _, g := range l.Gaps {
						idle += g.End.Sub(g.Start)
					}
					if idle != s.Exclusive[kernelclass.Idle] {
						t.Errorf("%s device %d step %d: gaps add up to %v, the step's idle is %v", st.Which, l.Device, s.Index, idle, s.Exclusive[kernelclass.Idle])
					}
					launches := 0
					for _, c := range l.Calls {
						if c.Kind == nsys.APILaunch || c.Kind == nsys.APIGraphLaunch {
							launches++
						}
						if c.End <= s.Start || c.Start >= s.End {
							t.Errorf("call %s not in flight in the step", c.Name)
						}
					}
					if launches == 0 {
						t.Errorf("%s device %d step %d: no launch call on the host lane", st.Which, l.Device, s.Index)
					}
					if l.Truncated {
						t.Errorf("%s device %d: a decode step truncated", st.Which, l.Device)
					}
				}
				walls = append(walls, wall)
			}
			if len(walls) == 2 && walls[0] > walls[1] {
				t.Errorf("median step %v is longer than the slowest %v", walls[0], walls[1])
			}
		})
	}
}

func stepOf(t *testing.T, d *breakdown.DeviceReport, index int) *breakdown.Step {
	t.Helper()
	for i := range d.Steps {
		if d.Steps[i].Index == index {
			return &d.Steps[i]
		}
	}
	t.Fatalf("device %d has no step %d", d.Device, index)
	return nil
}
