package breakdown_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestThirdPartyCaptures checks the captures of stacks we did not write (hf_workload.py:
// transformers' own generate() and two hand-written decode loops over transformers models;
// testdata/traces/README.md) against their structure by construction, measured with
// testdata/capture/verify_hf.sh: 16 new tokens are 1 prefill forward and 15 decode
// forwards (8 tokens: 7), each decode step with the kernels of one forward window; MoE
// routing and expert work in every decode step; sampling only the argmax; at tensor
// parallel 2, 8 all-reduces (2 a layer) and the logits' all-gather per decode step and
// rank, all matched by the rank view; and no self-check warning.
func TestThirdPartyCaptures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		decode  int
		kernels float64 // per decode step
		method  breakdown.Method
	}{
		{"hf-qwen3moe-eager", 15, 307, breakdown.MethodSync},
		{"hf-glm5-eager", 15, 506, breakdown.MethodSync},
		{"hf-mixtral-eager", 15, 359, breakdown.MethodSync},
		{"hf-dsv3-eager", 15, 397, breakdown.MethodSync},
		{"hf-qwen3moe-autograd", 7, 307, breakdown.MethodSync},
		{"hf-qwen3moe-tp2", 15, 316, breakdown.MethodSync},
		{"loop-h2d", 15, 360, breakdown.MethodSync},
		{"loop-2sync", 15, 361, breakdown.MethodSync},
		// CUDA graph trees: one replay of 98 (Qwen3-MoE) or 182 (GLM-5) kernels per decode
		// step, and generate()'s eager kernels around it (30 a step, 29 in the last).
		{"hf-qwen3moe-compile", 15, (15*98 + 14*30 + 29) / 15.0, breakdown.MethodSync},
		{"hf-glm5-compile", 15, (15*182 + 14*30 + 29) / 15.0, breakdown.MethodSync},
		// Graph-level: each replay is one untraced row.
		{"hf-qwen3moe-compile-graphlevel", 15, (15*1 + 14*30 + 29) / 15.0, breakdown.MethodSync},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := captureReport(t, tc.name, breakdown.Options{})
			silentSelfChecks(t, rep)
			tp2 := strings.Contains(tc.name, "tp2")
			if want := map[bool]int{false: 1, true: 2}[tp2]; len(rep.Devices) != want {
				t.Fatalf("%d devices, want %d", len(rep.Devices), want)
			}
			for di := range rep.Devices {
				d := &rep.Devices[di]
				sm := d.Summary
				if sm.Steps != tc.decode || sm.KernelsPerStep != tc.kernels {
					t.Errorf("device %d: %d decode steps of %.2f kernels (%s: %s), want %d of %.2f",
						d.Device, sm.Steps, sm.KernelsPerStep, d.Method, d.MethodDetail, tc.decode, tc.kernels)
				}
				if d.Method != tc.method {
					t.Errorf("method %v, want %v", d.Method, tc.method)
				}
				if d.Steps[0].Phase != breakdown.Prefill {
					t.Errorf("step 0 is %v, want the prefill", d.Steps[0].Phase)
				}
				for _, s := range d.Steps[1:] {
					if s.Phase != breakdown.Decode {
						t.Errorf("step %d: %v", s.Index, s.Phase)
						continue
					}
					moe := tc.name != "hf-qwen3moe-compile-graphlevel" // its experts are inside the untraced replays
					if moe && (s.Kernels[kernelclass.MoERouting] == 0 || s.Kernels[kernelclass.MoEExpert] == 0) {
						t.Errorf("step %d: %d moe_routing, %d moe_expert kernels; want both", s.Index,
							s.Kernels[kernelclass.MoERouting], s.Kernels[kernelclass.MoEExpert])
					}
					if n := s.Kernels[kernelclass.Sampling]; n != 1 {
						t.Errorf("step %d: %d sampling kernels, want the argmax", s.Index, n)
					}
					if tp2 {
						if s.Kernels[kernelclass.AllReduce] != 8 || s.Kernels[kernelclass.Collective] != 1 {
							t.Errorf("rank %d step %d: %d all-reduce and %d all-gather kernels, want 8 and 1", di, s.Index,
								s.Kernels[kernelclass.AllReduce], s.Kernels[kernelclass.Collective])
						}
					}
				}
			}
			if tp2 {
				rr := rep.Ranks
				if rr == nil || rr.Unmatched != 0 {
					t.Fatalf("rank view %+v", rr)
				}
				// Per aligned decode step, the 9 collectives of a forward on both ranks; the
				// last window also reaches the script's 2 barrier all-reduces after the loop.
				if len(rr.Steps) != 15 {
					t.Errorf("%d aligned steps, want 15", len(rr.Steps))
				}
				for i, st := range rr.Steps {
					if st.Calls != 9 && !(i == len(rr.Steps)-1 && st.Calls == 9+2) {
						t.Errorf("aligned step %d: %d collectives matched, want 9", i, st.Calls)
					}
				}
			}
		})
	}
}

