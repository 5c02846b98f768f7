package breakdown

import (
	"context"
	"errors"
	"testing"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// cancelTrace is 4 devices of 200 steps of 100 kernels each, cut by host syncs.
func cancelTrace(t *testing.T) *nsys.Trace {
	g := newTGen(t)
	for dev := range nsys.DeviceID(4) {
		at := nsys.Time(0)
		for range 200 {
			for range 100 {
				g.launch(int64(1+dev), at, k(kernelclass.GEMM, dev, 7, at+10, at+60))
				at += 80
			}
			g.sync(int64(1+dev), at, at+500)
			at += 1000
		}
	}
	return g.trace()
}

// TestSummarizeCancelled (issue 34, item 4): a cancelled context stops the analysis: no
// report, the context's error. A pass over a device's activities stops within 16,384
// activities of the cancellation (per range of steps), and every device and stage checks
// it.
func TestSummarizeCancelled(t *testing.T) {
	tr := cancelTrace(t)
	if _, err := SummarizeContext(context.Background(), tr, Options{}); err != nil {
		t.Fatalf("not cancelled: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := SummarizeContext(ctx, tr, Options{})
	if rep != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: report %v, error %v; want none and context.Canceled", rep != nil, err)
	}
	// A pass stops part-way: cancel at the 20,000th activity of device 0.
	done := make(chan struct{})
	tl := &steps.Timeline{Trace: tr, Dev: 0, Cats: make([]kernelclass.Category, len(tr.Names)), Done: done}
	n := 0
	tl.Each(func(*steps.Activity) bool {
		if n++; n == 20_000 {
			close(done)
		}
		return true
	})
	if n < 20_000 || n > 20_000+1<<14 {
		t.Errorf("the pass went on for %d activities after the cancellation, want at most 16,384", n-20_000)
	}
	// Cancelled while devices run: each later device and stage sees it.
	ctx, cancel = context.WithCancel(context.Background())
	opt := Options{split: func(steps, kernels int) []int { cancel(); return nil }} // cancels inside the first device's account
	rep, err = SummarizeContext(ctx, tr, opt)
	if rep != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled during the sweep: report %v, error %v; want none and context.Canceled", rep != nil, err)
	}
}
