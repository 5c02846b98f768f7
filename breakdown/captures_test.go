package breakdown_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
	"github.com/stepstat/stepstat/nsys/nsystest/captures"
)

// thirdParty reports whether a capture in testdata/traces is of a stack we did not write
// (hf_workload.py: transformers' generate() and hand-written loops), checked by
// TestThirdPartyCaptures, or of our workload in --serve-order (TestServeOrderCaptures).
func thirdParty(base string) bool {
	if strings.HasPrefix(base, "hf-") || strings.HasPrefix(base, "loop-") || strings.Contains(base, "-serve") {
		return true
	}
	// Captures with a ground-truth sidecar (NAME.truth.json: the serving situations of
	// testdata/traces/README.md) are checked against their sidecar, not against workload.py's shape.
	_, err := os.Stat(filepath.Join("..", "testdata", "traces", strings.TrimSuffix(base, ".sqlite.gz")+".truth.json"))
	return err == nil
}

// captureReport summarises one capture of testdata/traces (name without .sqlite.gz).
func captureReport(t *testing.T, name string, opt breakdown.Options) *breakdown.Report {
	t.Helper()
	rep, err := breakdown.Summarize(captures.Trace(t, name), opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestCaptures checks the per-step breakdown of the real H200 captures in testdata/traces
// against the structure they have by construction (testdata/traces/README.md): on device
// 0, one prefill step and 12 decode steps, found by NVTX in the -nvtx files, by graph
// launches in the other graph files and by the D2H read-back in the eager file without
// NVTX; 62 (dense) or 322 (MoE) kernels per decode step, launched one by one in eager mode
// and as one graph launch in graph mode; 57 / 321 kernels in the prefill; exclusive times
// that sum to every step's wall time; and no unclassified kernel above 1% of kernel time.
func TestCaptures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.sqlite.gz"))
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return thirdParty(filepath.Base(f)) })
	if len(files) < 10 {
		t.Fatalf("found %d captures in testdata/traces, want the 10 of its README", len(files))
	}
	dir := t.TempDir()
	for _, gz := range files {
		name := strings.TrimSuffix(filepath.Base(gz), ".sqlite.gz")
		t.Run(name, func(t *testing.T) {
			tr, err := nsys.Open(context.Background(), nsystest.GunzipInto(t, gz, dir), nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := breakdown.Summarize(tr, breakdown.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// The workload's own NVTX step ranges exist exactly in the -nvtx captures (NCCL
			// adds ranges of its own at tp 2 either way).
			stepRanges := 0
			for _, r := range tr.Ranges {
				if strings.HasPrefix(tr.RangeTexts[r.Text], "decode_step ") {
					stepRanges++
				}
			}
			if want := strings.HasSuffix(name, "-nvtx"); want != (stepRanges > 0) {
				t.Errorf("%d decode_step NVTX ranges; want them: %v", stepRanges, want)
			}
			tp2 := strings.HasPrefix(name, "tp2-")
			moe := strings.HasPrefix(strings.TrimPrefix(name, "tp2-"), "moe-")
			graph := strings.Contains(name, "-graph")
			wantMethod := breakdown.MethodSync
			switch {
			case strings.HasSuffix(name, "-nvtx"):
				wantMethod = breakdown.MethodNVTX
			case graph:
				wantMethod = breakdown.MethodGraph
			}
			decodeKernels, prefillKernels := 62, 57
			if moe {
				decodeKernels, prefillKernels = 322, 321
			}
			if tp2 {
				// Per rank: 8 all-reduces, the logits' all-gather and its concatenation.
				decodeKernels, prefillKernels = decodeKernels+10, prefillKernels+10
			}
			decodeLaunches := decodeKernels
			if graph {
				decodeLaunches = 1
			}
			// The workload all-reduces after attention and after the MLP of each of its 4
			// layers when tensor parallel (tp2-* captures): 2 per layer per rank; none at tp 1.
			wantAllReduce := 0
			if strings.HasPrefix(name, "tp2-") {
				wantAllReduce = 2 * 4
			}

			wantDevices := 1
			if tp2 {
				wantDevices = 2
			}
			if len(rep.Devices) != wantDevices {
				t.Fatalf("%d devices, want %d", len(rep.Devices), wantDevices)
			}
			for di := range rep.Devices {
				d := &rep.Devices[di]
				if d.Device != nsys.DeviceID(di) {
					t.Errorf("device %d, want %d", d.Device, di)
				}
				if d.Method != wantMethod {
					t.Errorf("step method %v (%s), want %v", d.Method, d.MethodDetail, wantMethod)
				}
				if d.GPU != "NVIDIA H200" {
					t.Errorf("GPU %q", d.GPU)
				}
				if len(d.Steps) != 13 {
					t.Fatalf("%d steps, want 13", len(d.Steps))
				}
				for i := range d.Steps {
					s := &d.Steps[i]
					want := breakdown.Decode
					if i == 0 {
						want = breakdown.Prefill
					}
					if s.Phase != want {
						t.Errorf("step %d: phase %v, want %v", i, s.Phase, want)
					}
					var sum time.Duration
					for _, v := range s.Exclusive {
						sum += v
					}
					if sum != s.Wall() {
						t.Errorf("step %d: categories sum to %v, wall %v", i, sum, s.Wall())
					}
					for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
						if s.Busy[c] < s.Exclusive[c] {
							t.Errorf("step %d: %v busy %v < exclusive %v", i, c, s.Busy[c], s.Exclusive[c])
						}
					}
					if s.Gaps.Total != s.Exclusive[kernelclass.Idle] {
						t.Errorf("step %d: gaps %v != idle %v", i, s.Gaps.Total, s.Exclusive[kernelclass.Idle])
					}
					if i == 0 {
						if s.TotalKernels() != prefillKernels {
							t.Errorf("prefill: %d kernels, want %d", s.TotalKernels(), prefillKernels)
						}
						continue
					}
					if s.TotalKernels() != decodeKernels {
						t.Errorf("decode step %d: %d kernels, want %d", i, s.TotalKernels(), decodeKernels)
					}
					if n := s.Kernels[kernelclass.AllReduce]; n != wantAllReduce {
						t.Errorf("decode step %d: %d all-reduce kernels, want %d", i, n, wantAllReduce)
					}
					// Families the workload runs per decode step: one attention kernel per
					// layer; 17 GEMMs + 4 split-K reduces (dense) or 77 GEMMs (MoE); the
					// logits' all-gather at tp 2.
					wantGEMM, wantGather := 21, 0
					if moe {
						// Context: of the 77 GEMMs, the 64 of the experts (16 a layer) are
						// moe_expert; router (4), qkv (4), o (4) and lm_head stay gemm.
						wantGEMM = 13
						// Per layer: the 56 expert kernels (16 GEMMs, 8 gathers, 8 SiLU, 16
						// multiplies, 8 index_add) and the router's softmax, top-k, sorts,
						// renormalisation, scatter, casts and output fill.
						// At tp 2 the all-reduce after the MLP ends expert work a kernel early.
						minE := 4 * 56
						if tp2 {
							minE = 4 * 55
						}
						if e, r := s.Kernels[kernelclass.MoEExpert], s.Kernels[kernelclass.MoERouting]; e < minE || e > 4*56 || r < 4*11 {
							t.Errorf("decode step %d: %d moe_expert and %d moe_routing kernels, want %d..%d and at least %d", i, e, r, minE, 4*56, 4*11)
						}
					}
					if s.Kernels[kernelclass.Sampling] != 1 {
						t.Errorf("decode step %d: %d sampling kernels, want the one argmax", i, s.Kernels[kernelclass.Sampling])
					}
					if tp2 {
						wantGather = 1
					}
					if got := [3]int{s.Kernels[kernelclass.Attention], s.Kernels[kernelclass.GEMM], s.Kernels[kernelclass.Collective]}; got != [3]int{4, wantGEMM, wantGather} {
						t.Errorf("decode step %d: attention, gemm, collective kernels %v, want [4 %d %d]", i, got, wantGEMM, wantGather)
					}
					if s.Launches != decodeLaunches {
						t.Errorf("decode step %d: %d host launches, want %d", i, s.Launches, decodeLaunches)
					}
					// The token-buffer D2D copy and the D2H read-back.
					if s.Kernels[kernelclass.Memory] != 2 {
						t.Errorf("decode step %d: %d memory operations, want 2", i, s.Kernels[kernelclass.Memory])
					}
					if s.Kernels[kernelclass.Attention] != 4 || s.Kernels[kernelclass.Sampling] < 1 {
						t.Errorf("decode step %d: %d attention and %d sampling kernels, want 4 and at least 1", i,
							s.Kernels[kernelclass.Attention], s.Kernels[kernelclass.Sampling])
					}
				}
				if sm := d.Summary; sm.Phase != breakdown.Decode || sm.Steps != 12 ||
					sm.KernelsPerStep != float64(decodeKernels) || sm.LaunchesPerStp != float64(decodeLaunches) {
					t.Errorf("summary: %v, %d steps, %v kernels/step, %v launches/step", sm.Phase, sm.Steps, sm.KernelsPerStep, sm.LaunchesPerStp)
				}

				var total, kernels time.Duration
				var count int
				for _, k := range rep.Kernels {
					total += k.Total
					count += k.Count
				}
				for _, k := range rep.Kernels {
					if k.Category == kernelclass.Other && float64(k.Total) > 0.01*float64(total) {
						t.Errorf("unclassified kernel above 1%% of kernel time: %s (%v of %v)", k.Name, k.Total, total)
					}
				}
				for _, k := range tr.Kernels {
					kernels += k.Duration()
				}
				if kernels != total || count != len(tr.Kernels) {
					t.Errorf("kernel stats total %v over %d kernels; the trace has %v over %d", total, count, kernels, len(tr.Kernels))
				}
				for _, w := range rep.Warnings {
					t.Errorf("warning: %v", w)
				}
			}
		})
	}
}