// TestServeOrderCaptures checks the captures of our workload run in --serve-order, the
// order a server runs around its loop (testdata/traces/README.md): the prefill (321
// kernels), 3 eager warm-up decode steps with their read-backs (3 x 322 kernels, no NVTX
// range), the graph capture (2 kernels), 12 decode steps replaying the graph (322 kernels
// each, in "decode_step N" NVTX ranges in the -nvtx file), and one kernel 15 ms after the
// last step. The warm-up, the capture's work and the post-loop kernel are outside steps
// (969 kernels); the prefill and the 12 decode steps are whole, with NVTX and without.
func TestServeOrderCaptures(t *testing.T) {
	for _, name := range []string{"moe-graph-nvtx-serve", "moe-graph-serve", "tp2-moe-graph-serve"} {
		t.Run(name, func(t *testing.T) {
			rep := captureReport(t, name, breakdown.Options{})
			silentSelfChecks(t, rep)
			// At tp 2, each rank's step adds 8 all-reduces, the logits' all-gather and its
			// concatenation (10 kernels), the prefill too.
			prefill, decode := 321, 322
			if strings.HasPrefix(name, "tp2-") {
				prefill, decode = 331, 332
				if len(rep.Devices) != 2 || rep.Ranks == nil || len(rep.Ranks.Steps) != 12 || rep.Ranks.Unmatched != 0 {
					t.Fatalf("%d devices, rank view %+v; want 2 ranks with 12 aligned steps, all matched", len(rep.Devices), rep.Ranks)
				}
			}
			for di := range rep.Devices {
				d := &rep.Devices[di]
				want := map[bool]breakdown.Method{true: breakdown.MethodNVTX, false: breakdown.MethodGraph}[strings.Contains(name, "nvtx")]
				if d.Method != want {
					t.Errorf("device %d: method %v (%s), want %v", di, d.Method, d.MethodDetail, want)
				}
				if len(d.Steps) != 13 || d.Steps[0].Phase != breakdown.Prefill || d.Steps[0].TotalKernels() != prefill {
					t.Fatalf("device %d: %d steps, the first %v with %d kernels; want 13, the prefill with %d", di, len(d.Steps), d.Steps[0].Phase, d.Steps[0].TotalKernels(), prefill)
				}
				for _, s := range d.Steps[1:] {
					if s.Phase != breakdown.Decode || s.TotalKernels() != decode || s.Launches != 1 {
						t.Errorf("device %d step %d: %v, %d kernels, %d launches; want decode, %d, 1 (a graph replay)", di, s.Index, s.Phase, s.TotalKernels(), s.Launches, decode)
					}
				}
				if o := d.Outside; o.TotalKernels() != 3*decode+2+1 || o.Windows != 2 {
					t.Errorf("device %d outside: %d kernels in %d windows, want %d in 2 (warm-up and capture, post-loop)", di, o.TotalKernels(), o.Windows, 3*decode+2+1)
				}
			}
		})
	}
}

// TestAutogradNVTXCapture: nsys --pytorch=autograd-nvtx adds a range per ATen op (8,524 in
// the capture); steps and categories must not change for it. The same model and loop
// captured without them gives the same decode steps, kernel for kernel per category.
func TestAutogradNVTXCapture(t *testing.T) {
	perCat := func(name string) ([kernelclass.NumCategories]float64, int) {
		gz := filepath.Join("..", "testdata", "traces", name+".sqlite.gz")
		tr, err := nsys.Open(context.Background(), nsystest.GunzipInto(t, gz, t.TempDir()), nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := breakdown.Summarize(tr, breakdown.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out [kernelclass.NumCategories]float64
		for c, cs := range rep.Devices[0].Summary.Categories {
			out[c] = cs.KernelsPerStep
		}
		return out, len(tr.Ranges)
	}
	plain, _ := perCat("hf-qwen3moe-eager")
	withOps, ranges := perCat("hf-qwen3moe-autograd")
	if ranges < 8000 {
		t.Fatalf("%d NVTX ranges in the autograd capture, want its 8,524 op ranges", ranges)
	}
	if plain != withOps {
		t.Errorf("kernels per decode step by category: %v with op ranges, %v without", withOps, plain)
	}
}

// TestTruncatedRankCapture: a real 2-GPU capture whose second rank lost its activity (the
// first rank's cudaProfilerStop ended the nsys session before the other rank's buffers
// were flushed: 395 kernels of its 5,314). The report must say that the ranks disagree
// instead of comparing them silently.
func TestTruncatedRankCapture(t *testing.T) {
	rep := captureReport(t, "tp2-moe-graph-serve-truncated", breakdown.Options{})
	if len(rep.Devices) != 2 || rep.Devices[0].Summary.Steps != 12 {
		t.Fatalf("%d devices, %d decode steps on rank 0; want 2 and 12", len(rep.Devices), rep.Devices[0].Summary.Steps)
	}
	found := false
	for _, w := range rep.Warnings {
		var sc *breakdown.SelfCheckWarning
		if errors.As(w, &sc) && strings.Contains(sc.Text, "disagree") {
			found = true
		}
	}
	if !found {
		t.Errorf("no self-check warning that the ranks disagree; warnings %v", rep.Warnings)
	}
}

// silentSelfChecks fails the test on any self-check warning of the report.
func silentSelfChecks(t *testing.T, rep *breakdown.Report) {
	t.Helper()
	for _, w := range rep.Warnings {
		var sc *breakdown.SelfCheckWarning
		if errors.As(w, &sc) {
			t.Errorf("warning: %v", w)
		}
	}
}
