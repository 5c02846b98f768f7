package findings_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// truthReport summarises one held-out H200 capture of the test corpus (name without
// .sqlite.xz, nsystest.TruthCapture), decompressed into a temporary folder.
func truthReport(t *testing.T, name string, opt breakdown.Options) *breakdown.Report {
	t.Helper()
	path := nsystest.TruthCapture(t, name, t.TempDir())
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := breakdown.Summarize(tr, opt)
	if err != nil {
		t.Fatal(err)
	}
	tr.Release()
	return rep
}

// TestPlanLimiterIsACause: on every capture in testdata, the limiter is a cause with time
// at stake, never outlier_steps or coverage; each rule is one group, its members on
// distinct devices, the top member first; the warnings are never causes.
func TestPlanLimiterIsACause(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "traces", "*.sqlite.gz"))
	if err != nil || len(files) < 10 {
		t.Fatalf("captures: %d, %v", len(files), err)
	}
	limiters := 0
	for _, gz := range files {
		name := strings.TrimSuffix(filepath.Base(gz), ".sqlite.gz")
		fr := findings.Of(captureReport(t, name, breakdown.Options{}))
		seen := map[findings.ID]bool{}
		for _, g := range fr.Groups() {
			if seen[g.ID] {
				t.Errorf("%s: %s grouped twice", name, g.ID)
			}
			seen[g.ID] = true
			devs := map[int]bool{}
			for i, m := range g.Members {
				if m.F.ID != g.ID || devs[m.Dev] {
					t.Errorf("%s: group %s holds %s on device %d twice or of another rule", name, g.ID, m.F.ID, m.Dev)
				}
				devs[m.Dev] = true
				if i > 0 && m.F.AtStake > g.Members[0].F.AtStake {
					t.Errorf("%s: group %s: member %d has more at stake than the top", name, g.ID, i)
				}
			}
			if f := g.Top(); f.Warning() && f.Cause() {
				t.Errorf("%s: %s is a warning and a cause", name, f.ID)
			}
		}
		n := 0
		for _, fs := range fr.Findings {
			n += len(fs)
		}
		if got := 0; true {
			for _, g := range fr.Groups() {
				got += len(g.Members)
			}
			if got != n {
				t.Errorf("%s: groups hold %d findings, the devices %d", name, got, n)
			}
		}
		g, ok := fr.Limiter()
		if !ok {
			continue
		}
		limiters++
		f := g.Top()
		if !f.Cause() || f.AtStake <= 0 || f.ID == findings.Outliers || f.ID == findings.Coverage || f.Minor() {
			t.Errorf("%s: limiter %s with %v at stake", name, f.ID, f.AtStake)
		}
		for _, fs := range fr.Findings {
			for k := range fs {
				if fs[k].Cause() && fs[k].AtStake > f.AtStake {
					t.Errorf("%s: limiter %s (%v) but %s has %v at stake", name, f.ID, f.AtStake, fs[k].ID, fs[k].AtStake)
				}
			}
		}
	}
	if limiters < len(files)/2 {
		t.Errorf("a limiter on %d of %d captures", limiters, len(files))
	}
}

// TestPlanOutliersNotLimiter: slow-step holds one 503ms step among 2ms ones; outlier_steps
// puts the whole 2.1ms step at stake, yet the limiter is launch_bound (the cause of the
// summarised steps), and outlier_steps stays a finding with its evidence, as a warning.
func TestPlanOutliersNotLimiter(t *testing.T) {
	fr := findings.Of(captureReport(t, "slow-step", breakdown.Options{}))
	if o := find(fr.Findings[0], findings.Outliers); o == nil || !o.Warning() || o.Cause() {
		t.Fatalf("slow-step findings %v; want outlier_steps as a warning", findingIDs(fr.Findings[0]))
	}
	g, ok := fr.Limiter()
	if !ok || g.ID != findings.LaunchBound {
		t.Fatalf("slow-step limiter %q (%v); want launch_bound", g.ID, ok)
	}
}

