package compare_test

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestAlignedSamples: a 2-GPU diff does not pool ranks. tp2-moe-eager and tp2-moe-graph
// have 12 decode steps on each of 2 ranks: n is 12 aligned steps a side (not 24), each
// sample the step on the slowest rank, recomputed here from the reports; the step chart's
// walls are the same samples; per-rank rows keep 12 steps each.
func TestAlignedSamples(t *testing.T) {
	b, n := captureReport(t, "tp2-moe-eager"), captureReport(t, "tp2-moe-graph")
	c := compare.Compare(compare.Side{Label: "eager", Reports: []*findings.Report{b}}, compare.Side{Label: "graph", Reports: []*findings.Report{n}},
		breakdown.Decode, defaults)
	for _, side := range []struct {
		name  string
		rep   *findings.Report
		n     int
		walls [][]time.Duration
		mean  time.Duration
		how   []string
	}{{"base", b, c.Step.Mean.NBase, c.BaseSteps, c.Base.MeanStep, c.Base.AlignedBy}, {"new", n, c.Step.Mean.NNew, c.NewSteps, c.New.MeanStep, c.New.AlignedBy}} {
		var per [][]time.Duration
		for d := range side.rep.Devices {
			var ws []time.Duration
			for i := range side.rep.Devices[d].Steps {
				if st := &side.rep.Devices[d].Steps[i]; st.Phase == breakdown.Decode {
					ws = append(ws, st.Wall())
				}
			}
			per = append(per, ws)
		}
		if len(per) != 2 || len(per[0]) != len(per[1]) || len(per[0]) < 10 {
			t.Fatalf("%s: decode steps per rank %d/%d; want equal counts", side.name, len(per[0]), len(per[1]))
		}
		var want []time.Duration
		var total time.Duration
		for i := range per[0] {
			want = append(want, max(per[0][i], per[1][i]))
			total += want[i]
		}
		if side.n != len(per[0]) || c.Step.Base.N+c.Step.New.N != c.Step.Mean.NBase+c.Step.Mean.NNew {
			t.Errorf("%s: n=%d (medians %d+%d); want %d aligned steps", side.name, side.n, c.Step.Base.N, c.Step.New.N, len(per[0]))
		}
		if len(side.walls) != 1 || !slices.Equal(side.walls[0], want) {
			t.Errorf("%s: step walls %v; want the slowest rank's per aligned step %v", side.name, side.walls, want)
		}
		if m := total / time.Duration(len(want)); side.mean != m {
			t.Errorf("%s: mean step %v; want %v", side.name, side.mean, m)
		}
		if !slices.Equal(side.how, []string{"index"}) {
			t.Errorf("%s: aligned by %v; want index", side.name, side.how)
		}
	}
	for _, rk := range c.Ranks {
		if rk.Step.Mean.NBase != c.Step.Mean.NBase || rk.Step.Mean.NNew != c.Step.Mean.NNew {
			t.Errorf("rank %d: n=%d+%d; want the aligned steps", rk.Rank, rk.Step.Mean.NBase, rk.Step.Mean.NNew)
		}
	}
	// The test runs on the aligned samples: still significant, p from 12+12.
	if !c.Step.Mean.Significant || c.Step.Mean.P > 0.01 || c.Step.Mean.Method == "" {
		t.Errorf("whole step: p=%.4f (%s), significant %v", c.Step.Mean.P, c.Step.Mean.Method, c.Step.Mean.Significant)
	}
}

