package findings_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// captureReport summarises one capture of testdata/traces (name without .sqlite.gz).
func captureReport(t *testing.T, name string, opt breakdown.Options) *breakdown.Report {
	t.Helper()
	gz := filepath.Join("..", "..", "testdata", "traces", name+".sqlite.gz")
	path := filepath.Join(t.TempDir(), name+".sqlite")
	nsystest.Gunzip(t, gz, path)
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := breakdown.Summarize(tr, opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func findingIDs(fs []findings.Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	return ids
}

func find(fs []findings.Finding, id string) *findings.Finding {
	for i := range fs {
		if fs[i].ID == id {
			return &fs[i]
		}
	}
	return nil
}

func fact(t *testing.T, f *findings.Finding, key string) float64 {
	t.Helper()
	e, ok := f.Fact(key)
	if !ok {
		t.Fatalf("%s: no evidence %q", f.ID, key)
	}
	return e.N
}

// checkFindingsOrder checks that findings come most time at stake first and that none
// claims more than its step.
func checkFindingsOrder(t *testing.T, fs []findings.Finding) {
	t.Helper()
	for i := range fs {
		if fs[i].AtStake > fs[i].Step || fs[i].AtStake < 0 {
			t.Errorf("%s: %v at stake of a %v step", fs[i].ID, fs[i].AtStake, fs[i].Step)
		}
		if i > 0 && fs[i].AtStake > fs[i-1].AtStake {
			t.Errorf("findings out of order: %v", findingIDs(fs))
		}
	}
}

// TestFindingsDense: the eager dense decode step (89% idle between 62 one-by-one launches)
// is launch-bound first, with a headroom (its busy time) close to the CUDA-graph capture's
// step; the graph capture of the same model is not launch-bound, and its storm of short
// kernels leads. Neither has communication, MoE routing, coverage or speed-of-light
// findings.
func TestFindingsDense(t *testing.T) {
	eager := captureReport(t, "dense-eager", breakdown.Options{})
	graph := captureReport(t, "dense-graph", breakdown.Options{})
	fe := findings.Of(eager).Findings[0]
	fg := findings.Of(graph).Findings[0]
	checkFindingsOrder(t, fe)
	checkFindingsOrder(t, fg)
	if len(fe) == 0 || fe[0].ID != findings.LaunchBound || fe[0].Severity != findings.High {
		t.Fatalf("dense-eager findings %v; want launch_bound first, high", findingIDs(fe))
	}
	lb := &fe[0]
	// Idle while launching or in Python is most of the step.
	if s := float64(lb.AtStake) / float64(lb.Step); s < 0.8 {
		t.Errorf("launch_bound at stake %.2f of the step; want >= 0.8 (89%% idle by construction)", s)
	}
	if n := fact(t, lb, "launches_per_step"); n != 62 {
		t.Errorf("launches/step %v; want 62", n)
	}
	busy := time.Duration(fact(t, lb, "busy_ns"))
	graphStep := graph.Devices[0].Summary.Mean
	// The headroom approaches what CUDA graphs got: within a factor of two of the graph
	// step, below it (the graph step keeps some gaps), and far below the eager step.
	if busy > graphStep || 2*busy < graphStep || 4*busy > lb.Step {
		t.Errorf("headroom (busy) %v; graph step %v, eager step %v", busy, graphStep, lb.Step)
	}
	if find(fg, findings.LaunchBound) != nil {
		t.Errorf("dense-graph is launch-bound: %v", findingIDs(fg))
	}
	if len(fg) == 0 || fg[0].ID != findings.KernelStorm {
		t.Fatalf("dense-graph findings %v; want kernel_storm first", findingIDs(fg))
	}
	// 36 elementwise kernels of ~2 µs and most of the small GEMMs run under 5 µs.
	if n := fact(t, &fg[0], "short_kernels_per_step"); n < 40 || n > 62 {
		t.Errorf("short kernels/step %v; want 40-62 of the 62", n)
	}
	for _, id := range []string{findings.Communication, findings.MoERouting, findings.Coverage, findings.FarFromSOL} {
		if find(fe, id) != nil || find(fg, id) != nil {
			t.Errorf("%s on a dense 1-GPU capture: eager %v, graph %v", id, findingIDs(fe), findingIDs(fg))
		}
	}
	// The graph step's token read-back (a 32-byte pageable copy, then a sync) leaves the GPU
	// idle about 10 µs/step (SQL on the export: 2.6-4.6 µs before the copy runs, 5-6 µs
	// from its end to the call's return, 4-5 µs syncing), 2.5% of the step: no finding. In
	// all gaps, the ~1.5 µs gaps between the replay's nodes while the host blocks in the
	// copy call count as copying too (37 µs/step), which is not the read-back's cost.
	if hs := find(fg, findings.HostSync); hs != nil {
		t.Errorf("dense-graph host_sync_copy %v at stake: the read-back costs ~10µs of a 395µs step", hs.AtStake)
	}
	sm := &graph.Devices[0].Summary
	n := time.Duration(sm.Steps)
	long := (sm.Gaps.HostLong[breakdown.HostSync] + sm.Gaps.HostLong[breakdown.HostCopy]) / n
	all := (sm.Gaps.Host[breakdown.HostSync] + sm.Gaps.Host[breakdown.HostCopy]) / n
	if long < 5*time.Microsecond || long > 20*time.Microsecond || all < 3*long {
		t.Errorf("dense-graph idle while syncing or copying: %v/step in gaps >= 10µs, %v in all gaps; want 5-20µs and the short gaps most of all", long, all)
	}
	// In the eager step the short kernels' own time is small beside the launch gaps.
	if ks := find(fe, findings.KernelStorm); ks != nil && ks.Severity != findings.Low {
		t.Errorf("dense-eager kernel_storm %s; want low beside launch_bound", ks.Severity)
	}
}

// TestFindingsTP2: on the eager 2-GPU MoE capture, rank 0 spends most of its step in
// all-reduce waiting for rank 1, which is itself launch-bound; with CUDA graphs neither
// rank is communication- or launch-bound and the short kernels lead.
func TestFindingsTP2(t *testing.T) {
	rep := captureReport(t, "tp2-moe-eager", breakdown.Options{})
	rep.Config = []nsys.EnvVar{{Name: "NCCL_PROTO", Value: "LL"}, {Name: "CUDA_VISIBLE_DEVICES", Value: "0,1"}}
	fr := findings.Of(rep)
	f0, f1 := fr.Findings[0], fr.Findings[1]
	checkFindingsOrder(t, f0)
	checkFindingsOrder(t, f1)
	if len(f0) == 0 || f0[0].ID != findings.Communication {
		t.Fatalf("rank 0 findings %v; want communication_bound first", findingIDs(f0))
	}
	c := &f0[0]
	if late := fact(t, c, "late_rank"); late != 1 {
		t.Errorf("late rank %v; want 1", late)
	}
	if ws := fact(t, c, "wait_share"); ws < 0.9 {
		t.Errorf("wait share %.3f; want >= 0.9", ws)
	}
	if n, m := fact(t, c, "late_rank_last_arrivals"), fact(t, c, "matched_calls"); m != 108 || n < 0.9*m {
		t.Errorf("rank 1 last at %v of %v matched calls; want most of 108", n, m)
	}
	if k, _ := c.Fact("knobs"); k.Text != "NCCL_PROTO=LL" {
		t.Errorf("knobs %q; want only the NCCL one", k.Text)
	}
	if !regexp.MustCompile(`rank 1`).MatchString(c.Suggestion) {
		t.Errorf("suggestion does not name rank 1: %s", c.Suggestion)
	}
	if find(f1, findings.Communication) != nil {
		t.Errorf("rank 1 (0.5%% all-reduce) has a communication finding: %v", findingIDs(f1))
	}
	if len(f1) == 0 || f1[0].ID != findings.LaunchBound {
		t.Errorf("rank 1 findings %v; want launch_bound first", findingIDs(f1))
	}

	g := captureReport(t, "tp2-moe-graph", breakdown.Options{})
	for d := range g.Devices {
		fs := findings.Of(g).Findings[d]
		checkFindingsOrder(t, fs)
		if len(fs) == 0 || fs[0].ID != findings.KernelStorm {
			t.Errorf("tp2-moe-graph device %d findings %v; want kernel_storm first", d, findingIDs(fs))
		}
		if find(fs, findings.Communication) != nil || find(fs, findings.LaunchBound) != nil {
			t.Errorf("tp2-moe-graph device %d findings %v: no communication or launch finding expected", d, findingIDs(fs))
		}
	}
}

// TestFindingsMoERouting: with the workload's moe_route NVTX ranges mapped to
// moe_routing, the 13 router kernels per layer (52 per step) show against the experts'
// time; without the mapping (routing ops classified by name as elementwise) nothing says so.
func TestFindingsMoERouting(t *testing.T) {
	// Context classification finds the router of each layer (softmax, top-k, sorts, ...):
	// 52 routing kernels a decode step, 13 a layer.
	plain := captureReport(t, "moe-eager-nvtx", breakdown.Options{})
	f := find(findings.Of(plain).Findings[0], findings.MoERouting)
	if f == nil {
		t.Fatalf("no moe_routing_overhead on the MoE capture")
	}
	if n := fact(t, f, "routing_kernels_per_step"); n != 52 {
		t.Errorf("routing kernels/step %v; want 52 (13 per layer)", n)
	}
	// Mapping the moe_route ranges adds the router GEMM of each layer's range to routing
	// (and context the 2 router kernels a layer after the range): 60.
	mapped := captureReport(t, "moe-eager-nvtx", breakdown.Options{NVTXCategories: []breakdown.NVTXCategory{
		{Match: regexp.MustCompile(`^moe_route$`), Category: kernelclass.MoERouting}}})
	fs := findings.Of(mapped).Findings[0]
	if f = find(fs, findings.MoERouting); f == nil {
		t.Fatalf("no moe_routing_overhead with moe_route mapped: %v", findingIDs(fs))
	}
	if n := fact(t, f, "routing_kernels_per_step"); n != 60 {
		t.Errorf("routing kernels/step %v; want 60", n)
	}
	// A dense model has no routing.
	if f := find(findings.Of(captureReport(t, "dense-eager", breakdown.Options{})).Findings[0], findings.MoERouting); f != nil {
		t.Errorf("moe_routing_overhead on a dense model: %+v", f)
	}
}

// TestFindingsCoverageAndSOL: a capture whose compiled graphs were traced at graph level
// has a quarter of its step in unnamed work, which the coverage finding reports; a
// speed-of-light floor far below the step gives far_from_sol, one close to it does not.
func TestFindingsCoverageAndSOL(t *testing.T) {
	gl := captureReport(t, "hf-qwen3moe-compile-graphlevel", breakdown.Options{})
	f := find(findings.Of(gl).Findings[0], findings.Coverage)
	if f == nil || fact(t, f, "other_share") < 0.2 {
		t.Fatalf("coverage finding %+v; want one with >= 20%% in other", f)
	}
	if f := find(findings.Of(captureReport(t, "moe-graph", breakdown.Options{})).Findings[0], findings.Coverage); f != nil {
		t.Errorf("coverage finding on a fully classified capture: %+v", f)
	}
	far := captureReport(t, "dense-graph", breakdown.Options{SOLStep: 100 * time.Microsecond})
	f = find(findings.Of(far).Findings[0], findings.FarFromSOL)
	if f == nil || fact(t, f, "ratio") < 3.5 {
		t.Fatalf("far_from_sol %+v; want ratio ~4 against a 100µs floor", f)
	}
	near := captureReport(t, "dense-graph", breakdown.Options{SOLStep: 300 * time.Microsecond})
	if f := find(findings.Of(near).Findings[0], findings.FarFromSOL); f != nil {
		t.Errorf("far_from_sol at ratio %v (< %v)", fact(t, f, "ratio"), findings.FarFromSOLRatio)
	}
}

// TestFindingsWorded: on every capture, each finding that holds carries a claim and a
// suggestion written by its rule, with no formatting error in them.
func TestFindingsWorded(t *testing.T) {
	caps, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "traces", "*.sqlite.gz"))
	if len(caps) == 0 {
		t.Fatal("no captures")
	}
	held := map[string]int{}
	for _, c := range caps {
		name := strings.TrimSuffix(filepath.Base(c), ".sqlite.gz")
		fr := findings.Of(captureReport(t, name, breakdown.Options{SOLStep: 100 * time.Microsecond}))
		for d, fs := range fr.Findings {
			for _, f := range fs {
				held[f.ID]++
				if f.Claim == "" || f.Suggestion == "" || strings.Contains(f.Claim+f.Suggestion, "%!") {
					t.Errorf("%s device %d %s: claim %q, suggestion %q", name, d, f.ID, f.Claim, f.Suggestion)
				}
			}
		}
	}
	for _, id := range []string{findings.LaunchBound, findings.Communication, findings.KernelStorm, findings.MoERouting,
		findings.FarFromSOL, findings.Coverage} {
		if held[id] == 0 {
			t.Errorf("%s holds on no capture; the check of its wording is empty", id)
		}
	}
}