// TestPlanThenHostStall: on the eager capture whose steps wait for cuDNN's plan building
// (sdpa-cudnn-eager: one gap of ~39ms per 42ms step, and no other rule holds), taking the
// stall out leaves a ~2.9ms step of launch gaps: then names launch_bound, on a step that
// is the mean step less the stall, with the stall gone from its idle time.
func TestPlanThenHostStall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		truth bool
	}{{"sdpa-cudnn-eager", false}, {"tp1_dense_eager", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var rep *breakdown.Report
			if tc.truth {
				rep = truthReport(t, tc.name, breakdown.Options{})
			} else {
				rep = captureReport(t, tc.name, breakdown.Options{})
			}
			fr := findings.Of(rep)
			g, ok := fr.Limiter()
			if !ok || g.ID != findings.HostStall {
				t.Fatalf("limiter %q; want host_stall", g.ID)
			}
			if find(fr.Findings[0], findings.LaunchBound) != nil {
				t.Fatalf("launch_bound holds before the stall is taken out: %v", findingIDs(fr.Findings[0]))
			}
			th := fr.Then[0]
			if th == nil || th.Next == nil || th.Next.ID != findings.LaunchBound {
				t.Fatalf("then %+v; want launch_bound", th)
			}
			sm := &rep.Devices[0].Summary
			if want := sm.Mean - g.Top().AtStake; th.Step != want || th.Next.Step != want {
				t.Errorf("then's step %v (its finding's %v); want the mean step %v less the stall %v = %v", th.Step, th.Next.Step, sm.Mean, g.Top().AtStake, want)
			}
			idle := sm.Categories[kernelclass.Idle].Mean - g.Top().AtStake
			if th.Next.AtStake <= 0 || th.Next.AtStake > idle {
				t.Errorf("then: launch_bound %v at stake; want within the %v of idle left", th.Next.AtStake, idle)
			}
			if frac := float64(th.Next.AtStake) / float64(th.Step); frac < findings.LaunchBoundShare {
				t.Errorf("then: launch_bound holds %.2f of the step left", frac)
			}
			if sp := th.Speedup(); sp < 2 {
				t.Errorf("then: speedup %.1f", sp)
			}
			if tc.truth { // the numbers: 40.8ms of 54.4ms, a ~13.6ms step left
				if th.Step < 13*time.Millisecond || th.Step > 14*time.Millisecond {
					t.Errorf("then: step %v; want ~13.6ms", th.Step)
				}
			}
		})
	}
}

// TestPlanThenTakesOut checks what taking a cause out does to the summary on real
// captures: the step shrinks by exactly the time at stake, the categories still add up to
// it, and the cause taken out does not hold again.
func TestPlanThenTakesOut(t *testing.T) {
	for _, name := range []string{"dense-eager", "tp2-moe-eager", "tp2-moe-graph", "moe-graph", "serve-cb", "loop-2sync"} {
		fr := findings.Of(captureReport(t, name, breakdown.Options{}))
		for d := range fr.Devices {
			for k := range fr.Findings[d] {
				f := &fr.Findings[d][k]
				th := findings.ThenOf(fr, d, f)
				if !f.Cause() {
					if th != nil {
						t.Errorf("%s device %d: then after %s, not a cause", name, d, f.ID)
					}
					continue
				}
				if th == nil {
					t.Errorf("%s device %d: no then after %s", name, d, f.ID)
					continue
				}
				// kernel_storm takes its busy time out of the busy categories, at most their time.
				if got := fr.Devices[d].Summary.Mean - th.Step; got != f.AtStake && f.ID != findings.KernelStorm {
					t.Errorf("%s device %d: %s took %v out; at stake %v", name, d, f.ID, got, f.AtStake)
				}
				if th.Next != nil && (th.Next.ID == f.ID || !th.Next.Cause() || th.Next.AtStake > th.Step) {
					t.Errorf("%s device %d: then after %s: %s with %v of %v", name, d, f.ID, th.Next.ID, th.Next.AtStake, th.Step)
				}
			}
		}
	}
}