// TestFindingExpected: dense-eager's limiter is launch_bound, and its then names
// kernel_storm (what leads once the launch gaps are gone); on dense-graph kernel_storm
// holds a third of the step: an expected change. The reverse diff expects nothing of it.
func TestFindingExpected(t *testing.T) {
	e, g := captureReport(t, "dense-eager"), captureReport(t, "dense-graph")
	if e.Then[0] == nil || e.Then[0].Next == nil || e.Then[0].Next.ID != findings.KernelStorm {
		t.Fatalf("dense-eager then %+v; want kernel_storm", e.Then[0])
	}
	side := func(l string, r *findings.Report) compare.Side {
		return compare.Side{Label: l, Reports: []*findings.Report{r}}
	}
	c := compare.Compare(side("eager", e), side("graph", g), breakdown.Decode, defaults)
	i := slices.IndexFunc(c.Findings, func(f compare.FindingChange) bool { return f.ID == findings.KernelStorm })
	if i < 0 || c.Findings[i].Change == compare.FindingSame || c.Findings[i].Change == compare.FindingVanished || !c.Findings[i].Expected {
		t.Fatalf("kernel_storm change %+v; want it grown and expected", c.Findings)
	}
	for _, f := range c.Findings {
		if f.Expected && f.ID != findings.KernelStorm {
			t.Errorf("%s expected, but the then named kernel_storm", f.ID)
		}
	}
	r := compare.Compare(side("graph", g), side("eager", e), breakdown.Decode, defaults)
	for _, f := range r.Findings {
		if f.Expected && (g.Then[0] == nil || g.Then[0].Next == nil || g.Then[0].Next.ID != f.ID) {
			t.Errorf("reverse: %s expected without the base's then naming it", f.ID)
		}
	}
}

// TestRegression: the graph capture against the eager one is significantly slower (a
// regression); the reverse and a capture against itself are not.
func TestRegression(t *testing.T) {
	e, g := captureReport(t, "dense-eager"), captureReport(t, "dense-graph")
	side := func(l string, r *findings.Report) compare.Side {
		return compare.Side{Label: l, Reports: []*findings.Report{r}}
	}
	for _, tc := range []struct {
		base, new *findings.Report
		want      bool
	}{{g, e, true}, {e, g, false}, {g, g, false}} {
		c := compare.Compare(side("base", tc.base), side("new", tc.new), breakdown.Decode, defaults)
		slower, what := c.Regression()
		if slower != tc.want {
			t.Errorf("%s -> %s: regression %v (%s); want %v", tc.base.Path, tc.new.Path, slower, what, tc.want)
		}
		if slower && (!c.Step.Mean.Significant || c.Step.Mean.Delta < c.MinChangeNS || math.IsNaN(c.Step.Mean.P)) {
			t.Errorf("regression without a significant slower step: %+v", c.Step.Mean)
		}
	}
	// Beyond --min-change only: with a threshold above the change, no regression.
	opt := defaults
	opt.MinChange = 10
	if c := compare.Compare(side("base", g), side("new", e), breakdown.Decode, opt); func() bool { s, _ := c.Regression(); return s }() {
		t.Error("a change under --min-change is a regression")
	}
}

