package nsys_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/nsys"
)

// rankTrace builds a trace of one process (pid) on CUDA device dev: two kernels, their
// launches from one thread, and one NVTX range in a named domain, with its session start.
func rankTrace(path string, pid int64, dev nsys.DeviceID, start int64, base nsys.Time) *nsys.Trace {
	g := (int64(1) << 48) | pid<<24
	t := &nsys.Trace{Path: path, Procs: []int64{g}, Devices: []nsys.Device{{ID: dev, Name: "GPU"}},
		Names: []string{"gemm_kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"}, APINames: []string{"cudaLaunchKernel"},
		RangeTexts: []string{"decode"}, Domains: map[uint32]string{0: "", 7: "app"},
		Origin: nsys.Origin{SessionStart: start, HasStart: true, Program: "python3 w.py", Rank: -1, LocalRank: -1}}
	caller := nsys.Caller{Thread: g | pid, Proc: 0, Name: 0, Kind: nsys.APILaunch}
	for i, name := range []nsys.NameID{0, 1} {
		s := base + nsys.Time(i)*100_000
		t.AddCall(nsys.APICall{Start: s - 100, End: s - 50, Correlation: uint32(i + 1)}, caller)
		t.AddKernel(nsys.Kernel{Start: s, End: s + 500, Correlation: uint32(i + 1)}, nsys.Site{Name: name, Stream: 7, Device: dev})
	}
	t.Ranges = []nsys.Range{{Start: base - 200, End: base + 200_000, Thread: g | pid, Text: 0, Domain: 7}}
	return t
}

