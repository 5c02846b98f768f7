package breakdown_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestUntracedGraphCapture reads the real graph-level capture (transformers' generate()
// with torch.compile "reduce-overhead", captured without --cuda-graph-trace=node; see
// testdata/traces/capture-hf.log): 15 CUDA graph replays, one per decode step, each one
// opaque row. Their time counts as untraced_graph, never as other; every replay is counted
// once; and the warning says how to re-capture.
func TestUntracedGraphCapture(t *testing.T) {
	gz := filepath.Join("..", "testdata", "traces", "hf-qwen3moe-compile-graphlevel.sqlite.gz")
	tr, err := nsys.Open(context.Background(), nsystest.GunzipInto(t, gz, t.TempDir()), nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Graphs) != 15 {
		t.Fatalf("%d graph-level executions, want the capture's 15", len(tr.Graphs))
	}
	var graphNS time.Duration
	for _, g := range tr.Graphs {
		graphNS += g.End.Sub(g.Start)
	}
	rep := summarize(t, tr, breakdown.Options{})
	d := device(t, rep, 0)
	decode, replays := 0, 0
	var busy time.Duration
	for _, s := range d.Steps {
		replays += s.Kernels[kernelclass.UntracedGraph]
		busy += s.Busy[kernelclass.UntracedGraph]
		if s.Phase != breakdown.Decode {
			continue
		}
		decode++
		if s.Exclusive[kernelclass.UntracedGraph] <= 0 || s.Kernels[kernelclass.UntracedGraph] != 1 {
			t.Errorf("decode step %d: untraced_graph %v in %d replays, want > 0 in 1", s.Index,
				s.Exclusive[kernelclass.UntracedGraph], s.Kernels[kernelclass.UntracedGraph])
		}
		if s.Exclusive[kernelclass.Other] != 0 || s.Busy[kernelclass.Other] != 0 || s.Kernels[kernelclass.Other] != 0 {
			t.Errorf("decode step %d: other %v (busy %v, %d kernels), want 0", s.Index,
				s.Exclusive[kernelclass.Other], s.Busy[kernelclass.Other], s.Kernels[kernelclass.Other])
		}
	}
	if decode == 0 {
		t.Fatalf("no decode steps (%d steps by %v)", len(d.Steps), d.Method)
	}
	// Every replay lies in a step here (the last one ends before the loop's last read-back).
	if replays != 15 || busy != graphNS {
		t.Errorf("steps hold %d replays, %v busy; want 15 and %v", replays, busy, graphNS)
	}
	if sm := d.Summary.Categories[kernelclass.UntracedGraph]; sm.Median <= 0 || sm.Share <= 0 {
		t.Errorf("summary: untraced_graph median %v, share %v; want > 0", sm.Median, sm.Share)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w.Error(), "nsys profile --cuda-graph-trace=node")
	}
	if !found {
		t.Errorf("no warning naming the fix (nsys profile --cuda-graph-trace=node): %v", rep.Warnings)
	}
}
