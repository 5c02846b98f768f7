package breakdown_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// runCapture returns a decompressed copy of a 2-GPU capture: NAME of testdata/traces
// (.sqlite.gz) or of the test corpus's truth captures (nsystest.TruthCapture).
func runCapture(t *testing.T, name, dir string) string {
	t.Helper()
	gz := filepath.Join("..", "testdata", "traces", name+".sqlite.gz")
	if _, err := os.Stat(gz); err == nil {
		return nsystest.GunzipInto(t, gz, dir)
	}
	return nsystest.TruthCapture(t, name, dir)
}

// devicePIDs returns the process (pid) that ran the kernels of device 0 and of device 1.
func devicePIDs(t *testing.T, tr *nsys.Trace) [2]int64 {
	t.Helper()
	var pids [2]int64
	for _, k := range tr.Kernels {
		s := tr.Sites[k.Site]
		if s.Device == 0 || s.Device == 1 {
			pids[s.Device] = (tr.Procs[s.Proc] >> 24) & 0xFFFFFF
		}
	}
	if pids[0] == 0 || pids[1] == 0 || pids[0] == pids[1] {
		t.Fatalf("want one process per device, got pids %v", pids)
	}
	return pids
}

func openMerged(t *testing.T, paths []string) (*nsys.Trace, error) {
	t.Helper()
	return openMergedWith(t, paths, nsys.MergeOptions{Refine: breakdown.CollectiveOffsets(nil)})
}

// openMergedWith merges with opt: without Refine, the files are placed by their session
// starts and only summarizeRun's steps refine them.
func openMergedWith(t *testing.T, paths []string, opt nsys.MergeOptions) (*nsys.Trace, error) {
	t.Helper()
	var ts []*nsys.Trace
	for _, p := range paths {
		tr, err := nsys.Open(context.Background(), p, nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tr)
	}
	return nsys.MergeRun("run", ts, opt)
}

// TestRunSplitCaptures splits real 2-GPU captures into one file per process, as if each
// rank had been profiled on its own: the second file's session starts 1.5 s earlier (its
// timestamps are 1.5 s larger) and its host clock reads 3.7 ms ahead. Merged, the run must
// find the skew from the matched collectives (within the uncertainty it states) and give the
// single file's rank view: the same aligned steps and matched calls, each rank's wait and
// transfer within the offset's uncertainty per call, the same last arrivals except at calls
// whose ranks arrived closer together than the uncertainty, the same straggler, and the
// same per-device summaries.
func TestRunSplitCaptures(t *testing.T) {
	const shift, skew = int64(1500 * time.Millisecond), int64(3700 * time.Microsecond)
	for _, name := range []string{"tp2-moe-eager", "tp2-moe-graph-nvtx", "hf-qwen3moe-tp2",
		"tp2_eager_nvtx", "tp2_eager_simple", "tp2_graph_nvtx_ll", "tp2_graph_default", "hf_tp2_eager"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			src := runCapture(t, name, dir)
			whole, err := nsys.Open(context.Background(), src, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			pids := devicePIDs(t, whole)
			single, err := breakdown.Summarize(whole, breakdown.Options{})
			if err != nil {
				t.Fatal(err)
			}
			parts := nsystest.Split(t, src, dir, []nsystest.Part{
				{PID: pids[0], Env: "RANK=0;LOCAL_RANK=0"},
				{PID: pids[1], Shift: shift, StartShift: -shift + skew, Env: "RANK=1;LOCAL_RANK=1"},
			})
			for _, byEnds := range []bool{true, false} {
				t.Run(map[bool]string{true: "ends", false: "steps"}[byEnds], func(t *testing.T) {
					splitCase(t, single, parts, byEnds, shift, skew)
				})
			}
		})
	}
}

