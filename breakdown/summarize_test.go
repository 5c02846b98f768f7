package breakdown

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// TestGapSizes checks that idle gaps land in the four size classes, with the class
// boundaries (10µs, 100µs, 1ms) in the upper class.
func TestGapSizes(t *testing.T) {
	gaps := []nsys.Time{5_000, 9_999, 10_000, 50_000, 99_999, 100_000, 500_000, 999_999, 1_000_000, 5_000_000}
	want := [NumGapSizes]int{2, 3, 3, 2}
	g := newTGen(t)
	at := nsys.Time(1000)
	g.launch(1, 0, k(kernelclass.GEMM, 0, 7, at, at+1000))
	at += 1000
	var total time.Duration
	var wantNS [NumGapSizes]time.Duration
	for _, gap := range gaps {
		at += gap
		total += time.Duration(gap)
		wantNS[gapSizeOf(time.Duration(gap))] += time.Duration(gap)
		g.launch(1, at-100, k(kernelclass.Elementwise, 0, 7, at, at+1000))
		at += 1000
	}
	tr := g.trace()
	rep := mustSummarize(t, tr, Options{Steps: StepMethod{Method: MethodWhole}})
	s := devReport(t, rep, 0).Steps[0]
	if s.Gaps.Count != len(gaps) || s.Gaps.Total != total || s.Gaps.Sizes != want || s.Gaps.SizeNS != wantNS {
		t.Errorf("gaps %+v, want %d gaps, total %v, sizes %v, size ns %v", s.Gaps, len(gaps), total, want, wantNS)
	}
	if s.Exclusive[kernelclass.Idle] != total {
		t.Errorf("idle %v, want %v", s.Exclusive[kernelclass.Idle], total)
	}
	checkInvariants(t, tr, rep, Options{})
}

// TestGapHost checks what the host was doing during gaps: synchronizing (a synchronize
// call covers the gap), copying (a memcpy call), launching (a launch call), or nothing;
// a gap covered in part is split; when calls of several kinds overlap, synchronize wins
// over copy, and copy over launch. Calls of another process do not count.
func TestGapHost(t *testing.T) {
	g := newTGen(t)
	g.threadIn(9, 9000)
	// Kernels at [0,1000), [11000,12000), ... : gaps of 10µs each, at [1000+12000*i-..., ).
	gap := func(i int) (nsys.Time, nsys.Time) {
		s := nsys.Time(1000 + 11000*i)
		return s, s + 10_000
	}
	for i := 0; i <= 7; i++ {
		s := nsys.Time(11000 * i)
		g.kernel(k(kernelclass.GEMM, 0, 7, s, s+1000))
	}
	s0, e0 := gap(0)
	g.sync(1, s0-500, e0+500) // 0: synchronizing
	s1, e1 := gap(1)
	g.api(1, nsys.APILaunch, "cudaLaunchKernel", s1-10, e1) // 1: launching
	// 2: nothing.
	s3, e3 := gap(3)
	g.api(1, nsys.APIMemcpy, "cudaMemcpyAsync", s3, e3) // 3: copying
	s4, _ := gap(4)
	g.sync(1, s4, s4+4000) // 4: 4µs synchronizing, 6µs nothing
	s5, e5 := gap(5)
	g.api(1, nsys.APILaunch, "cudaLaunchKernel", s5, e5) // 5: sync on another thread wins over launch
	g.sync(2, s5+2000, s5+5000)
	g.api(3, nsys.APIMemcpy, "cudaMemcpy", s5+4000, s5+8000) //    and copy over launch
	s6, e6 := gap(6)
	g.sync(9, s6, e6) // 6: another process: nothing
	tr := g.trace()
	rep := mustSummarize(t, tr, Options{Steps: StepMethod{Method: MethodWhole}})
	st := devReport(t, rep, 0).Steps[0]
	var want [NumHostActivities]time.Duration
	want[HostSync] = 10_000 + 4000 + 3000
	want[HostLaunch] = 10_000 + 2000 + 2000
	want[HostCopy] = 10_000 + 3000
	want[HostNone] = 10_000 + 6000 + 10_000
	if st.Gaps.Count != 7 || st.Gaps.Total != 70_000 || st.Gaps.Host != want {
		t.Errorf("gaps %d, total %v, host %v; want 7, 70µs, %v", st.Gaps.Count, st.Gaps.Total, st.Gaps.Host, want)
	}
	if st.Exclusive[kernelclass.Idle] != st.Gaps.Total {
		t.Errorf("idle %v != gap total %v", st.Exclusive[kernelclass.Idle], st.Gaps.Total)
	}
	checkInvariants(t, tr, rep, Options{})
}