// TestPlanMinor: on tp2-moe-eager, MoE routing holds 0.81% of rank 1's step: a minor cause,
// never the limiter.
func TestPlanMinor(t *testing.T) {
	fr := findings.Of(captureReport(t, "tp2-moe-eager", breakdown.Options{}))
	var minor *findings.Finding
	for _, g := range fr.Groups() {
		if g.ID == findings.MoERouting {
			minor = g.Top()
		}
	}
	if minor == nil || !minor.Minor() || !minor.Cause() {
		t.Fatalf("moe_routing_overhead %+v; want a minor cause", minor)
	}
	if share := float64(minor.AtStake) / float64(minor.Step); share >= findings.MinorShare {
		t.Errorf("minor at %.4f of the step", share)
	}
	if g, _ := fr.Limiter(); g.ID == findings.MoERouting {
		t.Error("a minor cause is the limiter")
	}
}

// TestAdviceReadsKnobs: tp2_graph_nvtx_ll was captured with NCCL_PROTO=LL, and its small
// all-reduces (latency-bound, 6.8µs of transfer per call) get protocol advice that follows
// the message size: LL, NCCL's protocol for small messages, never LL128 (for larger ones),
// and never a value the run configuration already sets. As recorded (LL): no protocol tip;
// unset, Simple or LL128: LL; LL,LL128 or ^Simple (LL allowed): no protocol tip.
func TestAdviceReadsKnobs(t *testing.T) {
	rep := truthReport(t, "tp2_graph_nvtx_ll", breakdown.Options{})
	if v := configValue(rep.Config, "NCCL_PROTO"); v != "LL" {
		t.Fatalf("tp2_graph_nvtx_ll recorded NCCL_PROTO=%q; want LL", v)
	}
	for _, tc := range []struct {
		proto   string // "recorded": as captured; "": unset
		want    string
		mustNot []string
	}{
		{"recorded", "", []string{"try NCCL_PROTO", "LL128"}},
		{"", "try NCCL_PROTO=LL (the protocol for small messages; NCCL picks by size when unset), ", []string{"LL128"}},
		{"Simple", "try NCCL_PROTO=LL (the protocol for small messages; the run has NCCL_PROTO=Simple)", []string{"LL128"}},
		{"LL128", "try NCCL_PROTO=LL (the protocol for small messages; the run has NCCL_PROTO=LL128)", nil},
		{"LL,LL128", "", []string{"try NCCL_PROTO"}},
		{"^Simple", "", []string{"try NCCL_PROTO"}},
	} {
		r := *rep
		if tc.proto != "recorded" {
			r.Config = nil
			for _, v := range rep.Config {
				if v.Name != "NCCL_PROTO" {
					r.Config = append(r.Config, v)
				}
			}
			if tc.proto != "" {
				r.Config = append(r.Config, nsys.EnvVar{Name: "NCCL_PROTO", Value: tc.proto})
			}
		}
		fr := findings.Of(&r)
		n := 0
		for d := range fr.Findings {
			c := find(fr.Findings[d], findings.Communication)
			if c == nil || !strings.Contains(c.Suggestion, "transfers are small") {
				continue
			}
			n++
			if strings.Contains(c.Suggestion, "vLLM") || strings.Contains(c.Suggestion, "SGLang") {
				t.Errorf("a PyTorch capture told of an engine's all-reduce: %s", c.Suggestion)
			}
			if tc.want != "" && !strings.Contains(c.Suggestion, tc.want) {
				t.Errorf("NCCL_PROTO=%q, device %d: %q not in %s", tc.proto, d, tc.want, c.Suggestion)
			}
			for _, bad := range tc.mustNot {
				if strings.Contains(c.Suggestion, bad) {
					t.Errorf("NCCL_PROTO=%q, device %d: suggestion names the knob at its value (%q): %s", tc.proto, d, bad, c.Suggestion)
				}
			}
		}
		if n == 0 {
			t.Fatalf("NCCL_PROTO=%q: no latency-bound communication finding on tp2_graph_nvtx_ll", tc.proto)
		}
	}
}

func configValue(cfg []nsys.EnvVar, name string) string {
	for _, v := range cfg {
		if v.Name == name {
			return v.Value
		}
	}
	return ""
}

