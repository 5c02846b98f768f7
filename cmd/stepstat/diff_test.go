package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffGolden compares eager with CUDA-graph decode of the same workload (the project's
// captures) and a capture with itself, in text and JSON.
func TestDiffGolden(t *testing.T) {
	inCaptureDir(t, "dense-eager", "dense-graph", "moe-eager-nvtx", "moe-graph")
	for _, tc := range []struct {
		scenario string
		args     []string
	}{
		{"diff-eager-graph", []string{"diff", "eager=dense-eager.sqlite", "graph=dense-graph.sqlite"}},
		{"diff-eager-graph-json", []string{"diff", "-f", "json", "eager=dense-eager.sqlite", "graph=dense-graph.sqlite"}},
		{"diff-moe-eager-graph", []string{"diff", "eager=moe-eager-nvtx.sqlite", "graph=moe-graph.sqlite"}},
		{"diff-no-change", []string{"diff", "dense-eager.sqlite", "dense-eager.sqlite"}},
		{"diff-no-change-json", []string{"diff", "--format", "json", "dense-eager.sqlite", "dense-eager.sqlite"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			if code := golden(t, tc.scenario, tc.args...); code != 0 {
				t.Errorf("exit %d", code)
			}
		})
	}
}

// TestDiffEagerVsGraph checks what the comparison must show: CUDA graphs cut the decode
// step time by a large, significant amount, host launches per step fall from hundreds to a
// handful, and kernels per step stay the same.
func TestDiffEagerVsGraph(t *testing.T) {
	inCaptureDir(t, "moe-eager-nvtx", "moe-graph")
	code, stdout, stderr := stepstat("diff", "-f", "json", "moe-eager-nvtx.sqlite", "moe-graph.sqlite")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var d struct {
		Base, New struct {
			LaunchesPerStep float64 `json:"launches_per_step"`
			KernelsPerStep  float64 `json:"kernels_per_step"`
			DecodeSteps     int     `json:"decode_steps"`
		}
		Step struct {
			DeltaPct    *float64 `json:"delta_pct"`
			PValue      float64  `json:"p_value"`
			Significant bool     `json:"significant"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	if d.Step.DeltaPct == nil || *d.Step.DeltaPct > -40 || !d.Step.Significant || d.Step.PValue > 0.001 {
		t.Errorf("step: delta %v%%, p=%v, significant %v; want a large, significant drop", d.Step.DeltaPct, d.Step.PValue, d.Step.Significant)
	}
	if d.Base.LaunchesPerStep < 100 || d.New.LaunchesPerStep > 5 {
		t.Errorf("host launches per step %v -> %v; want hundreds -> a handful", d.Base.LaunchesPerStep, d.New.LaunchesPerStep)
	}
	if d.Base.KernelsPerStep != d.New.KernelsPerStep {
		t.Errorf("kernels per step %v -> %v; want equal", d.Base.KernelsPerStep, d.New.KernelsPerStep)
	}
	if d.Base.DecodeSteps != 12 || d.New.DecodeSteps != 12 {
		t.Errorf("decode steps %d, %d; want 12 each", d.Base.DecodeSteps, d.New.DecodeSteps)
	}
}

// TestDiffSelf checks that a capture compared with itself has no significant row: every
// row ~ with p = 1.
func TestDiffSelf(t *testing.T) {
	inCaptureDir(t, "moe-eager-nvtx")
	code, stdout, stderr := stepstat("diff", "-f", "json", "moe-eager-nvtx.sqlite", "moe-eager-nvtx.sqlite")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var d struct {
		Step       map[string]any            `json:"step"`
		Categories map[string]map[string]any `json:"categories"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]any{"whole step": d.Step}
	for k, v := range d.Categories {
		rows[k] = v
	}
	for name, r := range rows {
		if r["significant"] != false || r["p_value"] != 1.0 {
			t.Errorf("%s: significant %v, p %v; want ~ with p = 1", name, r["significant"], r["p_value"])
		}
	}
	_, text, _ := stepstat("diff", "moe-eager-nvtx.sqlite", "moe-eager-nvtx.sqlite")
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "(p=") && !strings.Contains(line, " ~ (p=1.000 ") {
			t.Errorf("row not ~ with p=1: %q", line)
		}
	}
}

// TestDiffPublicPair runs the public before/after pair of a 2-GPU training script.
func TestDiffPublicPair(t *testing.T) {
	before := filepath.Join(publicTracesDir, "nsys-ai__mfu_2gpu_before.sqlite")
	after := filepath.Join(publicTracesDir, "nsys-ai__mfu_2gpu_after.sqlite")
	for _, f := range []string{"text", "json", "html"} {
		code, stdout, stderr := stepstat("diff", "-f", f, "-o", filepath.Join(t.TempDir(), "d."+f), before, after)
		if code == 1 && strings.Contains(stderr, "no such file") {
			t.Skip("public traces not available")
		}
		if code != 0 {
			t.Errorf("%s: exit %d: %s %s", f, code, stdout, stderr)
		}
	}
}

// TestDiffUsage: the speed-of-light flags are usage errors on diff (it compares steps, not
// a floor), and --unit run with one file per side warns that it cannot test.
func TestDiffUsage(t *testing.T) {
	inCaptureDir(t, "dense-eager", "dense-graph")
	for _, f := range [][]string{{"--sol-step", "1ms"}, {"--sol-bytes", "1GB"}, {"--bandwidth", "4800"}, {"--batch", "4"}} {
		args := append(append([]string{"diff"}, f...), "dense-eager.sqlite", "dense-graph.sqlite")
		if code, _, e := solRun(t, args...); code != 2 || !strings.Contains(e, f[0]+" applies to report only") {
			t.Errorf("diff %s: exit %d, stderr %q", f[0], code, e)
		}
	}
	code, out, _ := solRun(t, "diff", "--unit", "run", "dense-eager.sqlite", "dense-graph.sqlite")
	if code != 0 || !strings.Contains(out, "one sample per run with 1 run(s) on dense-eager and 1 on dense-graph") {
		t.Errorf("--unit run, one file per side: exit %d, no warning in:\n%s", code, out)
	}
}