// TestGapsPerStep checks that gaps are split at step boundaries, that each step's gaps add
// up to its idle time, and that the summary sums them over the summarised steps.
func TestGapsPerStep(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	for i := 0; i < 4; i++ {
		l.step(kernelclass.GEMM, kernelclass.Elementwise, kernelclass.Attention)
		l.readBack()
		l.idle(nsys.Time(200_000 * (i + 1))) // host work between steps
	}
	tr := g.trace()
	rep := mustSummarize(t, tr, Options{Phase: AllSteps})
	d := devReport(t, rep, 0)
	if d.Method != MethodSync || len(d.Steps) != 4 {
		t.Fatalf("method %v with %d steps", d.Method, len(d.Steps))
	}
	var sum Gaps
	for _, s := range d.Steps {
		if s.Gaps.Total != s.Exclusive[kernelclass.Idle] {
			t.Errorf("step %d: gaps %v != idle %v", s.Index, s.Gaps.Total, s.Exclusive[kernelclass.Idle])
		}
		sum.add(&s.Gaps)
	}
	if d.Summary.Gaps != sum {
		t.Errorf("summary gaps %+v, want the sum %+v", d.Summary.Gaps, sum)
	}
	if want := float64(sum.Count) / 4; d.Summary.GapsPerStep != want {
		t.Errorf("gaps per step %v, want %v", d.Summary.GapsPerStep, want)
	}
	// The host work between steps is a gap in the earlier step, with no CUDA call.
	for i, s := range d.Steps[:3] {
		if s.Gaps.Sizes[Gap100usTo1ms] != 1 || s.Gaps.Host[HostNone] < time.Duration(200_000*(i+1)) {
			t.Errorf("step %d: gaps %+v", s.Index, s.Gaps)
		}
	}
	checkInvariants(t, tr, rep, Options{})
}

// TestSummary checks the per-phase summary: which steps it covers, medians and p90 with
// interpolation, shares, kernels and launches per step.
func TestSummary(t *testing.T) {
	g := newTGen(t)
	// A prefill step then three decode steps whose GEMM runs 100, 200, 300µs.
	for i, d := range []nsys.Time{1000, 100, 200, 300} {
		s := nsys.Time(i) * 10_000_000
		text := "decode_step"
		if i == 0 {
			text = "prefill"
		}
		g.nvtx(1, s, s+100, text)
		g.launch(1, s, k(kernelclass.GEMM, 0, 7, s+1000, s+1000+d*1000))
		g.launch(1, s+10, k(kernelclass.Elementwise, 0, 7, s+1000+d*1000, s+2000+d*1000))
	}
	tr := g.trace()
	rep := mustSummarize(t, tr, Options{})
	d := devReport(t, rep, 0)
	if d.Method != MethodNVTX || len(d.Steps) != 4 {
		t.Fatalf("method %v with %d steps", d.Method, len(d.Steps))
	}
	sm := d.Summary
	if sm.Phase != Decode || sm.Steps != 3 {
		t.Fatalf("summary of %d %v steps, want 3 decode", sm.Steps, sm.Phase)
	}
	// Decode steps 1 and 2 end where the next starts (10ms apart); the last ends at its
	// last kernel: walls 10ms, 10ms, 301µs.
	if sm.Median != 10*time.Millisecond || sm.P10 != 301_000+1_939_800 || sm.P90 != 10*time.Millisecond {
		t.Errorf("median %v p10 %v p90 %v", sm.Median, sm.P10, sm.P90)
	}
	gemm := sm.Categories[kernelclass.GEMM]
	if gemm.Median != 200*time.Microsecond || gemm.P90 != 280*time.Microsecond || gemm.KernelsPerStep != 1 ||
		gemm.CallsMedian != 1 || gemm.BusyPerCall != 200*time.Microsecond {
		t.Errorf("gemm summary %+v", gemm)
	}
	var share float64
	for _, cs := range sm.Categories {
		share += cs.Share
	}
	if share < 1-1e-12 || share > 1+1e-12 {
		t.Errorf("shares add up to %v", share)
	}
	if sm.KernelsPerStep != 2 || sm.LaunchesPerStp != 2 {
		t.Errorf("kernels/step %v launches/step %v", sm.KernelsPerStep, sm.LaunchesPerStp)
	}
	// --phase prefill and all phases.
	if p := devReport(t, mustSummarize(t, tr, Options{Phase: PrefillSteps}), 0).Summary; p.Phase != Prefill || p.Steps != 1 ||
		p.Categories[kernelclass.GEMM].Median != time.Millisecond {
		t.Errorf("prefill summary: %v, %d steps, gemm %v", p.Phase, p.Steps, p.Categories[kernelclass.GEMM].Median)
	}
	if a := devReport(t, mustSummarize(t, tr, Options{Phase: AllSteps}), 0).Summary; a.Phase != Unknown || a.Steps != 4 {
		t.Errorf("all-phase summary: %v, %d steps", a.Phase, a.Steps)
	}
}

