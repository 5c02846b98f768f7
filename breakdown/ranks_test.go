package breakdown

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// Multi-rank timelines built so that the arrivals, the waits and the straggler of every
// collective are known by construction.

const (
	rkGEMM      = "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT"
	rkAllReduce = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096UL>)"
	rkAllGather = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096UL>)"
	rkCustomAR  = "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)"
)

// rkSpec describes a generated multi-rank trace: every step of every rank runs, per call,
// a GEMM whose length differs per rank (so ranks reach the collective at different times),
// then the collective, which ends on every rank at the same time, transfer after the last
// arrival; a device-to-host copy ends each step (sync step detection).
type rkSpec struct {
	ranks, steps, calls int
	gpu                 string
	// late is how much longer rank d's GEMM before call j of step s runs.
	late func(s, j, d int) nsys.Time
	// offset delays rank d's start of step s (step-time spread).
	offset func(s, d int) nsys.Time
	// op is the kernel name of call j; rkAllReduce when nil.
	op func(j int) string
	// drop, when set, leaves out rank d's collective of call j in step s.
	drop func(s, j, d int) bool
	// extraFirst gives rank extraRank an extra step before the others start.
	extraFirst bool
	extraRank  int
}

// rkWant is what the construction says.
type rkWant struct {
	wait      [][][]time.Duration // [step][call][rank]
	transfer  [][][]time.Duration
	last      [][]int           // [step][call]
	walls     [][]time.Duration // [step][rank]
	collTotal []time.Duration   // per rank: summed collective kernel durations
}

func rkBuild(tb testing.TB, sp rkSpec) (*nsys.Trace, rkWant) {
	tb.Helper()
	tr := &nsys.Trace{Path: "ranks.sqlite", HasKernelTable: true}
	names := map[string]nsys.NameID{}
	name := func(s string) nsys.NameID {
		if id, ok := names[s]; ok {
			return id
		}
		id := nsys.NameID(len(tr.Names))
		tr.Names = append(tr.Names, s)
		names[s] = id
		return id
	}
	corr := make([]uint32, sp.ranks)
	kernel := func(d int, n string, s, e nsys.Time) {
		corr[d]++
		tr.AddKernel(nsys.Kernel{Start: s, End: e, Correlation: corr[d]},
			nsys.Site{Device: nsys.DeviceID(d), Stream: 7, Name: name(n), Proc: nsys.ProcID(d)})
	}
	for d := 0; d < sp.ranks; d++ {
		tr.Devices = append(tr.Devices, nsys.Device{ID: nsys.DeviceID(d), Name: sp.gpu})
		tr.Procs = append(tr.Procs, int64(1000+d))
	}
	if sp.offset == nil {
		sp.offset = func(int, int) nsys.Time { return 0 }
	}
	if sp.op == nil {
		sp.op = func(int) string { return rkAllReduce }
	}
	var w rkWant
	w.collTotal = make([]time.Duration, sp.ranks)
	starts := make([][]nsys.Time, sp.ranks) // [rank][step]
	lastEnd := make([]nsys.Time, sp.ranks)
	base := nsys.Time(1_000_000)
	if sp.extraFirst {
		d := sp.extraRank
		// The loop's GEMM in its time (a GEMM that ran 8x as long would hold a prompt's rows).
		kernel(d, rkGEMM, base, base+5_000)
		kernel(d, rkAllReduce, base+5_000, base+50_000)
		tr.Memops = append(tr.Memops, nsys.Memop{Start: base + 50_010, End: base + 50_500, Device: nsys.DeviceID(d),
			Kind: nsys.MemcpyDtoH, Proc: nsys.ProcID(d), Bytes: 8})
		base += 200_000
	}
	t := make([]nsys.Time, sp.ranks)
	arrive := make([]nsys.Time, sp.ranks)
	for s := 0; s < sp.steps; s++ {
		w.wait = append(w.wait, nil)
		w.transfer = append(w.transfer, nil)
		w.last = append(w.last, nil)
		for d := range t {
			t[d] = base + sp.offset(s, d)
			starts[d] = append(starts[d], t[d])
		}
		for j := 0; j < sp.calls; j++ {
			var last nsys.Time
			lastRank := -1
			for d := range t {
				ge := t[d] + 5_000 + sp.late(s, j, d)
				kernel(d, rkGEMM, t[d], ge)
				arrive[d] = ge
				if sp.drop != nil && sp.drop(s, j, d) {
					continue
				}
				if lastRank < 0 || ge > last {
					last, lastRank = ge, d
				}
			}
			end := last + 3_000 + nsys.Time(100*j)
			ws := make([]time.Duration, sp.ranks)
			xs := make([]time.Duration, sp.ranks)
			for d := range t {
				if sp.drop != nil && sp.drop(s, j, d) {
					t[d] = arrive[d]
					continue
				}
				kernel(d, sp.op(j), arrive[d], end)
				ws[d], xs[d] = last.Sub(arrive[d]), end.Sub(last)
				w.collTotal[d] += end.Sub(arrive[d])
				t[d] = end
			}
			w.wait[s] = append(w.wait[s], ws)
			w.transfer[s] = append(w.transfer[s], xs)
			w.last[s] = append(w.last[s], lastRank)
		}
		next := base
		for d := range t {
			tr.Memops = append(tr.Memops, nsys.Memop{Start: t[d] + 10, End: t[d] + 510, Device: nsys.DeviceID(d),
				Kind: nsys.MemcpyDtoH, Proc: nsys.ProcID(d), Bytes: 8})
			lastEnd[d] = t[d] + 510
			next = max(next, t[d])
		}
		base = next + 100_000
	}
	for s := 0; s < sp.steps; s++ {
		walls := make([]time.Duration, sp.ranks)
		for d := range walls {
			end := lastEnd[d]
			if s+1 < sp.steps {
				end = starts[d][s+1]
			}
			walls[d] = end.Sub(starts[d][s])
		}
		w.walls = append(w.walls, walls)
	}
	slices.SortStableFunc(tr.Kernels, func(a, b nsys.Kernel) int {
		sa, sb := tr.SiteOf(a), tr.SiteOf(b)
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(sa.Device, sb.Device), cmp.Compare(sa.Stream, sb.Stream))
	})
	slices.SortStableFunc(tr.Memops, func(a, b nsys.Memop) int { return cmp.Compare(a.Start, b.Start) })
	return tr, w
}