// splitCase checks one merge of a split capture: byEnds places the files by the
// collectives' ends at merge time (one summary), else by the steps' matched collectives
// (a second summary on the shifted trace).
func splitCase(t *testing.T, single *breakdown.Report, parts []string, byEnds bool, shift, skew int64) {
	{
		{
			var opt nsys.MergeOptions
			if byEnds {
				opt.Refine = breakdown.CollectiveOffsets(nil)
			}
			m, err := openMergedWith(t, parts, opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.CheckValid(); err != nil {
				t.Fatalf("merged trace: %v", err)
			}
			rep, err := breakdown.Summarize(m, breakdown.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rc := rep.Run
			if rc == nil || len(rc.Files) != 2 || !rc.ByCollectives {
				t.Fatalf("run clock %+v, want 2 files refined from collectives", rc)
			}
			// File 1 started earlier: it is the reference; file 0 sits skew too early by the
			// session starts (file 1's clock reads ahead), which the collectives correct.
			if rc.Reference != 1 {
				t.Fatalf("reference file %d, want 1 (the earlier session start)", rc.Reference)
			}
			f := rc.Files[0]
			if f.WallOffset != time.Duration(shift-skew) {
				t.Errorf("wall offset %v, want %v", f.WallOffset, time.Duration(shift-skew))
			}
			if got := f.Correction - time.Duration(skew); got.Abs() > f.Uncertainty || f.Uncertainty > 5*time.Microsecond {
				t.Errorf("correction %v ± %v, want %v: off by %v", f.Correction, f.Uncertainty, time.Duration(skew), got)
			}
			t.Logf("correction %v ± %v from %d calls (skew %v), %d passes", f.Correction, f.Uncertainty, f.Matched, time.Duration(skew), rc.Passes)
			if byEnds && rc.Passes != 1 {
				t.Errorf("%d summaries: the ends placed the files, one should do", rc.Passes)
			}
			if rc.Devices[0].Label == "" || !strings.Contains(rc.Devices[1].Label, "RANK=1") {
				t.Errorf("labels %q, %q: want file, pid, device and RANK", rc.Devices[0].Label, rc.Devices[1].Label)
			}
			compareRanks(t, single, rep, f.Uncertainty)
		}
	}
}

// compareRanks checks the merged report's rank view against the single file's: u is the
// stated uncertainty of the offset, by which each call's wait may move.
func compareRanks(t *testing.T, single, merged *breakdown.Report, u time.Duration) {
	t.Helper()
	a, b := single.Ranks, merged.Ranks
	for i := range single.Devices {
		x, y := &single.Devices[i].Summary, &merged.Devices[i].Summary
		if len(single.Devices[i].Steps) != len(merged.Devices[i].Steps) || x.Median != y.Median || x.Mean != y.Mean {
			t.Errorf("device %d: %d steps, median %v mean %v; merged %d, %v, %v", i, len(single.Devices[i].Steps), x.Median, x.Mean,
				len(merged.Devices[i].Steps), y.Median, y.Mean)
		}
	}
	if a == nil || b == nil {
		t.Fatalf("rank views %v, %v", a != nil, b != nil)
	}
	if a.AlignedBy != b.AlignedBy || len(a.Steps) != len(b.Steps) || len(a.Calls) != len(b.Calls) || a.Unmatched != b.Unmatched {
		t.Fatalf("aligned %s %d steps, %d calls, %d unmatched; merged %s %d, %d, %d",
			a.AlignedBy, len(a.Steps), len(a.Calls), a.Unmatched, b.AlignedBy, len(b.Steps), len(b.Calls), b.Unmatched)
	}
	close := 0 // calls whose ranks arrived within u of each other: their last arrival may flip
	for _, c := range a.Calls {
		if (c.Arrivals[0].Start - c.Arrivals[1].Start).Sub(0).Abs() <= u {
			close++
		}
	}
	tol := time.Duration(len(a.Calls)) * u
	for d := range a.Devices {
		x, y := &a.Devices[d], &b.Devices[d]
		if x.Device != y.Device || x.CollectivesMatched != y.CollectivesMatched || x.MedianStep != y.MedianStep {
			t.Errorf("rank %d: device %d, %d matched, median step %v; merged %d, %d, %v", d, x.Device, x.CollectivesMatched, x.MedianStep,
				y.Device, y.CollectivesMatched, y.MedianStep)
		}
		if (x.Wait-y.Wait).Abs() > tol || (x.Transfer-y.Transfer).Abs() > tol {
			t.Errorf("rank %d: wait %v transfer %v; merged %v %v (tolerance %v: %d calls x %v)", d, x.Wait, x.Transfer, y.Wait, y.Transfer, tol, len(a.Calls), u)
		}
		if x.Wait+x.Transfer != y.Wait+y.Transfer {
			t.Errorf("rank %d: matched kernel time %v, merged %v", d, x.Wait+x.Transfer, y.Wait+y.Transfer)
		}
		if diff := x.LastArrivals - y.LastArrivals; diff > close || -diff > close {
			t.Errorf("rank %d: last at %d calls, merged %d (%d calls within %v)", d, x.LastArrivals, y.LastArrivals, close, u)
		}
	}
	if a.Straggler != b.Straggler {
		la, lb := a.Devices[0].LastArrivals, a.Devices[1].LastArrivals
		if d := la - lb; d > 2*close || -d > 2*close {
			t.Errorf("straggler %d, merged %d", a.Straggler, b.Straggler)
		}
	}
}

// TestRunNotOneRun refuses files of different runs, naming the file: two captures made a
// minute apart (no GPU work in the same time), another program, and files whose GPUs run
// different numbers of collectives per step.
func TestRunNotOneRun(t *testing.T) {
	dir := t.TempDir()
	eager := runCapture(t, "tp2-moe-eager", dir)
	graph := runCapture(t, "tp2-moe-graph-nvtx", dir)
	split := func(src string, pid int64, p nsystest.Part) string {
		p.PID = pid
		sub := t.TempDir()
		return nsystest.Split(t, src, sub, []nsystest.Part{p})[0]
	}
	pidsOf := func(path string) [2]int64 {
		tr, err := nsys.Open(context.Background(), path, nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return devicePIDs(t, tr)
	}
	pe, pg := pidsOf(eager), pidsOf(graph)
	a := split(eager, pe[0], nsystest.Part{})
	expect := func(name string, paths []string, want, why string) {
		t.Run(name, func(t *testing.T) {
			m, err := openMerged(t, paths)
			if err == nil {
				_, err = breakdown.Summarize(m, breakdown.Options{})
			}
			var nr *nsys.NotOneRunError
			if !errors.As(err, &nr) || !errors.Is(err, nsys.ErrNotOneRun) {
				t.Fatalf("got %v, want a NotOneRunError", err)
			}
			if nr.Path != want || !strings.Contains(err.Error(), why) || !strings.HasPrefix(err.Error(), want+": ") {
				t.Errorf("error %q: want it to name %s first and say %q", err, want, why)
			}
		})
	}
	b := split(graph, pg[1], nsystest.Part{})
	// The graph capture started a minute earlier: the reference; the eager file is refused.
	expect("no overlap", []string{a, b}, a, "does not overlap in time")
	c := split(eager, pe[1], nsystest.Part{SQL: []string{`UPDATE META_DATA_CAPTURE SET value = '/x/other.py' WHERE name = 'PROCESS_0:ARGUMENT_0'`}})
	expect("other program", []string{a, c}, c, `runs "python3 other.py"`)
	// A rank of another model moved into the eager capture's time, as the same program:
	// its collectives (matched by position in the steps aligned by time) do not end
	// together with the eager rank's.
	hf := runCapture(t, "hf-qwen3moe-tp2", dir)
	te, err := nsys.Open(context.Background(), eager, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	th, err := nsys.Open(context.Background(), hf, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ph := devicePIDs(t, th)
	d := split(hf, ph[1], nsystest.Part{StartShift: te.Origin.SessionStart - th.Origin.SessionStart, SQL: []string{
		`UPDATE META_DATA_CAPTURE SET value = '/work/main/testdata/capture/workload.py' WHERE name = 'PROCESS_0:ARGUMENT_4'`,
		`UPDATE META_DATA_CAPTURE SET value = 'python3' WHERE name = 'PROCESS_0:COMMAND'`}})
	expect("other collectives", []string{a, d}, d, "do not end together")
	// The same run's other rank without its all-gathers: 8 collective kernels per step
	// against 9.
	e := split(eager, pe[1], nsystest.Part{SQL: []string{`DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE demangledName IN
		(SELECT id FROM StringIds WHERE value LIKE 'ncclDevKernel_AllGather%')`}})
	expect("other collective counts", []string{a, e}, e, "its GPUs run 8 collective kernels per aligned step, tp2-moe-eager.part0.sqlite's 9")
}

// TestRunWallClockOnly: ranks of one run without any collective (both files' NCCL kernels
// removed) are placed by their session starts alone, and the report says so.
func TestRunWallClockOnly(t *testing.T) {
	dir := t.TempDir()
	src := runCapture(t, "tp2-moe-eager", dir)
	whole, err := nsys.Open(context.Background(), src, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pids := devicePIDs(t, whole)
	noNCCL := []string{`DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE demangledName IN (SELECT id FROM StringIds WHERE value LIKE 'nccl%')`}
	parts := nsystest.Split(t, src, dir, []nsystest.Part{{PID: pids[0], SQL: noNCCL},
		{PID: pids[1], Shift: int64(time.Second), StartShift: -int64(time.Second) + 2e6, SQL: noNCCL}})
	m, err := openMerged(t, parts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := breakdown.Summarize(m, breakdown.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rc := rep.Run
	if rc == nil || rc.ByCollectives || rc.Passes != 1 || rc.Files[0].Refined || rc.Files[0].Offset != rc.Files[0].WallOffset ||
		rc.Files[0].WallOffset != time.Second-2*time.Millisecond {
		t.Fatalf("run clock %+v, want the session starts only", rc)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w.Error(), "cross-rank timing is by wall clock only")
	}
	if !found {
		t.Errorf("no wall-clock warning in %v", rep.Warnings)
	}
}

// TestRunClockDrift: the second rank's clock runs 50 ppm fast (140 µs over the 2.8 s of
// tp2_eager_nvtx's GPU work): the run is still one run (the ends' spread around the drift
// is a microsecond), the drift is found and warned about, and the stated uncertainty
// covers it.
func TestRunClockDrift(t *testing.T) {
	dir := t.TempDir()
	src := runCapture(t, "tp2_eager_nvtx", dir)
	whole, err := nsys.Open(context.Background(), src, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pids := devicePIDs(t, whole)
	parts := nsystest.Split(t, src, dir, []nsystest.Part{{PID: pids[0]}, {PID: pids[1], DriftPPM: 50}})
	m, err := openMerged(t, parts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := breakdown.Summarize(m, breakdown.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Run.Files[1-rep.Run.Reference]
	want := float64(f.Span) * 50e-6 // file 1 runs fast: its ends come later and later
	if rep.Run.Reference == 1 {
		want = -want
	}
	if f.Drift == 0 || math.Abs(float64(f.Drift)+want) > 0.1*math.Abs(want) {
		t.Errorf("drift %v over %v, want %v", f.Drift, f.Span, time.Duration(-want))
	}
	if f.Uncertainty < f.Drift.Abs()/3 {
		t.Errorf("uncertainty %v does not hold the drift %v", f.Uncertainty, f.Drift)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w.Error(), "drifts against")
	}
	if !found {
		t.Errorf("no drift warning in %v", rep.Warnings)
	}
	t.Logf("reference %d; offset %v ± %v; drift %v over %v", rep.Run.Reference, f.Offset, f.Uncertainty, f.Drift, f.Span)
}

// TestRunThreeFiles: three files, the third a copy of the second rank as if captured on a
// third host (the same process and thread ids, its clock 2.1 ms behind): three ranks,
// both offsets recovered, and the copy's rank view the same as the rank it copies.
func TestRunThreeFiles(t *testing.T) {
	dir := t.TempDir()
	src := runCapture(t, "tp2-moe-eager", dir)
	whole, err := nsys.Open(context.Background(), src, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pids := devicePIDs(t, whole)
	const skew1, skew2 = int64(3700 * time.Microsecond), int64(-2100 * time.Microsecond)
	parts := nsystest.Split(t, src, dir, []nsystest.Part{{PID: pids[0]}, {PID: pids[1], StartShift: skew1}, {PID: pids[1], StartShift: skew2}})
	m, err := openMerged(t, parts)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CheckValid(); err != nil {
		t.Fatal(err)
	}
	rep, err := breakdown.Summarize(m, breakdown.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rc := rep.Run
	if rc.Reference != 2 || len(rep.Devices) != 3 || rep.Ranks == nil || len(rep.Ranks.Devices) != 3 {
		t.Fatalf("reference %d, %d devices", rc.Reference, len(rep.Devices))
	}
	// On file 2's clock (the earliest start): file 0 sits at 2.1 ms by the starts and is
	// corrected by -2.1 ms; file 1 at 5.8 ms, corrected by -5.8 ms.
	for i, want := range []time.Duration{time.Duration(skew2), time.Duration(skew2 - skew1)} {
		f := rc.Files[i]
		if d := f.Correction - want; d.Abs() > f.Uncertainty || !f.Refined {
			t.Errorf("file %d: correction %v ± %v, want %v", i, f.Correction, f.Uncertainty, want)
		}
	}
	a, b := &rep.Ranks.Devices[1], &rep.Ranks.Devices[2]
	if a.Wait+a.Transfer != b.Wait+b.Transfer || a.MedianStep != b.MedianStep || a.CollectivesMatched != b.CollectivesMatched {
		t.Errorf("the copied rank differs: %+v vs %+v", a, b)
	}
	if (a.Wait - b.Wait).Abs() > time.Duration(len(rep.Ranks.Calls))*2*rc.Files[1].Uncertainty {
		t.Errorf("the copied rank waits %v, the rank %v", b.Wait, a.Wait)
	}
}