// TestRounds: serve-assisted is assisted decoding (4 draft forwards before each verify
// forward): its decode steps are speculative rounds. Without tokens the time per token is
// unknown; with the tokens given it is every decode step's time over them; with vLLM-style
// step NVTX (crafted here on the capture's steps: execute_context_0(0)_generation_1(k)),
// the steps' own tokens. A capture without drafts (dense-eager) has no rounds.
func TestRounds(t *testing.T) {
	rep := captureReport(t, "serve-assisted", breakdown.Options{})
	fr := findings.Of(rep)
	rd := findings.RoundsOf(fr, 0)
	sm := &rep.Devices[0].Summary
	if !rd.Speculative || rd.Rounds < sm.Steps-1 || rd.Steps != sm.Steps || rd.DraftForwards < 3 || rd.DraftForwards > 4 {
		t.Fatalf("serve-assisted rounds %+v (%d summarised steps); want speculative, ~4 draft forwards a round", rd, sm.Steps)
	}
	if rd.Tokens != 0 || rd.PerToken != 0 || rd.TokensFrom != "" {
		t.Errorf("tokens known without tokens: %+v", rd)
	}
	var wall time.Duration
	n := 0
	for i := range rep.Devices[0].Steps {
		if st := &rep.Devices[0].Steps[i]; st.Phase == sm.Phase {
			wall += st.Wall()
			n++
		}
	}
	fr.Tokens = 3 * n
	rd = findings.RoundsOf(fr, 0)
	if rd.TokensFrom != findings.TokensGiven || rd.Tokens != 3*n || rd.PerToken != wall/time.Duration(3*n) || rd.TokensPerStep != 3 {
		t.Errorf("given %d tokens over %d steps (%v): %+v", 3*n, n, wall, rd)
	}
	// vLLM-style step NVTX: k tokens a step, 1..3 in turn.
	nv := *rep
	nv.Devices = append([]breakdown.DeviceReport(nil), rep.Devices...)
	nv.Devices[0].Steps = append([]breakdown.Step(nil), rep.Devices[0].Steps...)
	tokens := 0
	wall = 0
	for i := range nv.Devices[0].Steps {
		st := &nv.Devices[0].Steps[i]
		k := 1 + i%3
		st.Label = "execute_context_0(0)_generation_1(" + strconv.Itoa(k) + ")"
		if st.Phase == sm.Phase && !slices.Contains(sm.Outliers.Steps, st.Index) {
			tokens += k
			wall += st.Wall()
		}
	}
	rd = findings.RoundsOf(findings.Of(&nv), 0)
	if rd.TokensFrom != findings.TokensNVTX || rd.Tokens != tokens || rd.PerToken != wall/time.Duration(tokens) {
		t.Errorf("NVTX tokens %d over %v: %+v", tokens, wall, rd)
	}
	if d := findings.RoundsOf(findings.Of(captureReport(t, "dense-eager", breakdown.Options{})), 0); d.Speculative || d.Rounds != 0 {
		t.Errorf("dense-eager rounds %+v", d)
	}
}

// TestPlanLimiterPublic: on every public trace of the test corpus (nsystest.PublicTraces)
// that summarises, the limiter is a cause with time at stake, never a warning; without one,
// no cause above the minor share holds on any device.
func TestPlanLimiterPublic(t *testing.T) {
	files := nsystest.PublicTraces(t)
	summarised := 0
	defer func() {
		if summarised < len(files)/2 {
			t.Errorf("%d of %d public traces summarised", summarised, len(files))
		}
	}()
	for _, path := range files {
		tr, err := nsys.Open(context.Background(), path, nsys.Options{})
		if err != nil {
			continue // the corpus holds exports without GPU work: their error is tested elsewhere
		}
		rep, err := breakdown.Summarize(tr, breakdown.Options{})
		tr.Release()
		if err != nil {
			continue
		}
		fr := findings.Of(rep)
		summarised++
		g, ok := fr.Limiter()
		if ok {
			if f := g.Top(); !f.Cause() || f.AtStake <= 0 || f.Warning() {
				t.Errorf("%s: limiter %s with %v at stake", filepath.Base(path), f.ID, f.AtStake)
			}
			continue
		}
		for _, fs := range fr.Findings {
			for k := range fs {
				if fs[k].Cause() && !fs[k].Minor() {
					t.Errorf("%s: no limiter, but %s holds", filepath.Base(path), fs[k].ID)
				}
			}
		}
	}
}