// truthReport summarises one held-out capture of the test corpus (name without
// .sqlite.xz, nsystest.TruthCapture), decompressed with xz.
func truthReport(t *testing.T, name string) *findings.Report {
	t.Helper()
	path := nsystest.TruthCapture(t, name, t.TempDir())
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := breakdown.Summarize(tr, breakdown.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr.Release()
	return findings.Of(rep)
}

// TestRoundsPerToken: assisted decoding with drafts accepted (spec_decode: 60 tokens in 25
// decode rounds) against the same with every draft rejected (spec_reject: 40 in 39). Per
// round the accepting run is slower (44.4 -> 36.4 ms: the rejecting run looks 18% faster);
// per token it is about twice as fast. Without tokens there is no per-token row and the
// regression verdict is per round; with them (--tokens 60,40) the verdict is per token:
// the rejecting side is a significant regression, the reverse is not.
func TestRoundsPerToken(t *testing.T) {
	acc, rej := truthReport(t, "spec_decode"), truthReport(t, "spec_reject")
	side := func(l string, r *findings.Report) compare.Side {
		return compare.Side{Label: l, Reports: []*findings.Report{r}}
	}
	c := compare.Compare(side("accept", acc), side("reject", rej), breakdown.Decode, defaults)
	if !c.BaseRounds.Speculative || !c.NewRounds.Speculative || c.Token != nil {
		t.Fatalf("rounds %+v / %+v, token row %v; want both speculative, no token row", c.BaseRounds, c.NewRounds, c.Token)
	}
	if c.BaseRounds.Steps != 25 || c.NewRounds.Steps != 39 || !c.Step.Mean.Significant || c.Step.Mean.Delta >= 0 {
		t.Fatalf("per round: %d and %d rounds, change %.0f ns (significant %v); want 25 and 39, faster", c.BaseRounds.Steps, c.NewRounds.Steps,
			c.Step.Mean.Delta, c.Step.Mean.Significant)
	}
	if slower, _ := c.Regression(); slower {
		t.Error("per round, the rejecting side is faster: no regression")
	}
	acc.Tokens, rej.Tokens = 60, 40
	c = compare.Compare(side("accept", acc), side("reject", rej), breakdown.Decode, defaults)
	tr := c.Token
	if tr == nil {
		t.Fatal("no per-token row with the tokens known")
	}
	var wa, wr time.Duration
	for _, w := range c.BaseSteps[0] {
		wa += w
	}
	for _, w := range c.NewSteps[0] {
		wr += w
	}
	if got, want := tr.Mean.Base, float64(wa)/60; math.Abs(got-want) > 1 {
		t.Errorf("accept per token %.0f ns; want the rounds' %v over 60 tokens = %.0f", got, wa, want)
	}
	if got, want := tr.Mean.New, float64(wr)/40; math.Abs(got-want) > 1 {
		t.Errorf("reject per token %.0f ns; want %.0f", got, want)
	}
	if ratio := tr.Mean.New / tr.Mean.Base; ratio < 1.7 || ratio > 2.3 || !tr.Mean.Significant {
		t.Errorf("per token reject/accept %.2f (significant %v); want about 2x", ratio, tr.Mean.Significant)
	}
	if slower, what := c.Regression(); !slower || !strings.Contains(what, "per token") {
		t.Errorf("regression %v (%s); want per token, slower", slower, what)
	}
	r := compare.Compare(side("reject", rej), side("accept", acc), breakdown.Decode, defaults)
	if slower, what := r.Regression(); slower {
		t.Errorf("reverse: regression %s", what)
	}
}

// TestTokensFromNVTX: with vLLM-style step NVTX (crafted on serve-assisted's steps:
// execute_context_0(0)_generation_1(k)), each step's time per token is its wall over its
// k tokens; the same steps with twice the tokens per step are twice as fast per token
// and the same per round.
func TestTokensFromNVTX(t *testing.T) {
	label := func(r *findings.Report, k int) *findings.Report {
		cp := *r.Report
		cp.Devices = slices.Clone(r.Devices)
		cp.Devices[0].Steps = slices.Clone(r.Devices[0].Steps)
		for i := range cp.Devices[0].Steps {
			cp.Devices[0].Steps[i].Label = "execute_context_0(0)_generation_1(" + strconv.Itoa(k) + ")"
		}
		return findings.Of(&cp)
	}
	r := captureReport(t, "serve-assisted")
	one, two := label(r, 1), label(r, 2)
	c := compare.Compare(compare.Side{Label: "one", Reports: []*findings.Report{one}}, compare.Side{Label: "two", Reports: []*findings.Report{two}},
		breakdown.Decode, defaults)
	if c.Token == nil || c.BaseRounds.TokensFrom != "nvtx" || c.NewRounds.Tokens != 2*c.BaseRounds.Tokens {
		t.Fatalf("token row %v, rounds %+v / %+v; want tokens from the NVTX", c.Token, c.BaseRounds, c.NewRounds)
	}
	if math.Abs(c.Token.Mean.New-c.Token.Mean.Base/2) > 1 || !c.Token.Mean.Significant || c.Step.Mean.Delta != 0 {
		t.Errorf("per token %.0f -> %.0f (significant %v), per round change %.0f; want half, significant, no change per round",
			c.Token.Mean.Base, c.Token.Mean.New, c.Token.Mean.Significant, c.Step.Mean.Delta)
	}
	if slower, what := c.Regression(); slower {
		t.Errorf("twice the tokens per round is a regression: %s", what)
	}
}
