package breakdown_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// openFixture builds testdata/nsys/<name>.txtar into an export and opens it as the CLI
// does.
func openFixture(t *testing.T, name string) *nsys.Trace {
	t.Helper()
	ar := nsystest.Parse(t, filepath.Join("..", "testdata", "nsys", name+".txtar"))
	path := nsystest.Build(t, ar)
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := tr.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	return tr
}

// checkReport checks what holds for every report: exclusive time sums to the wall time
// of each step, busy time of each category is at least its exclusive time, and steps
// neither overlap nor run backwards.
func checkReport(t *testing.T, rep *breakdown.Report) {
	t.Helper()
	for _, d := range rep.Devices {
		for i, s := range d.Steps {
			var sum time.Duration
			for c := range kernelclass.NumCategories {
				sum += s.Exclusive[c]
				if c != kernelclass.Idle && s.Busy[c] < s.Exclusive[c] {
					t.Errorf("device %d step %d: %v busy %v < exclusive %v", d.Device, i, c, s.Busy[c], s.Exclusive[c])
				}
			}
			if sum != s.Wall() {
				t.Errorf("device %d step %d [%d, %d): exclusive times sum to %v, wall is %v", d.Device, i, s.Start, s.End, sum, s.Wall())
			}
			if s.End < s.Start {
				t.Errorf("device %d step %d ends (%d) before it starts (%d)", d.Device, i, s.End, s.Start)
			}
			if i > 0 && s.Start < d.Steps[i-1].End {
				t.Errorf("device %d step %d starts at %d, before step %d ends (%d)", d.Device, i, s.Start, i-1, d.Steps[i-1].End)
			}
		}
	}
}

// summarize runs Summarize with opt over every step (all phases) and checks the report.
func summarize(t *testing.T, tr *nsys.Trace, opt breakdown.Options) *breakdown.Report {
	t.Helper()
	opt.Phase = breakdown.AllSteps
	rep, err := breakdown.Summarize(tr, opt)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	checkReport(t, rep)
	return rep
}

func device(t *testing.T, rep *breakdown.Report, id nsys.DeviceID) *breakdown.DeviceReport {
	t.Helper()
	for i := range rep.Devices {
		if rep.Devices[i].Device == id {
			return &rep.Devices[i]
		}
	}
	t.Fatalf("no report for device %d", id)
	return nil
}

func stepStarts(d *breakdown.DeviceReport) string {
	var s []string
	for _, st := range d.Steps {
		s = append(s, fmt.Sprintf("[%d,%d)", st.Start, st.End))
	}
	return strings.Join(s, " ")
}

func kernelsIn(d *breakdown.DeviceReport) []int {
	var n []int
	for _, st := range d.Steps {
		n = append(n, st.TotalKernels())
	}
	return n
}