// TestMergeRun merges two files of one run: devices numbered in file order (both files'
// device 0 becomes 0 and 1), the later session start's timestamps shifted by the starts'
// difference, names and domains shared, processes apart, and the result valid; ShiftFiles
// moves one file and keeps every order.
func TestMergeRun(t *testing.T) {
	a := rankTrace("a.sqlite", 100, 0, 1_000_000_000, 10_000)
	b := rankTrace("b.sqlite", 100, 0, 1_000_050_000, 9_800) // same pid and thread on another host, 50 µs later
	m, err := nsys.MergeRun("run", []*nsys.Trace{a, b}, nsys.MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if len(m.Devices) != 2 || m.Devices[0].ID != 0 || m.Devices[1].ID != 1 || m.Run.Devices[1].File != 1 || m.Run.Devices[1].Device != 0 {
		t.Fatalf("devices %+v, run devices %+v", m.Devices, m.Run.Devices)
	}
	if m.Run.Reference != 0 || m.Run.Files[1].WallOffset != 50*time.Microsecond {
		t.Fatalf("reference %d, offsets %+v", m.Run.Reference, m.Run.Files)
	}
	if len(m.Names) != 2 || len(m.Procs) != 2 || len(m.Kernels) != 4 || len(m.APICalls) != 4 || len(m.Ranges) != 2 {
		t.Fatalf("names %d procs %d kernels %d calls %d ranges %d", len(m.Names), len(m.Procs), len(m.Kernels), len(m.APICalls), len(m.Ranges))
	}
	// b's first kernel ran at 9800 on its clock: 59800 on a's.
	var bStart nsys.Time = -1
	threads := map[int64]bool{}
	for _, k := range m.Kernels {
		if s := m.Sites[k.Site]; s.Device == 1 && (bStart < 0 || k.Start < bStart) {
			bStart = k.Start
		}
	}
	for _, w := range m.Callers {
		threads[w.Thread] = true
	}
	if bStart != 59_800 {
		t.Errorf("b's first kernel at %d, want 59800", bStart)
	}
	if len(threads) != 2 {
		t.Errorf("the two files' threads share an id: %v", threads)
	}
	if m.Ranges[0].Domain != m.Ranges[1].Domain || m.Domains[m.Ranges[0].Domain] != "app" {
		t.Errorf("domains %v of ranges %+v", m.Domains, m.Ranges)
	}
	if got := m.Run.Label(1); got != "b.sqlite pid 100 cuda 0" {
		t.Errorf("label %q", got)
	}
	m.ShiftFiles([]time.Duration{0, -60 * time.Microsecond}) // b now before a
	if err := m.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if m.Sites[m.Kernels[0].Site].Device != 1 || m.Kernels[0].Start != -200 || m.Run.Files[1].Offset != -10*time.Microsecond {
		t.Errorf("after the shift: first kernel %+v on device %d, offset %v", m.Kernels[0], m.Sites[m.Kernels[0].Site].Device, m.Run.Files[1].Offset)
	}
}

// TestMergeRunNotOneRun refuses another program and work that does not overlap in time,
// naming the file.
func TestMergeRunNotOneRun(t *testing.T) {
	a := rankTrace("a.sqlite", 1, 0, 1_000_000_000, 10_000)
	b := rankTrace("b.sqlite", 2, 0, 1_000_000_000, 10_000)
	b.Origin.Program = "python3 other.py"
	_, err := nsys.MergeRun("run", []*nsys.Trace{a, b}, nsys.MergeOptions{})
	if !errors.Is(err, nsys.ErrNotOneRun) || !strings.HasPrefix(err.Error(), `b.sqlite: not one run with a.sqlite: it runs "python3 other.py"`) {
		t.Errorf("other program: %v", err)
	}
	a = rankTrace("a.sqlite", 1, 0, 1_000_000_000, 10_000)
	c := rankTrace("c.sqlite", 2, 0, 1_000_000_000+int64(time.Minute), 10_000)
	_, err = nsys.MergeRun("run", []*nsys.Trace{a, c}, nsys.MergeOptions{})
	if !errors.Is(err, nsys.ErrNotOneRun) || !strings.Contains(err.Error(), "c.sqlite: not one run with a.sqlite: their GPU work does not overlap in time") {
		t.Errorf("a minute apart: %v", err)
	}
}

// TestMergeRunThreadsPast256 (issue 41, item 9): files that share thread ids (the same
// pid and thread on other hosts) keep their threads apart whatever their number: files
// 256 and 257 of 258 do not share threads with files 0 and 1.
func TestMergeRunThreadsPast256(t *testing.T) {
	const n = 258
	var ts []*nsys.Trace
	for i := range n {
		ts = append(ts, rankTrace(fmt.Sprintf("r%d.sqlite", i), 100, 0, 1_000_000_000+int64(i)*100, 10_000))
	}
	m, err := nsys.MergeRun("run", ts, nsys.MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CheckValid(); err != nil {
		t.Fatal(err)
	}
	callers, ranges := map[int64]bool{}, map[int64]bool{}
	for _, w := range m.Callers {
		callers[w.Thread] = true
	}
	for _, r := range m.Ranges {
		ranges[r.Thread] = true
	}
	if len(callers) != n || len(ranges) != n {
		t.Errorf("%d files: %d calling threads and %d range threads, want %d each", n, len(callers), len(ranges), n)
	}
	for th := range ranges {
		if !callers[th] {
			t.Errorf("range thread %d calls nothing: a file's ranges and calls are renumbered apart", th)
		}
	}
}

// TestMergeRunCollectionsLinear (issue 41, item 8): merging many small files collects the
// heap once its freed tables add up, not after every file's table (files x heap: 516
// forced collections for 258 files, quadratic in the files of a run).
func TestMergeRunCollectionsLinear(t *testing.T) {
	const n = 258
	var ts []*nsys.Trace
	for i := range n {
		ts = append(ts, rankTrace(fmt.Sprintf("r%d.sqlite", i), 100+int64(i), 0, 1_000_000_000+int64(i)*100, 10_000))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := nsys.MergeRun("run", ts, nsys.MergeOptions{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if forced := after.NumForcedGC - before.NumForcedGC; forced > 8 {
		t.Errorf("merging %d files of 2 kernels each forced %d collections, want a few", n, forced)
	}
	if len(m.Kernels) != 2*n {
		t.Errorf("%d kernels merged, want %d", len(m.Kernels), 2*n)
	}
}