// TestPublicPeriodic checks the CS336 2.7B forward benchmark captured without NVTX, sync
// or memcpys: 18,320 kernels that are 10 identical passes of 1,832 kernels.
func TestPublicPeriodic(t *testing.T) {
	path := nsystest.PublicTrace(t, "cs336a2-zx3xyy__result_2_7B_clean.sqlite")
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := breakdown.Summarize(tr, breakdown.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Devices) != 1 {
		t.Fatalf("%d devices, want 1", len(rep.Devices))
	}
	d := &rep.Devices[0]
	if d.Method != breakdown.MethodPeriodic || d.MethodDetail != "kernel sequence repeats every 1832 kernels" {
		t.Errorf("method %v (%s), want periodic every 1832 kernels", d.Method, d.MethodDetail)
	}
	if len(d.Steps) != 10 {
		t.Fatalf("%d steps, want 10", len(d.Steps))
	}
	for i := range d.Steps {
		s := &d.Steps[i]
		if s.TotalKernels() != 1832 || s.Launches != 1832 {
			t.Errorf("step %d: %d kernels, %d launches; want 1832", i, s.TotalKernels(), s.Launches)
		}
		var sum time.Duration
		for _, v := range s.Exclusive {
			sum += v
		}
		if sum != s.Wall() {
			t.Errorf("step %d: categories sum to %v, wall %v", i, sum, s.Wall())
		}
	}
}

