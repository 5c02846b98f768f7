package breakdown

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestAccountSplit checks that sweeping a device's steps in two halves at once gives the
// report one sweep gives, field for field, whatever the step the second half starts at:
// on every capture (1 and 2 GPUs, eager and CUDA graphs, NVTX, sync and graph steps) and
// on the generated timelines of the property test (overlaps across the split, long
// kernels, memory operations, graph executions, host calls during gaps).
func TestAccountSplit(t *testing.T) {
	type input struct {
		name string
		tr   *nsys.Trace
		opt  Options
	}
	var ins []input
	caps, _ := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.sqlite.gz"))
	if len(caps) == 0 {
		t.Fatal("no captures")
	}
	for _, c := range caps {
		p := filepath.Join(t.TempDir(), filepath.Base(c[:len(c)-3]))
		nsystest.Gunzip(t, c, p)
		tr, err := nsys.Open(context.Background(), p, nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, input{filepath.Base(p), tr, Options{}})
	}
	for seed := uint64(1); seed <= 150; seed++ {
		g := randomTimeline(t, seed)
		ins = append(ins, input{fmt.Sprintf("generated %d (%s)", seed, g.desc), g.t, g.opt})
	}
	points := map[string]func(int) []int{
		"half":   func(n int) []int { return []int{n / 2} },
		"first":  func(n int) []int { return []int{1} },
		"last":   func(n int) []int { return []int{n - 1} },
		"third":  func(n int) []int { return []int{n / 3} },
		"thirds": func(n int) []int { return []int{n / 3, 2 * n / 3} },
		"every step": func(n int) []int {
			var cuts []int
			for i := 1; i < n; i++ {
				cuts = append(cuts, i)
			}
			return cuts
		},
	}
	for _, in := range ins {
		one := in.opt
		one.split = func(int, int) []int { return nil }
		want := mustSummarize(t, in.tr, one)
		for pname, p := range points {
			two := in.opt
			two.split = func(steps, _ int) []int {
				if steps >= 4 {
					return p(steps)
				}
				return nil
			}
			got := mustSummarize(t, in.tr, two)
			for d := range want.Devices {
				w, g := &want.Devices[d], &got.Devices[d]
				for i := range w.Steps {
					if !reflect.DeepEqual(w.Steps[i], g.Steps[i]) {
						t.Fatalf("%s, split at %s: device %d step %d:\n one sweep %+v\ntwo sweeps %+v", in.name, pname, w.Device, i, w.Steps[i], g.Steps[i])
					}
				}
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%s, split at %s: reports differ outside the steps", in.name, pname)
			}
		}
	}
}