// TestTokensVLLMCapture: engine-nvtx-vllm carries vLLM's step NVTX. Its ground truth says
// how many decode tokens each iteration generated: the g of its text, on all 34
// iterations. The report's time per token comes from those texts: the summarised decode
// steps' tokens, within the truth's 59 decode tokens of its 20 decode iterations.
func TestTokensVLLMCapture(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "traces", "engine-nvtx-vllm.truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var truth struct {
		Forwards []struct {
			NVTX         string `json:"nvtx"`
			Phase        string `json:"phase"`
			DecodeTokens int    `json:"decode_tokens"`
		} `json:"forwards"`
	}
	if err := json.Unmarshal(raw, &truth); err != nil {
		t.Fatal(err)
	}
	decode := 0
	for _, f := range truth.Forwards {
		n, ok := breakdown.StepTokens(&breakdown.Step{Label: f.NVTX})
		if !ok || n != f.DecodeTokens {
			t.Errorf("%q: %d tokens (%v); the truth says %d", f.NVTX, n, ok, f.DecodeTokens)
		}
		if f.Phase == "decode" {
			decode += f.DecodeTokens
		}
	}
	if len(truth.Forwards) != 34 {
		t.Fatalf("%d iterations in the truth", len(truth.Forwards))
	}
	fr := findings.Of(captureReport(t, "engine-nvtx-vllm", breakdown.Options{}))
	rd := findings.RoundsOf(fr, 0)
	if rd.TokensFrom != findings.TokensNVTX || rd.Tokens <= 0 || rd.Tokens > decode || rd.PerToken <= 0 || rd.Speculative {
		t.Errorf("rounds %+v; want tokens from the NVTX, at most the truth's %d decode tokens, no rounds", rd, decode)
	}
}

// TestImmaterialWaitIsNoFinding: on nsys-ai__mfu_2gpu_before (a public 2-GPU trace whose
// step is 74% attention + elementwise) rank 0's collectives hold 1.004ms of a 17.09ms step,
// 641µs of it waiting for rank 1: 3.8% of the step, under MaterialShare, so the ranks are
// balanced and that wait is not at stake. What is left, the 363µs transfer (2.1%), is under
// the rule's own threshold: no communication finding, and no limiter. On mfu_2gpu_after
// rank 1 waits 1.213ms/step for rank 0 (6.1%): material, so the finding holds there, with
// the wait at stake.
func TestImmaterialWaitIsNoFinding(t *testing.T) {
	read := func(name string) *findings.Report {
		path := nsystest.PublicTrace(t, name+".sqlite")
		tr, err := nsys.Open(context.Background(), path, nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Release()
		rep, err := breakdown.Summarize(tr, breakdown.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return findings.Of(rep)
	}
	before := read("nsys-ai__mfu_2gpu_before")
	for d, fs := range before.Findings {
		if c := find(fs, findings.Communication); c != nil {
			t.Errorf("mfu_2gpu_before device %d: communication_bound %v at stake of %v, from an immaterial wait", d, c.AtStake, c.Step)
		}
	}
	if g, ok := before.Limiter(); ok {
		t.Errorf("mfu_2gpu_before: limiter %s; want none (attention and elementwise are the step)", g.ID)
	}
	after := read("nsys-ai__mfu_2gpu_after")
	c := find(after.Findings[1], findings.Communication)
	if c == nil {
		t.Fatalf("mfu_2gpu_after rank 1: no communication finding; findings %v", findingIDs(after.Findings[1]))
	}
	if w := fact(t, c, "wait_ns"); c.AtStake < time.Duration(w) {
		t.Errorf("mfu_2gpu_after rank 1: %v at stake, under its material wait %v", c.AtStake, time.Duration(w))
	}
	if _, ok := c.Fact("immaterial_wait_ns"); ok {
		t.Errorf("mfu_2gpu_after rank 1: a material wait marked immaterial")
	}
}