// TestPublicTracesReport opens and summarises every public trace: each gives a report whose steps add up, or, for the exports without GPU
// activity, an error wrapping nsys.ErrNoGPUActivity. Nothing panics.
func TestPublicTracesReport(t *testing.T) {
	files := nsystest.PublicTraces(t)
	if len(files) != 27 {
		t.Errorf("%d public traces, want 27", len(files))
	}
	var noGPU []string
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".sqlite"), func(t *testing.T) {
			tr, err := nsys.Open(context.Background(), path, nsys.Options{})
			if err == nil {
				var rep *breakdown.Report
				rep, err = breakdown.Summarize(tr, breakdown.Options{})
				if err == nil {
					checkPublicReport(t, rep)
					return
				}
			}
			if !errors.Is(err, nsys.ErrNoGPUActivity) {
				t.Fatalf("error %v, want a report or an error wrapping nsys.ErrNoGPUActivity", err)
			}
			if !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("error %q does not name the file", err)
			}
			noGPU = append(noGPU, name)
		})
	}
	if len(files) == 27 && len(noGPU) != 5 {
		t.Errorf("%d traces without GPU activity, want 5: %v", len(noGPU), noGPU)
	}
}

// checkPublicReport checks the accounting of every step (render's TestPublicTracesRender
// renders the reports).
func checkPublicReport(t *testing.T, rep *breakdown.Report) {
	t.Helper()
	if len(rep.Devices) == 0 {
		t.Fatal("no devices")
	}
	for _, d := range rep.Devices {
		if len(d.Steps) == 0 {
			t.Errorf("device %d: no steps", d.Device)
		}
		for i := range d.Steps {
			s := &d.Steps[i]
			var sum time.Duration
			for _, v := range s.Exclusive {
				sum += v
			}
			if sum != s.Wall() || s.Gaps.Total != s.Exclusive[kernelclass.Idle] {
				t.Errorf("device %d step %d: categories sum to %v, wall %v; gaps %v, idle %v", d.Device, s.Index,
					sum, s.Wall(), s.Gaps.Total, s.Exclusive[kernelclass.Idle])
			}
			for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
				if s.Busy[c] < s.Exclusive[c] {
					t.Errorf("device %d step %d: %v busy %v < exclusive %v", d.Device, s.Index, c, s.Busy[c], s.Exclusive[c])
				}
			}
		}
	}
}
