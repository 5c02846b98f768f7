package breakdown

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// cpuTime returns the CPU time the process has used, user and system, all threads.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestShapeLinearInNames (issue 34, item 5): a step's distinct attention names were kept
// by slices.Contains, quadratic in them: 320,000 distinct attention kernels took 27 s,
// against 0.1 s for 160,000 kernels of 50 names. Doubling the distinct names (80,000 to
// 160,000 kernels, every name distinct, 4 steps) must about double the CPU time of the
// analysis (at most 3x; the quadratic set made it 4x), and a step's holding keeps every distinct
// name once. CPU time, not wall time: the machine is shared.
func TestShapeLinearInNames(t *testing.T) {
	if testing.Short() {
		t.Skip("240,000 kernels of distinct names")
	}
	build := func(n int) *nsys.Trace {
		g := newTGen(t)
		at := nsys.Time(0)
		for i := range n {
			g.launch(1, at, kn(fmt.Sprintf("flash_fwd_splitkv_kernel_%d", i), 0, 7, at+10, at+60))
			at += 80
			if (i+1)%(n/4) == 0 {
				g.sync(1, at, at+500)
				at += 100_000
			}
		}
		return g.trace()
	}
	run := func(tr *nsys.Trace) time.Duration {
		best := time.Duration(1 << 62)
		for range 2 {
			start := cpuTime(t)
			if _, err := Summarize(tr, Options{}); err != nil {
				t.Fatal(err)
			}
			best = min(best, cpuTime(t)-start)
		}
		return best
	}
	half, full := build(80_000), build(160_000)
	th, tf := run(half), run(full)
	t.Logf("CPU time: 80,000 distinct names %v, 160,000 %v (%.2fx)", th, tf, float64(tf)/float64(th))
	if tf > 3*th {
		t.Errorf("twice the distinct names took %.1fx the CPU time: not linear", float64(tf)/float64(th))
	}
	// A step's holding keeps every distinct attention name once, with its calls.
	tr := build(1200)
	tl := &steps.Timeline{Trace: tr, Dev: 0, Cats: make([]kernelclass.Category, len(tr.Names))}
	for i := range tl.Cats {
		tl.Cats[i] = kernelclass.Attention
	}
	st := []Step{{Start: 0, End: 1 << 62}}
	h := stepHoldings(tl, st, tr.Sites[tr.Kernels[0].Site].Stream)[0]
	if len(h.attn) != 1200 || h.attnCalls() != 1200 {
		t.Errorf("the holding has %d attention names, %d calls; want the 1200 distinct, once each", len(h.attn), h.attnCalls())
	}
}