func rkSummarize(tb testing.TB, tr *nsys.Trace, opt Options) *Report {
	tb.Helper()
	rep, err := Summarize(tr, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return rep
}

// rkCheckCalls checks that every matched call's arrivals split each kernel exactly into
// wait and transfer, that waits are measured to the last arrival, and that the per-step
// and per-rank totals add up the calls.
func rkCheckCalls(t *testing.T, tr *nsys.Trace, rr *RankReport) {
	t.Helper()
	n := len(rr.Devices)
	wait, transfer := make([]time.Duration, n), make([]time.Duration, n)
	lasts := make([]int, n)
	stepWait := make([][]time.Duration, len(rr.Steps))
	for i := range stepWait {
		stepWait[i] = make([]time.Duration, n)
	}
	for ci, c := range rr.Calls {
		if len(c.Arrivals) != n {
			t.Fatalf("call %d: %d arrivals, want %d", ci, len(c.Arrivals), n)
		}
		for d, a := range c.Arrivals {
			k := tr.Kernels[a.Kernel]
			if tr.SiteOf(k).Device != rr.Devices[d].Device || k.Start != a.Start || k.End != a.End {
				t.Fatalf("call %d rank %d: arrival %+v is not kernel %+v of the device", ci, d, a, k)
			}
			if a.Wait+a.Transfer != k.Duration() {
				t.Errorf("call %d rank %d: wait %d + transfer %d != duration %d", ci, d, a.Wait, a.Transfer, k.Duration())
			}
			if a.Wait < 0 || a.Transfer < 0 {
				t.Errorf("call %d rank %d: negative wait %d or transfer %d", ci, d, a.Wait, a.Transfer)
			}
			if a.Start > c.LastArrival() {
				t.Errorf("call %d: rank %d starts after the last arrival", ci, d)
			}
			if want := min(c.LastArrival().Sub(a.Start), k.Duration()); a.Wait != want {
				t.Errorf("call %d rank %d: wait %d, want %d", ci, d, a.Wait, want)
			}
			wait[d] += a.Wait
			transfer[d] += a.Transfer
			stepWait[c.Step][d] += a.Wait
		}
		lasts[c.Last]++
		if c.Arrivals[c.Last].Wait != 0 {
			t.Errorf("call %d: the last rank waited %d", ci, c.Arrivals[c.Last].Wait)
		}
	}
	for d, rd := range rr.Devices {
		if rd.Wait != wait[d] || rd.Transfer != transfer[d] || rd.LastArrivals != lasts[d] || rd.CollectivesMatched != len(rr.Calls) {
			t.Errorf("rank %d totals %v/%v/%d/%d, calls say %v/%v/%d/%d", d, rd.Wait, rd.Transfer, rd.LastArrivals,
				rd.CollectivesMatched, wait[d], transfer[d], lasts[d], len(rr.Calls))
		}
		if rd.AllReduce.Time+rd.Collective.Time != rd.Wait+rd.Transfer || rd.AllReduce.Wait+rd.Collective.Wait != rd.Wait {
			t.Errorf("rank %d: category split does not add up: %+v %+v", d, rd.AllReduce, rd.Collective)
		}
		var wf time.Duration
		for _, x := range rd.WaitFor {
			wf += x
		}
		if wf != rd.Wait || rd.WaitFor[d] != 0 {
			t.Errorf("rank %d: WaitFor %v does not split wait %v (or waits for itself)", d, rd.WaitFor, rd.Wait)
		}
		for i, st := range rr.Steps {
			if st.Wait[d] != stepWait[i][d] {
				t.Errorf("step %d rank %d: wait %v, calls say %v", i, d, st.Wait[d], stepWait[i][d])
			}
		}
	}
}

func TestRanksTwo(t *testing.T) {
	sp := rkSpec{ranks: 2, steps: 4, calls: 8, gpu: "NVIDIA H200",
		// Rank 1 reaches three calls in four 2000+100j ns late; rank 0 reaches the others 700 ns late.
		late: func(s, j, d int) nsys.Time {
			switch {
			case d == 1 && j%4 != 0:
				return 2000 + nsys.Time(100*j)
			case d == 0 && j%4 == 0:
				return 700
			}
			return 0
		},
		// Rank 1 starts step s 100s ns late (less than 700 ns, so rank 0 stays last at call 0).
		offset: func(s, d int) nsys.Time { return nsys.Time(d * 100 * s) },
	}
	tr, want := rkBuild(t, sp)
	rep := rkSummarize(t, tr, Options{})
	rr := rep.Ranks
	if rr == nil {
		t.Fatal("no rank report for two devices")
	}
	if len(rr.Steps) != 4 || rr.AlignedBy != "index" || rr.Unmatched != 0 || len(rr.Warnings) != 0 {
		t.Fatalf("steps %d aligned by %s, unmatched %d, warnings %v", len(rr.Steps), rr.AlignedBy, rr.Unmatched, rr.Warnings)
	}
	if len(rr.Calls) != 4*8 {
		t.Fatalf("%d matched calls, want 32", len(rr.Calls))
	}
	rkCheckCalls(t, tr, rr)
	rkCheckWant(t, rr, want)
	// By hand: call 1 of a step, rank 0 waits 2000+100 ns for rank 1; call 0, rank 1 waits 700 ns.
	if c := rr.Calls[1]; c.Last != 1 || c.Arrivals[0].Wait != 2100 || c.Arrivals[1].Wait != 0 {
		t.Errorf("call 1: last %d, waits %v/%v; want rank 1 last, 2100/0", c.Last, c.Arrivals[0].Wait, c.Arrivals[1].Wait)
	}
	if c := rr.Calls[0]; c.Last != 0 || c.Arrivals[1].Wait != 700 {
		t.Errorf("call 0: last %d, rank 1 wait %v; want rank 0 last, 700", c.Last, c.Arrivals[1].Wait)
	}
	if rr.Straggler != 1 || rr.Devices[1].LastArrivals != 24 || rr.Devices[0].LastArrivals != 8 {
		t.Errorf("straggler %d, last arrivals %d/%d; want rank 1, 8/24", rr.Straggler, rr.Devices[0].LastArrivals, rr.Devices[1].LastArrivals)
	}
	// Rank 0 waits 2000+100j for j in 1..7 except 4 in every step.
	var w0 time.Duration
	for _, j := range []int{1, 2, 3, 5, 6, 7} {
		w0 += time.Duration(2000 + 100*j)
	}
	if got := rr.Devices[0].Wait; got != 4*w0 {
		t.Errorf("rank 0 wait %v, want %v", got, 4*w0)
	}
	// Rank 1 waits 700 ns at call 4, and 700-100s ns at call 0, having started step s 100s late.
	if got, want := rr.Devices[1].Wait, time.Duration(4*700+700+600+500+400); got != want {
		t.Errorf("rank 1 wait %v, want %v", got, want)
	}
	if rr.Devices[0].WaitFor[1] != rr.Devices[0].Wait || rr.Devices[0].AllReduce.Calls != 32 || rr.Devices[0].Collective.Calls != 0 {
		t.Errorf("rank 0: %+v", rr.Devices[0])
	}
	// Rank 1 starts each step 100 ns later than the one before, so its steps 0-2 are 100 ns
	// longer than rank 0's; both end the last step together, which rank 1 began 300 ns late.
	if rr.Steps[0].Spread != 100 || rr.Steps[3].Spread != 300 || rr.SpreadMedian != 100 || rr.SpreadP90 != 240 {
		t.Errorf("spreads %v %v, median %v, p90 %v; want 100ns, 300ns, 100ns, 240ns", rr.Steps[0].Spread, rr.Steps[3].Spread, rr.SpreadMedian, rr.SpreadP90)
	}
	for d := range rr.Devices {
		if rr.Devices[d].MedianStep != Quantile([]time.Duration{want.walls[0][d], want.walls[1][d], want.walls[2][d], want.walls[3][d]}, 0.5) {
			t.Errorf("rank %d median step %v", d, rr.Devices[d].MedianStep)
		}
	}
}

// rkCheckWant compares the report with the construction.
func rkCheckWant(t *testing.T, rr *RankReport, want rkWant) {
	t.Helper()
	ci := 0
	n := len(rr.Devices)
	for s := range want.wait {
		for j := range want.wait[s] {
			c := rr.Calls[ci]
			if c.Step != s || c.Last != want.last[s][j] {
				t.Errorf("step %d call %d: matched as step %d, last rank %d; want last %d", s, j, c.Step, c.Last, want.last[s][j])
			}
			for d := 0; d < n; d++ {
				if c.Arrivals[d].Wait != want.wait[s][j][d] || c.Arrivals[d].Transfer != want.transfer[s][j][d] {
					t.Errorf("step %d call %d rank %d: wait/transfer %v/%v, want %v/%v", s, j, d,
						c.Arrivals[d].Wait, c.Arrivals[d].Transfer, want.wait[s][j][d], want.transfer[s][j][d])
				}
			}
			ci++
		}
		var spread time.Duration
		if s < len(rr.Steps) {
			spread = slices.Max(want.walls[s]) - slices.Min(want.walls[s])
			if rr.Steps[s].Spread != spread {
				t.Errorf("step %d: spread %v, want %v", s, rr.Steps[s].Spread, spread)
			}
			for d := 0; d < n; d++ {
				if rr.Steps[s].Wall[d] != want.walls[s][d] {
					t.Errorf("step %d rank %d: wall %v, want %v", s, d, rr.Steps[s].Wall[d], want.walls[s][d])
				}
			}
		}
	}
	for d := 0; d < n; d++ {
		if got := rr.Devices[d].Wait + rr.Devices[d].Transfer; got != want.collTotal[d] {
			t.Errorf("rank %d: wait+transfer %v, collective kernels %v", d, got, want.collTotal[d])
		}
	}
}

func TestRanksEight(t *testing.T) {
	sp := rkSpec{ranks: 8, steps: 3, calls: 10, gpu: "NVIDIA B200",
		// Rank 5 is late by 4 µs except at every fifth call, where rank 2 is 5 µs late;
		// 10d ns keeps every arrival distinct.
		late: func(s, j, d int) nsys.Time {
			l := nsys.Time(10 * d)
			if d == 5 && j%5 != 0 {
				l += 4000
			}
			if d == 2 && j%5 == 0 {
				l += 5000
			}
			return l
		},
		offset: func(s, d int) nsys.Time { return nsys.Time((d * 7 * s) % 50) },
		op: func(j int) string {
			if j == 3 {
				return rkAllGather
			}
			return rkAllReduce
		},
	}
	tr, want := rkBuild(t, sp)
	rr := rkSummarize(t, tr, Options{}).Ranks
	if rr == nil || len(rr.Devices) != 8 || len(rr.Steps) != 3 || len(rr.Calls) != 30 {
		t.Fatalf("rank report %+v", rr)
	}
	rkCheckCalls(t, tr, rr)
	rkCheckWant(t, rr, want)
	if rr.Straggler != 5 || rr.Devices[5].LastArrivals != 24 || rr.Devices[2].LastArrivals != 6 {
		t.Errorf("straggler %d with %d, rank 2 %d; want rank 5 with 24, rank 2 6", rr.Straggler, rr.Devices[5].LastArrivals, rr.Devices[2].LastArrivals)
	}
	for d := range rr.Devices {
		if d != 5 && d != 2 && rr.Devices[d].LastArrivals != 0 {
			t.Errorf("rank %d arrived last %d times", d, rr.Devices[d].LastArrivals)
		}
	}
	// Rank 0 waits for rank 5 (4000+50 ns) at 8 calls a step and for rank 2 (5000+20 ns) at 2.
	if got, want := rr.Devices[0].WaitFor[5], 3*8*time.Duration(4050); got != want {
		t.Errorf("rank 0 waited %v for rank 5, want %v", got, want)
	}
	// (At call 0 rank 2 also starts the step 14s ns after rank 0.)
	if got, want := rr.Devices[0].WaitFor[2], 3*2*time.Duration(5020)+14+28; got != want {
		t.Errorf("rank 0 waited %v for rank 2, want %v", got, want)
	}
	// The all-gather (call 3) is a collective, matched on its own.
	if rd := rr.Devices[0]; rd.Collective.Calls != 3 || rd.AllReduce.Calls != 27 {
		t.Errorf("rank 0: %d collective and %d all-reduce calls, want 3 and 27", rd.Collective.Calls, rd.AllReduce.Calls)
	}
	for _, c := range rr.Calls {
		if (c.Op == "AllGather") != (c.Category == kernelclass.Collective) || (c.Op != "AllGather" && c.Op != "AllReduce") {
			t.Errorf("call op %q category %v", c.Op, c.Category)
		}
	}
}

func TestRanksSkipAndPhase(t *testing.T) {
	sp := rkSpec{ranks: 2, steps: 5, calls: 3, late: func(s, j, d int) nsys.Time { return nsys.Time(d * 1000) }}
	tr, _ := rkBuild(t, sp)
	rr := rkSummarize(t, tr, Options{Skip: 2}).Ranks
	if len(rr.Steps) != 3 || rr.Steps[0].Steps[0] != 2 || rr.Steps[0].Steps[1] != 2 || len(rr.Calls) != 9 {
		t.Fatalf("after --skip 2: %d steps starting at %v, %d calls", len(rr.Steps), rr.Steps[0].Steps, len(rr.Calls))
	}
	rkCheckCalls(t, tr, rr)
	if rr.Devices[0].Wait != 9*1000 || rr.Devices[1].LastArrivals != 9 {
		t.Errorf("rank 0 wait %v, rank 1 last %d", rr.Devices[0].Wait, rr.Devices[1].LastArrivals)
	}
	// One device: no rank view.
	d := nsys.DeviceID(1)
	if r := rkSummarize(t, tr, Options{Device: &d}); r.Ranks != nil {
		t.Errorf("rank report with one device: %+v", r.Ranks)
	}
}

func TestRanksUnmatched(t *testing.T) {
	sp := rkSpec{ranks: 2, steps: 3, calls: 4, late: func(s, j, d int) nsys.Time { return nsys.Time(d * 500) },
		// Rank 1 has no kernel for the last call of step 1.
		drop: func(s, j, d int) bool { return s == 1 && j == 3 && d == 1 }}
	tr, _ := rkBuild(t, sp)
	rep := rkSummarize(t, tr, Options{})
	rr := rep.Ranks
	if rr.Unmatched != 1 || len(rr.Calls) != 11 {
		t.Fatalf("unmatched %d, matched %d; want 1, 11", rr.Unmatched, len(rr.Calls))
	}
	rkCheckCalls(t, tr, rr)
	if !rkHasWarning(rep, "1 collective kernel not present on every device") {
		t.Errorf("no unmatched warning in %v", rep.Warnings)
	}
}

func TestRanksTimeAlignment(t *testing.T) {
	sp := rkSpec{ranks: 2, steps: 4, calls: 2, late: func(s, j, d int) nsys.Time { return nsys.Time(d * 800) },
		extraFirst: true, extraRank: 1}
	tr, want := rkBuild(t, sp)
	rep := rkSummarize(t, tr, Options{})
	rr := rep.Ranks
	if len(rep.Devices[0].Steps) != 4 || len(rep.Devices[1].Steps) != 5 {
		t.Fatalf("steps %d/%d, want 4/5", len(rep.Devices[0].Steps), len(rep.Devices[1].Steps))
	}
	if rr.AlignedBy != "time" || len(rr.Steps) != 4 {
		t.Fatalf("aligned by %q, %d steps", rr.AlignedBy, len(rr.Steps))
	}
	for i, st := range rr.Steps {
		if st.Steps[0] != i || st.Steps[1] != i+1 {
			t.Errorf("aligned step %d pairs steps %v", i, st.Steps)
		}
	}
	rkCheckCalls(t, tr, rr)
	rkCheckWant(t, rr, want)
	if !rkHasWarning(rep, "different numbers of summarised steps (device 0: 4, device 1: 5); steps aligned by time overlap") {
		t.Errorf("no alignment warning in %v", rep.Warnings)
	}
}

func TestRanksWaitClipped(t *testing.T) {
	// Rank 0's kernel ends before rank 1 arrives: its wait is its whole duration.
	tr := &nsys.Trace{Path: "clip.sqlite", HasKernelTable: true, Names: []string{rkCustomAR},
		Devices: []nsys.Device{{ID: 0}, {ID: 1}}, Procs: []int64{1, 2},
		Sites: []nsys.Site{{Device: 0, Proc: 0}, {Device: 1, Proc: 1}},
		Kernels: []nsys.Kernel{
			{Start: 100, End: 200, Correlation: 1, Site: 0},
			{Start: 500, End: 650, Correlation: 1, Site: 1},
		}}
	rr := rkSummarize(t, tr, Options{}).Ranks
	if len(rr.Calls) != 1 {
		t.Fatalf("%d calls", len(rr.Calls))
	}
	a := rr.Calls[0].Arrivals
	if a[0].Wait != 100 || a[0].Transfer != 0 || a[1].Wait != 0 || a[1].Transfer != 150 || rr.Calls[0].Last != 1 {
		t.Errorf("arrivals %+v", a)
	}
	if rr.Calls[0].Op != kernelclass.Normalize(rkCustomAR) || rr.Calls[0].Category != kernelclass.AllReduce {
		t.Errorf("op %q category %v", rr.Calls[0].Op, rr.Calls[0].Category)
	}
}

func rkHasWarning(rep *Report, sub string) bool {
	for _, w := range rep.Warnings {
		if strings.Contains(w.Error(), sub) {
			return true
		}
	}
	return false
}

// TestRanksPublicDDP matches the all-reduces and broadcasts of a public 2-GPU capture
// (overlapped DDP on 2 RTX 3090): per step, wait plus transfer of the matched kernels is
// exactly their summed duration on each rank.
func TestRanksPublicDDP(t *testing.T) {
	path := nsystest.PublicTrace(t, "cs336a2-lizhieffe__ddp53_profile.sqlite")
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := rkSummarize(t, tr, Options{})
	rr := rep.Ranks
	if rr == nil || len(rr.Devices) != 2 || len(rr.Steps) == 0 {
		t.Fatalf("rank report %+v", rr)
	}
	rkCheckCalls(t, tr, rr)
	// Every all-reduce and broadcast kernel is on both ranks the same number of times, so
	// every one is matched, and per step the split adds up to the kernels' durations.
	if rr.Unmatched != 0 {
		t.Errorf("%d unmatched", rr.Unmatched)
	}
	for d := range rr.Devices {
		dr := &rep.Devices[d]
		for si, st := range rr.Steps {
			var kernels time.Duration
			var n int
			s := stepByIndex(dr, st.Steps[d])
			for _, k := range tr.Kernels {
				if tr.SiteOf(k).Device == dr.Device && k.Start >= s.Start && k.Start < s.End && strings.HasPrefix(tr.Name(k), "ncclDevKernel_") {
					kernels += k.Duration()
					n++
				}
			}
			if st.Wait[d]+st.Transfer[d] != kernels || n != st.Calls {
				t.Errorf("rank %d step %d: wait %v + transfer %v != %v of %d NCCL kernels (%d matched)", d, si,
					st.Wait[d], st.Transfer[d], kernels, n, st.Calls)
			}
		}
		rd := rr.Devices[d]
		t.Logf("rank %d (%s): %d calls, wait %v (%.1f%%), transfer %v, last %d times; allreduce %d calls wait %v of %v, collective %d calls wait %v of %v",
			rd.Device, rd.GPU, rd.CollectivesMatched, rd.Wait, 100*float64(rd.Wait)/float64(rd.Wait+rd.Transfer), rd.Transfer, rd.LastArrivals,
			rd.AllReduce.Calls, rd.AllReduce.Wait, rd.AllReduce.Time, rd.Collective.Calls, rd.Collective.Wait, rd.Collective.Time)
	}
	t.Logf("straggler rank %d; spread median %v", rr.Straggler, rr.SpreadMedian)
}

func stepByIndex(d *DeviceReport, index int) *Step {
	for i := range d.Steps {
		if d.Steps[i].Index == index {
			return &d.Steps[i]
		}
	}
	return nil
}

func TestDatasheetBandwidth(t *testing.T) {
	for _, c := range []struct {
		gpu  string
		bw   float64
		what string
	}{
		{"NVIDIA H200", 4.8e12, "H200 datasheet HBM3e bandwidth"},
		{"NVIDIA H200 NVL", 4.8e12, "H200 datasheet HBM3e bandwidth"},
		{"NVIDIA H100 80GB HBM3", 3.35e12, "H100 SXM datasheet HBM3 bandwidth"},
		{"NVIDIA H100 SXM5 80GB", 3.35e12, "H100 SXM datasheet HBM3 bandwidth"},
		{"NVIDIA H100 PCIe", 2.0e12, "H100 PCIe datasheet HBM2e bandwidth"},
		{"NVIDIA B200", 8.0e12, "B200 datasheet HBM3e bandwidth"},
		{"NVIDIA RTX PRO 6000 Blackwell Server Edition", 1.792e12, "RTX PRO 6000 Blackwell datasheet GDDR7 bandwidth"},
		{"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 1.792e12, "RTX PRO 6000 Blackwell datasheet GDDR7 bandwidth"},
		{"NVIDIA GH200 480GB", 0, ""},
		{"NVIDIA GB200", 0, ""},
		{"NVIDIA H100 NVL", 0, ""},
		{"NVIDIA GeForce RTX 3090", 0, ""},
		{"", 0, ""},
	} {
		bw, what, ok := DatasheetBandwidth(c.gpu)
		if bw != c.bw || what != c.what || ok != (c.bw > 0) {
			t.Errorf("DatasheetBandwidth(%q) = %g, %q, %v; want %g, %q", c.gpu, bw, what, ok, c.bw, c.what)
		}
	}
}

func TestSOL(t *testing.T) {
	sp := rkSpec{ranks: 2, steps: 3, calls: 2, gpu: "NVIDIA H200", late: func(s, j, d int) nsys.Time { return 0 }}
	tr, _ := rkBuild(t, sp)

	rep := rkSummarize(t, tr, Options{SOLBytes: 34_200_000_000, Batch: 64})
	s := rep.Devices[0].SOL
	if s == nil {
		t.Fatal("no SOL")
	}
	// 34.2 GB / 4.8 TB/s = 7.125 ms.
	if s.Floor != 7_125_000*time.Nanosecond || s.Bandwidth != 4.8e12 || s.Source != SourceDatasheet || s.Datasheet != "H200 datasheet HBM3e bandwidth" || s.Bytes != 34_200_000_000 {
		t.Errorf("floor %v bandwidth %g source %v %q", s.Floor, s.Bandwidth, s.Source, s.Datasheet)
	}
	m := rep.Devices[0].Summary.Median
	if s.Measured != m || math.Abs(s.Ratio-float64(m)/7.125e6) > 1e-12 || math.Abs(s.Efficiency-7.125e6/float64(m)) > 1e-12 {
		t.Errorf("measured %v ratio %g efficiency %g", s.Measured, s.Ratio, s.Efficiency)
	}
	if math.Abs(s.TokensPerSec-1e9/float64(m)) > 1e-9 || math.Abs(s.TotalTokensPerSec-64e9/float64(m)) > 1e-6 || s.Batch != 64 {
		t.Errorf("tokens/s %g total %g", s.TokensPerSec, s.TotalTokensPerSec)
	}

	rep = rkSummarize(t, tr, Options{SOLBytes: 16 << 30, Bandwidth: 3.35e12})
	s = rep.Devices[1].SOL
	if want := time.Duration(math.Round(float64(16<<30) / 3.35e12 * 1e9)); s.Floor != want || s.Source != SourceBandwidth {
		t.Errorf("floor %v source %v, want %v, the bandwidth given", s.Floor, s.Source, want)
	}
	rep = rkSummarize(t, tr, Options{SOLStep: 7130 * time.Microsecond})
	if s = rep.Devices[0].SOL; s.Floor != 7130*time.Microsecond || s.Source != SourceStep || s.Bytes != 0 || s.TotalTokensPerSec != 0 {
		t.Errorf("--sol-step: %+v", s)
	}
	if rep = rkSummarize(t, tr, Options{}); rep.Devices[0].SOL != nil {
		t.Errorf("SOL without a floor: %+v", rep.Devices[0].SOL)
	}

	// An unknown GPU without a bandwidth is an OptionError for SOLBytes wrapping
	// ErrNoBandwidth.
	tr.Devices[1].Name = "NVIDIA GeForce RTX 3090"
	_, err := Summarize(tr, Options{SOLBytes: 1e9})
	if !errors.Is(err, ErrNoBandwidth) || !strings.Contains(err.Error(), "device 1 (NVIDIA GeForce RTX 3090)") {
		t.Errorf("unknown GPU: %v", err)
	}
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Option != OptSOLBytes {
		t.Errorf("unknown GPU: %T %v, want an OptionError for SOLBytes", err, err)
	}
	if _, err := Summarize(tr, Options{SOLBytes: 1e9, SOLStep: time.Millisecond}); !errors.As(err, &oe) {
		t.Errorf("SOLStep with SOLBytes: error %v, want an OptionError", err)
	}
}