// TestOddCaptures runs odd but valid captures (testdata/nsys) through Summarize: each
// gives a report, whatever step method, and the accounting invariants hold.
func TestOddCaptures(t *testing.T) {
	methods := []string{"auto", "nvtx", "graph", "sync", "periodic", "whole", "nvtx:.*"}
	for _, tc := range []struct {
		fixture string
		check   func(t *testing.T, tr *nsys.Trace)
	}{
		{"negative-timestamps", func(t *testing.T, tr *nsys.Trace) {
			rep := summarize(t, tr, breakdown.Options{})
			d := device(t, rep, 0)
			if d.Method != breakdown.MethodNVTX {
				t.Errorf("method %v, want nvtx", d.Method)
			}
			if got, want := stepStarts(d), "[-9000,-4000) [-4000,500)"; got != want {
				t.Errorf("steps %s, want %s", got, want)
			}
			// [-9000,-8000) and [-7900,-7000) in [-9000,-4000): 3.1µs idle.
			if got := d.Steps[0].Exclusive[kernelclass.Idle]; got != 3100*time.Nanosecond {
				t.Errorf("step 0 idle %v, want 3.1µs", got)
			}
		}},
		{"zero-reversed", func(t *testing.T, tr *nsys.Trace) {
			// Kernels with start = end = 0 are dropped by the reader with a warning that
			// the report repeats.
			rep := summarize(t, tr, breakdown.Options{})
			var found bool
			for _, w := range rep.Warnings {
				if strings.HasPrefix(w.Error(), "dropped 3 of 5 kernel rows") {
					found = true
				}
			}
			if !found {
				t.Errorf("report warnings %q lack the dropped-kernels warning", rep.Warnings)
			}
			for _, st := range device(t, rep, 0).Steps {
				if st.Start == 0 {
					t.Errorf("a step starts at 0: a zero-timestamp row was kept")
				}
			}
		}},
		{"overlapping-streams", func(t *testing.T, tr *nsys.Trace) {
			rep := summarize(t, tr, breakdown.Options{Steps: breakdown.StepMethod{Method: breakdown.MethodWhole}})
			d := device(t, rep, 0)
			if len(d.Steps) != 1 {
				t.Fatalf("%d steps, want 1", len(d.Steps))
			}
			st := d.Steps[0]
			var busy time.Duration
			for c := range kernelclass.NumCategories {
				if c != kernelclass.Idle {
					busy += st.Busy[c]
				}
			}
			// Device 0: [100,400) [100,350) [100,600) [450,800): wall 700, busy 1400.
			if st.Wall() != 700 || busy != 1400 || st.Exclusive[kernelclass.Idle] != 0 {
				t.Errorf("wall %v busy %v idle %v, want 700ns 1.4µs 0s", st.Wall(), busy, st.Exclusive[kernelclass.Idle])
			}
		}},
		{"multi-process", func(t *testing.T, tr *nsys.Trace) {
			rep := summarize(t, tr, breakdown.Options{})
			// Two processes on device 0: one loop each, process 100's first.
			if len(rep.Devices) != 2 || rep.Devices[0].Device != 0 || rep.Devices[1].Device != 0 {
				t.Fatalf("%d device reports, want process 100's and 200's on device 0", len(rep.Devices))
			}
			d, o := &rep.Devices[0], &rep.Devices[1]
			if d.PID != 100 || o.PID != 200 || d.Processes != 2 || o.Processes != 2 {
				t.Errorf("pids %d, %d (of %d, %d processes), want 100, 200 of 2", d.PID, o.PID, d.Processes, o.Processes)
			}
			// Steps start at process 100's kernels (1000, 3000), not at process 200's
			// kernels with the same correlation ids (800, 2500).
			if got, want := stepStarts(d), "[1000,3000) [3000,4000)"; got != want {
				t.Errorf("steps %s, want %s", got, want)
			}
			// No step of process 100 holds process 200's all-reduces ([2500,2900) and
			// [3400,3800) fall in its steps' windows); process 200's loop holds all three.
			var own, other int
			for _, s := range d.Steps {
				own += s.Kernels[kernelclass.AllReduce]
			}
			for _, s := range o.Steps {
				other += s.Kernels[kernelclass.AllReduce]
				if s.PID != 200 {
					t.Errorf("process 200's step %d has pid %d", s.Index, s.PID)
				}
			}
			if own != 0 || other+o.Outside.Kernels[kernelclass.AllReduce] != 3 {
				t.Errorf("all-reduce kernels: %d in process 100's steps, %d in process 200's loop; want 0 and 3", own, other)
			}
		}},
		{"memcpy-only-device", func(t *testing.T, tr *nsys.Trace) {
			rep := summarize(t, tr, breakdown.Options{})
			if len(rep.Devices) != 2 {
				t.Fatalf("%d devices, want 2", len(rep.Devices))
			}
			d := device(t, rep, 1)
			if d.GPU != "NVIDIA H200" {
				t.Errorf("device 1 GPU %q", d.GPU)
			}
			var mem, other time.Duration
			var kernels int
			for _, st := range d.Steps {
				kernels += st.TotalKernels()
				for c := range kernelclass.NumCategories {
					switch c {
					case kernelclass.Memory:
						mem += st.Exclusive[c]
					case kernelclass.Idle:
					default:
						other += st.Exclusive[c]
					}
				}
			}
			if kernels != 0 || other != 0 || mem != 1200 {
				t.Errorf("device 1: %d kernels, %v non-memory time, %v memory; want 0, 0s, 1.2µs", kernels, other, mem)
			}
		}},
		{"nvtx-unclosed", func(t *testing.T, tr *nsys.Trace) {
			rep := summarize(t, tr, breakdown.Options{})
			d := device(t, rep, 0)
			if d.Method != breakdown.MethodNVTX {
				t.Errorf("method %v, want nvtx", d.Method)
			}
			if got, want := stepStarts(d), "[1000,3000) [3000,5500)"; got != want {
				t.Errorf("steps %s, want %s", got, want)
			}
			if got := kernelsIn(d); fmt.Sprint(got) != "[2 3]" {
				t.Errorf("kernels per step %v, want [2 3]", got)
			}
		}},
		{"sliced-capture", func(t *testing.T, tr *nsys.Trace) {
			rep := summarize(t, tr, breakdown.Options{})
			d := device(t, rep, 0)
			if got, want := stepStarts(d), "[1000,3000) [3000,6000)"; got != want {
				t.Errorf("steps %s, want %s", got, want)
			}
			// The kernel launched before the capture starts in no step.
			if got := kernelsIn(d); fmt.Sprint(got) != "[2 2]" {
				t.Errorf("kernels per step %v, want [2 2]", got)
			}
		}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			tr := openFixture(t, tc.fixture)
			tc.check(t, tr)
			// Every step method gives a report (or, for nvtx on a capture without
			// step ranges, an error naming the file), never a panic.
			for _, m := range methods {
				for _, phase := range []breakdown.PhaseSelection{breakdown.DecodeSteps, breakdown.PrefillSteps} {
					sm, perr := steps.ParseStepMethod(m)
					if perr != nil {
						t.Fatal(perr)
					}
					rep, err := breakdown.Summarize(tr, breakdown.Options{Steps: sm, Phase: phase, Skip: 1})
					if err != nil {
						if !strings.HasPrefix(err.Error(), tr.Path+": ") {
							t.Errorf("--steps %s: error %q does not name the file", m, err)
						}
						continue
					}
					checkReport(t, rep)
				}
			}
			breakdown.KernelStats(tr, breakdown.Options{})
		})
	}
}
