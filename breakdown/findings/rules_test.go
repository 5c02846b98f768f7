package findings_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
	"github.com/stepstat/stepstat/nsys/nsystest/captures"
)

// captureReport summarises one capture of testdata/traces (name without .sqlite.gz).
func captureReport(t *testing.T, name string, opt breakdown.Options) *breakdown.Report {
	t.Helper()
	rep, err := breakdown.Summarize(captures.Trace(t, name), opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func findingIDs(fs []findings.Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, string(f.ID))
	}
	return ids
}

func find(fs []findings.Finding, id findings.ID) *findings.Finding {
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
	for _, id := range []findings.ID{findings.Communication, findings.MoERouting, findings.Coverage, findings.FarFromSOL} {
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

	// Waiting is the cost, not the transfer: no protocol or custom all-reduce tip.
	if strings.Contains(c.Suggestion, "NCCL_PROTO=LL or LL128") {
		t.Errorf("rank 0 waits 99%% of its collective time, yet the suggestion names protocols: %s", c.Suggestion)
	}
	if sk := findings.SkewOf(rep.Ranks); !sk.Material || sk.Waiter != 0 || sk.Late != 1 {
		t.Errorf("tp2-moe-eager skew %+v; want rank 0 waiting materially for rank 1", sk)
	}

	g := captureReport(t, "tp2-moe-graph", breakdown.Options{})
	gr := findings.Of(g)
	for d := range g.Devices {
		fs := gr.Findings[d]
		checkFindingsOrder(t, fs)
		if len(fs) == 0 || fs[0].ID != findings.KernelStorm {
			t.Errorf("tp2-moe-graph device %d findings %v; want kernel_storm first", d, findingIDs(fs))
		}
		if find(fs, findings.LaunchBound) != nil {
			t.Errorf("tp2-moe-graph device %d findings %v: no launch finding expected", d, findingIDs(fs))
		}
		if find(fs, findings.GraphLaunch) == nil {
			t.Errorf("tp2-moe-graph device %d findings %v: the GPU idles in cudaGraphLaunch (over 100µs/step); want graph_launch", d, findingIDs(fs))
		}
	}
	// Rank 0 spends 142µs/step (10.3%) in collectives, 88µs of it waiting for rank 1 (6.6% of
	// its step): material, so reported, with the late rank and no protocol tip; rank 1's
	// 61µs/step (4.5%) is not.
	c0 := find(gr.Findings[0], findings.Communication)
	if c0 == nil {
		t.Fatalf("tp2-moe-graph rank 0 findings %v; want communication_bound (10.3%% of the step)", findingIDs(gr.Findings[0]))
	}
	if stake := c0.AtStake; stake < 140*time.Microsecond || stake > 144*time.Microsecond {
		t.Errorf("tp2-moe-graph rank 0 communication at stake %v; want 142µs", stake)
	}
	if late := fact(t, c0, "late_rank"); late != 1 || strings.Contains(c0.Suggestion, "NCCL_PROTO") {
		t.Errorf("tp2-moe-graph rank 0: late rank %v, suggestion %s; want rank 1 and no protocol tip", late, c0.Suggestion)
	}
	if find(gr.Findings[1], findings.Communication) != nil {
		t.Errorf("tp2-moe-graph rank 1 findings %v: 4.5%% in collectives is not material", findingIDs(gr.Findings[1]))
	}
}

// TestFindingsMoERouting: context classification finds 12 router kernels per layer (48 per
// step); the index_select right before each layer's first expert GEMM is expert work (as
// the same op before every other expert of the loop), and the workload's moe_route NVTX
// range ends before it too.
func TestFindingsMoERouting(t *testing.T) {
	// Context classification finds the router of each layer (softmax, top-k, sorts, ...):
	// 48 routing kernels a decode step, 12 a layer.
	plain := captureReport(t, "moe-eager-nvtx", breakdown.Options{})
	f := find(findings.Of(plain).Findings[0], findings.MoERouting)
	if f == nil {
		t.Fatalf("no moe_routing_overhead on the MoE capture")
	}
	if n := fact(t, f, "routing_kernels_per_step"); n != 48 {
		t.Errorf("routing kernels/step %v; want 48 (12 per layer)", n)
	}
	// Mapping the moe_route ranges adds the router GEMM of each layer's range to routing
	// (and context the router kernel a layer after the range): 56.
	mapped := captureReport(t, "moe-eager-nvtx", breakdown.Options{NVTXCategories: []breakdown.NVTXCategory{
		{Match: regexp.MustCompile(`^moe_route$`), Category: kernelclass.MoERouting}}})
	fs := findings.Of(mapped).Findings[0]
	if f = find(fs, findings.MoERouting); f == nil {
		t.Fatalf("no moe_routing_overhead with moe_route mapped: %v", findingIDs(fs))
	}
	if n := fact(t, f, "routing_kernels_per_step"); n != 56 {
		t.Errorf("routing kernels/step %v; want 56", n)
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
	held := map[findings.ID]int{}
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
	for _, id := range []findings.ID{findings.LaunchBound, findings.Communication, findings.KernelStorm, findings.MoERouting,
		findings.FarFromSOL, findings.Coverage} {
		if held[id] == 0 {
			t.Errorf("%s holds on no capture; the check of its wording is empty", id)
		}
	}
}

// captureDB summarises a capture and opens its SQLite copy for SQL checks.
func captureDB(t *testing.T, name string, opt breakdown.Options) (*breakdown.Report, *sql.DB) {
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
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return rep, db
}

func sqlInt(t *testing.T, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n.Int64
}

// gapsSQL makes the temporary table g(g0, g1, nx) of the GPU's idle gaps of minNS or
// longer (between kernels, copies and memsets, by the running latest end), nx the kernel
// name id that ends each (NULL after a copy or memset).
func gapsSQL(t *testing.T, db *sql.DB, minNS int64) {
	t.Helper()
	for _, q := range []string{
		`DROP TABLE IF EXISTS temp.g`,
		`CREATE TEMP TABLE a AS SELECT start, end, shortName AS nm FROM CUPTI_ACTIVITY_KIND_KERNEL
		 UNION ALL SELECT start, end, NULL FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT start, end, NULL FROM CUPTI_ACTIVITY_KIND_MEMSET`,
		fmt.Sprintf(`CREATE TEMP TABLE g AS SELECT pe AS g0, start AS g1, nm AS nx FROM (SELECT start, nm,
		 max(end) OVER (ORDER BY start ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pe FROM a) WHERE start - pe >= %d`, minNS),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestFindingsHostStall: the cuDNN SDPA eager loop (the KV length grows each step) waits
// 37-46ms before the cuDNN attention kernel in every decode step while cuDNN builds a plan
// for the new length: host_stall first, its time the SQL sum of those gaps, with the
// module loading (cuLibraryLoadData, cuKernelSetAttribute) inside them; launch_bound is
// left with the ordinary launch gaps, under its threshold.
func TestFindingsHostStall(t *testing.T) {
	rep, db := captureDB(t, "sdpa-cudnn-eager", breakdown.Options{})
	fs := findings.Of(rep).Findings[0]
	checkFindingsOrder(t, fs)
	if len(fs) == 0 || fs[0].ID != findings.HostStall {
		t.Fatalf("findings %v; want host_stall first", findingIDs(fs))
	}
	f := &fs[0]
	sm := &rep.Devices[0].Summary
	gapsSQL(t, db, int64(breakdown.StallGap))
	const before = `FROM g JOIN StringIds s ON s.id = g.nx WHERE s.value GLOB 'cudnn_generated_fort_native_sdpa_sm80*'`
	n := sqlInt(t, db, `SELECT count(*) `+before)
	total := sqlInt(t, db, `SELECT sum(g1 - g0) `+before)
	if n != 24 || sm.Steps != 24 || sm.Stall.Steps != 24 || int64(sm.Stall.Total) != total {
		t.Errorf("stall in %d of %d steps, %v; SQL: %d gaps of 1ms or more before the cuDNN kernel, %dns", sm.Stall.Steps, sm.Steps, sm.Stall.Total, n, total)
	}
	if want := time.Duration(total / 24); f.AtStake != want || fact(t, f, "stall_steps") != 24 {
		t.Errorf("host_stall at stake %v in %v steps; want %v (SQL total / 24) in 24", f.AtStake, fact(t, f, "stall_steps"), want)
	}
	if k, _ := f.Fact("kernel"); !strings.HasPrefix(k.Text, "cudnn_generated_fort_native_sdpa_sm80") {
		t.Errorf("stall before %q; want the cuDNN SDPA kernel", k.Text)
	}
	// Module loading in those gaps: cuLibraryLoad*, cuKernelSetAttribute (they nest in no
	// other call of a higher group here).
	mod := sqlInt(t, db, `SELECT sum(min(g.g1, r.end) - max(g.g0, r.start)) FROM g JOIN StringIds s ON s.id = g.nx
		JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.start < g.g1 AND r.end > g.g0 JOIN StringIds c ON c.id = r.nameId
		WHERE s.value GLOB 'cudnn_generated_fort_native_sdpa_sm80*' AND
		(c.value GLOB 'cuLibraryLoad*' OR c.value GLOB 'cuKernelSetAttribute*' OR c.value GLOB 'cuLibraryGetKernel*')`)
	if got := sm.Stall.API[breakdown.APIModuleLoading]; got != time.Duration(mod) || mod < 20_000_000 {
		t.Errorf("module loading in the stalls %v; SQL %dns (want over 20ms in 24 steps)", got, mod)
	}
	if !strings.Contains(f.Suggestion, "warm up every shape") || !strings.Contains(f.Claim, "module loading") {
		t.Errorf("claim %q / suggestion %q: want module loading named and shapes warmed up", f.Claim, f.Suggestion)
	}
	if lb := find(fs, findings.LaunchBound); lb != nil {
		t.Errorf("launch_bound %v at stake: the ordinary gaps outside the stall are %v/step, under 30%% of the step", lb.AtStake, sm.Mean-f.AtStake)
	}
}

// TestFindingsGraphLaunch: a 526-node CUDA graph launched once per step: the GPU waits in
// each step's gap while the host is inside cudaGraphLaunch (about 0.8ms of a 2.4ms step);
// graph_launch has the SQL time of the gaps of 10µs or more inside graph launch calls,
// within the decode steps' windows.
func TestFindingsGraphLaunch(t *testing.T) {
	rep, db := captureDB(t, "graph-loop", breakdown.Options{})
	d := &rep.Devices[0]
	fs := findings.Of(rep).Findings[0]
	checkFindingsOrder(t, fs)
	g := find(fs, findings.GraphLaunch)
	if g == nil {
		t.Fatalf("findings %v; want graph_launch", findingIDs(fs))
	}
	gapsSQL(t, db, 10_000)
	var want int64
	for _, s := range d.Steps {
		if s.Phase != breakdown.Decode {
			continue
		}
		want += sqlInt(t, db, `SELECT sum(min(g.g1, r.end, ?2) - max(g.g0, r.start, ?1)) FROM g
			JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.start < g.g1 AND r.end > g.g0 JOIN StringIds c ON c.id = r.nameId
			WHERE c.value GLOB 'cudaGraphLaunch*' AND min(g.g1, r.end, ?2) > max(g.g0, r.start, ?1)`, int64(s.Start), int64(s.End))
	}
	sm := &d.Summary
	if sm.Steps != 40 || g.AtStake != time.Duration(want/40) || g.AtStake < 700*time.Microsecond {
		t.Errorf("graph_launch %v/step over %d steps; SQL %v/step over 40 (want over 0.7ms)", g.AtStake, sm.Steps, time.Duration(want/40))
	}
	if g.Severity != findings.High {
		t.Errorf("graph_launch severity %v: %v of a %v step", g.Severity, g.AtStake, sm.Mean)
	}
	// The first finding: the 484 short kernels per step, their busy time at stake.
	if fs[0].ID != findings.KernelStorm || fs[0].AtStake != sm.ShortBusyPerStep {
		t.Errorf("first finding %s %v; want kernel_storm, %v", fs[0].ID, fs[0].AtStake, sm.ShortBusyPerStep)
	}
	if find(fs, findings.LaunchBound) != nil {
		t.Errorf("findings %v: the graph launch's idle is graph_launch's, not launch_bound's", findingIDs(fs))
	}
}

// TestFindingsOutlier: one decode step holds a 0.5s host pause (time.sleep in the loop):
// it is left out of the summary and its own finding comes first; nothing else puts more
// than the summarised step at stake.
func TestFindingsOutlier(t *testing.T) {
	rep, db := captureDB(t, "slow-step", breakdown.Options{})
	d := &rep.Devices[0]
	sm := &d.Summary
	fs := findings.Of(rep).Findings[0]
	checkFindingsOrder(t, fs)
	if len(fs) == 0 || fs[0].ID != findings.Outliers {
		t.Fatalf("findings %v; want outlier_steps first", findingIDs(fs))
	}
	if len(sm.Outliers.Steps) != 1 || sm.Steps != 15 {
		t.Fatalf("outliers %v, %d steps summarised; want one of 16 decode steps out", sm.Outliers.Steps, sm.Steps)
	}
	var slow *breakdown.Step
	for i := range d.Steps {
		if d.Steps[i].Index == sm.Outliers.Steps[0] {
			slow = &d.Steps[i]
		}
	}
	// The GPU's longest gap (SQL) is the outlier's longest gap, and the host was in no CUDA call.
	gapsSQL(t, db, 1_000_000)
	longest := sqlInt(t, db, `SELECT max(g1 - g0) FROM g`)
	if lg := sm.Outliers.LongGap; int64(lg.Dur()) != longest || lg.API[breakdown.APINone] < lg.Dur()*99/100 || slow == nil || slow.Wall() < 500*time.Millisecond {
		t.Errorf("outlier's longest gap %v (no CUDA call %v); SQL longest GPU gap %dns; step %v", lg.Dur(), lg.API[breakdown.APINone], longest, slow)
	}
	f := &fs[0]
	excess := (sm.Outliers.Wall - sm.Outliers.Median) / 16
	if fact(t, f, "excess_per_step_ns") != float64(excess) || f.AtStake != sm.Mean || excess <= sm.Mean {
		t.Errorf("outlier at stake %v, excess %v/step; want the excess (%v) capped at the step %v", f.AtStake, fact(t, f, "excess_per_step_ns"), excess, sm.Mean)
	}
	if sm.Mean > 3*time.Millisecond || sm.Median > 3*time.Millisecond {
		t.Errorf("summarised step mean %v, median %v: the 0.5s step is still in", sm.Mean, sm.Median)
	}
}

// TestFindingsAtStakeBounded: on every capture, no finding puts more time at stake than the
// summarised step, and the stall's and the summary's idle attribution add up.
func TestFindingsAtStakeBounded(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "traces", "*.sqlite.gz"))
	if err != nil || len(files) < 10 {
		t.Fatalf("captures: %d, %v", len(files), err)
	}
	for _, gz := range files {
		name := strings.TrimSuffix(filepath.Base(gz), ".sqlite.gz")
		rep := captureReport(t, name, breakdown.Options{})
		fr := findings.Of(rep)
		for di := range rep.Devices {
			sm := &rep.Devices[di].Summary
			for _, f := range fr.Findings[di] {
				if f.AtStake > sm.Mean || f.AtStake < 0 || f.Step != sm.Mean {
					t.Errorf("%s device %d: %s puts %v at stake of a %v step (summary mean %v)", name, di, f.ID, f.AtStake, f.Step, sm.Mean)
				}
			}
			var api, stall time.Duration
			for g := range breakdown.NumAPIGroups {
				api += sm.Gaps.API[g]
				stall += sm.Stall.API[g]
			}
			if api != sm.Gaps.Total || stall != sm.Stall.Total {
				t.Errorf("%s device %d: API groups %v of idle %v; stall groups %v of %v", name, di, api, sm.Gaps.Total, stall, sm.Stall.Total)
			}
		}
	}
}

// TestFindingsMoEEager: transformers' eager OLMoE (hf-moe-eager, 4 MoE layers): the
// vectorized_gather_kernel right before each expert GEMM gathers the selected experts'
// weights: moe_expert, not routing; expert work ends at the weighted sum, so the next
// layer's residual add and cast are elementwise. Routing is then 6 kernels a layer
// (softmax, top-k, sort, 3 bookkeeping ops) and no longer 10% of the busy time.
func TestFindingsMoEEager(t *testing.T) {
	rep := captureReport(t, "hf-moe-eager", breakdown.Options{})
	sm := &rep.Devices[0].Summary
	if r, x := sm.Categories[kernelclass.MoERouting].KernelsPerStep, sm.Categories[kernelclass.MoEExpert].KernelsPerStep; r != 24 || x != 32 {
		t.Errorf("moe_routing %v, moe_expert %v kernels/step; want 24 (6 a layer) and 32 (8 a layer)", r, x)
	}
	// The gate/up weight gathers (vectorized_gather_kernel<16>): one a layer in each of the 15
	// decode steps is expert work (the prefill's, between its token loops, stay routing).
	expert := 0
	for _, k := range rep.Kernels {
		if strings.Contains(k.Name, "vectorized_gather_kernel<(int)16") && k.Category == kernelclass.MoEExpert {
			expert += k.Count
		}
	}
	if expert < 15*4 {
		t.Errorf("%d vectorized_gather_kernel<16> in moe_expert; want at least 60 (4 layers x 15 decode steps)", expert)
	}
	fs := findings.Of(rep).Findings[0]
	if len(fs) == 0 || fs[0].ID != findings.LaunchBound {
		t.Errorf("findings %v; want launch_bound first (93.5%% idle)", findingIDs(fs))
	}
	if f := find(fs, findings.MoERouting); f != nil {
		t.Errorf("moe_routing_overhead %v: routing %v/step is under 10%% of the busy time once the weight gathers are expert work",
			f.AtStake, sm.Categories[kernelclass.MoERouting].Mean)
	}
}

// TestFindingsHostStallContinuousBatching: transformers' continuous batching runs paged
// attention through cuDNN SDPA, which builds a plan for every new batch shape: in each of
// the 33 decode iterations the GPU waits over 40ms for the host before cuDNN's 4-byte
// memset that precedes its attention kernel, and cuDNN picks another kernel (sm80 or sm90
// plan) as the shape changes. host_stall must see one recurring stall across both kernels
// and through the memset, and the gaps it sums are those SQL finds before the memsets
// that precede a cuDNN kernel.
func TestFindingsHostStallContinuousBatching(t *testing.T) {
	rep, db := captureDB(t, "serve-cb", breakdown.Options{})
	fs := findings.Of(rep).Findings[0]
	checkFindingsOrder(t, fs)
	if len(fs) == 0 || fs[0].ID != findings.HostStall {
		t.Fatalf("findings %v; want host_stall first", findingIDs(fs))
	}
	sm := &rep.Devices[0].Summary
	if sm.Stall.Steps != sm.Steps || sm.Stall.Category != kernelclass.Attention {
		t.Fatalf("stall in %d of %d steps before %v kernels; want every step, attention", sm.Stall.Steps, sm.Steps, sm.Stall.Category)
	}
	if per := sm.Stall.Total / time.Duration(sm.Stall.Steps); per < 40*time.Millisecond {
		t.Errorf("stall %v per step; SQL: over 40ms before every cuDNN attention kernel", per)
	}
	// Every decode step's stall is a gap of 1ms or more after which the next kernel is a
	// cuDNN one (directly, or after the memset).
	gapsSQL(t, db, int64(breakdown.StallGap))
	if m := sqlInt(t, db, `SELECT count(*) FROM g WHERE g.nx IS NULL`); m < 20 {
		t.Errorf("SQL: %d long gaps end at a copy or memset; the capture has one before most cuDNN kernels", m)
	}
	n := sqlInt(t, db, `SELECT count(*) FROM g WHERE (SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k
		JOIN StringIds s ON s.id = k.demangledName WHERE k.start >= g.g1 ORDER BY k.start LIMIT 1) GLOB 'cudnn_generated_fort_native_sdpa*'`)
	if n < int64(sm.Stall.Steps) {
		t.Errorf("SQL: %d gaps of 1ms or more come before a cuDNN kernel; stall counts %d steps", n, sm.Stall.Steps)
	}
}

// TestAdviceFitsStack: the launch_bound advice names the options of the stack the capture
// shows. dense-eager is a plain PyTorch loop: torch.compile, no vLLM or SGLang flag. The
// engine captures carry the engines' NVTX step ranges (engine-nvtx-vllm, engine-nvtx-sglang:
// vLLM and SGLang); the same report cut by vLLM's, SGLang's or TensorRT-LLM's ranges gets
// that engine's options only.
func TestAdviceFitsStack(t *testing.T) {
	for name, want := range map[string]findings.Stack{"dense-eager": findings.StackPyTorch, "engine-nvtx-vllm": findings.StackVLLM,
		"engine-nvtx-sglang": findings.StackSGLang} {
		if got := findings.StackOf(captureReport(t, name, breakdown.Options{})); got != want {
			t.Errorf("%s: stack %s, want %s", name, got, want)
		}
	}
	rep := captureReport(t, "dense-eager", breakdown.Options{})
	for _, tc := range []struct {
		detail      string // the step method's detail, as the engine's ranges give it
		want        string
		mustNotName []string
	}{
		{rep.Devices[0].MethodDetail, `torch.compile(mode="reduce-overhead")`, []string{"vLLM", "SGLang", "--enforce-eager", "--cuda-graph-max-bs", "TensorRT"}},
		{"vLLM NVTX ranges", "vLLM: drop --enforce-eager", []string{"SGLang", "torch.compile", "cuda_graph_config"}},
		{"SGLang scheduler NVTX ranges", "SGLang: no --disable-cuda-graph, and --cuda-graph-max-bs", []string{"vLLM", "torch.compile", "cuda_graph_config"}},
		{"TensorRT-LLM NVTX ranges", "cuda_graph_config", []string{"vLLM", "SGLang", "torch.compile"}},
	} {
		r := *rep
		r.Devices = slices.Clone(rep.Devices)
		r.Devices[0].MethodDetail = tc.detail
		f := find(findings.Of(&r).Findings[0], findings.LaunchBound)
		if f == nil {
			t.Fatalf("%s: no launch_bound finding", tc.detail)
		}
		if !strings.Contains(f.Suggestion, tc.want) {
			t.Errorf("%s: %q not in %s", tc.detail, tc.want, f.Suggestion)
		}
		for _, bad := range tc.mustNotName {
			if strings.Contains(f.Suggestion, bad) {
				t.Errorf("%s: the advice names %q, of another stack: %s", tc.detail, bad, f.Suggestion)
			}
		}
	}
}