// TestSummaryNoPhase checks that a summary of a phase without steps falls back to every
// step and says so in a warning.
func TestSummaryNoPhase(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	for i := 0; i < 3; i++ {
		l.step(decodeMix...)
		l.readBack()
	}
	rep := mustSummarize(t, g.trace(), Options{Phase: PrefillSteps})
	d := devReport(t, rep, 0)
	if d.Summary.Steps != 3 || d.Summary.Phase != Unknown {
		t.Errorf("summary of %d %v steps, want all 3", d.Summary.Steps, d.Summary.Phase)
	}
	var found bool
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w.Error(), "no prefill steps; summarising all 3 steps")
	}
	if !found {
		t.Errorf("warnings %v lack the fallback", rep.Warnings)
	}
}

// TestMultiDevice checks that devices are accounted separately: overlapping work on
// another device never owns time on this one.
func TestMultiDevice(t *testing.T) {
	g := newTGen(t)
	g.launch(1, 0, k(kernelclass.GEMM, 0, 7, 100, 1100))
	g.launch(1, 0, k(kernelclass.AllReduce, 1, 7, 100, 2100))
	g.launch(1, 10, k(kernelclass.Elementwise, 0, 7, 2100, 2200))
	g.launch(1, 10, k(kernelclass.AllReduce, 1, 7, 2100, 2200))
	tr := g.trace()
	rep := mustSummarize(t, tr, Options{Steps: StepMethod{Method: MethodWhole}})
	s0, s1 := devReport(t, rep, 0).Steps[0], devReport(t, rep, 1).Steps[0]
	if s0.Exclusive[kernelclass.GEMM] != 1000 || s0.Exclusive[kernelclass.AllReduce] != 0 || s0.Exclusive[kernelclass.Idle] != 1000 || s0.Wall() != 2100 {
		t.Errorf("device 0: %v", s0.Exclusive)
	}
	if s1.Exclusive[kernelclass.AllReduce] != 2100 || s1.Wall() != 2100 {
		t.Errorf("device 1: %v", s1.Exclusive)
	}
	checkInvariants(t, tr, rep, Options{})
}

// TestPriorities checks what account's bitmask of running categories relies on: category
// priorities are distinct and below 32.
func TestPriorities(t *testing.T) {
	seen := map[int]kernelclass.Category{}
	for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
		p := c.Priority()
		if p < 0 || p >= 32 {
			t.Errorf("%v: priority %d out of 0..31", c, p)
		}
		if o, ok := seen[p]; ok {
			t.Errorf("%v and %v share priority %d", c, o, p)
		}
		seen[p] = c
		if byPriority[p] != c {
			t.Errorf("byPriority[%d] = %v, want %v", p, byPriority[p], c)
		}
	}
}

// TestForcedMethodFindsNone checks that --steps graph, sync and periodic fail, as nvtx
// does, when they find no steps on any device: one error naming the method, not the whole
// trace as one step; and that on a two-device trace where the method finds steps on one
// device only, the other keeps the whole trace with a warning.
func TestForcedMethodFindsNone(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	l.step(kernelclass.GEMM, kernelclass.Attention, kernelclass.Elementwise)
	l.idle(100_000)
	l.step(kernelclass.Sampling)
	tr := g.trace()
	for _, tc := range []struct{ method, why string }{
		{"graph", "no CUDA graph launch cuts the GPU work into repeating steps"},
		{"sync", "no host synchronisation cuts the GPU work into repeating steps"},
		{"periodic", "the kernel sequence does not repeat"},
	} {
		rep, err := Summarize(tr, Options{Steps: mustParseSteps(t, tc.method)})
		var ns *NoStepsError
		want := "gen.sqlite: step method " + tc.method + " found no steps: " + tc.why
		if rep != nil || !errors.As(err, &ns) || ns.Method.String() != tc.method || err.Error() != want {
			t.Errorf("--steps %s: report %v, error %v, want %q", tc.method, rep != nil, err, want)
		}
	}

	// Two devices: read-backs cut device 0's loop, device 1 runs one long kernel sequence
	// with no sync of its own.
	g = newTGen(t)
	l = newLoop(g, 1, 0, 1000)
	for range 4 {
		l.step(decodeMix...)
		l.readBack()
	}
	g.kernel(k(kernelclass.GEMM, 1, 7, 5_000, 6_000))
	rep := mustSummarize(t, g.trace(), Options{Steps: mustParseSteps(t, "sync")})
	if d := devReport(t, rep, 0); d.Method != MethodSync || len(d.Steps) != 4 {
		t.Errorf("device 0: method %v, %d steps, want sync, 4", d.Method, len(d.Steps))
	}
	if d := devReport(t, rep, 1); d.Method != MethodWhole {
		t.Errorf("device 1: method %v, want whole", d.Method)
	}
	var ws []string
	for _, w := range rep.Warnings {
		ws = append(ws, w.Error())
	}
	if !slices.Contains(ws, "device 1: step method sync found no steps; the whole trace is one step") {
		t.Errorf("warnings %q lack device 1's", ws)
	}
}
