package compare_test

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/nsys/nsystest/captures"
)

// captureReport summarises one capture of testdata/traces (name without .sqlite.gz) and
// applies the findings.
func captureReport(t *testing.T, name string) *findings.Report {
	t.Helper()
	rep, err := breakdown.Summarize(captures.Trace(t, name), breakdown.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return findings.Of(rep)
}

func compareCaptures(t *testing.T, base, new string) *compare.Comparison {
	t.Helper()
	b, n := captureReport(t, base), captureReport(t, new)
	return compare.Compare(compare.Side{Label: base, Reports: []*findings.Report{b}},
		compare.Side{Label: new, Reports: []*findings.Report{n}}, breakdown.Decode, compare.Options{MinChange: 0.01})
}

// TestStoryDense: eager -> graph on the dense model: the biggest significant change is idle,
// launches per step fall from 62 to 1 with the same 62 kernels, launch_bound vanishes.
func TestStoryDense(t *testing.T) {
	c := compareCaptures(t, "dense-eager", "dense-graph")
	story := c.Story()
	if len(story) < 2 || story[0].Row != &c.Step || story[1].Row.Name != "idle" {
		t.Fatalf("what changed %v; want the whole step, then idle", storyNames(story))
	}
	if c.Base.LaunchesPerStep != 62 || c.New.LaunchesPerStep != 1 || c.Base.KernelsPerStep != c.New.KernelsPerStep {
		t.Errorf("launches/step %v -> %v, kernels/step %v -> %v; want 62 -> 1, the same kernels", c.Base.LaunchesPerStep,
			c.New.LaunchesPerStep, c.Base.KernelsPerStep, c.New.KernelsPerStep)
	}
	if c.Ranks != nil {
		t.Errorf("per-rank rows on 1-GPU traces: %d", len(c.Ranks))
	}
	got := map[findings.ID]compare.Change{}
	for _, f := range c.Findings {
		got[f.ID] = f.Change
	}
	if got[findings.LaunchBound] != compare.FindingVanished || got[findings.KernelStorm] != compare.FindingChanged {
		t.Errorf("finding changes %v; want launch_bound vanished, kernel_storm changed", got)
	}
	if c.Findings[0].Change == compare.FindingSame {
		t.Errorf("findings not led by changes: %+v", c.Findings[0])
	}
}

// TestStoryTP2: eager -> graph on 2 GPUs: rank 0's all-reduce (waiting for rank 1 in
// eager mode) falls from ~9.8ms to ~0.1ms per step and is rank 0's biggest significant
// change; rank 1's all-reduce, which never waited, does not fall like it.
func TestStoryTP2(t *testing.T) {
	c := compareCaptures(t, "tp2-moe-eager", "tp2-moe-graph")
	if len(c.Ranks) != 2 {
		t.Fatalf("%d rank comparisons; want 2", len(c.Ranks))
	}
	ar := func(rk int) compare.Row {
		for _, r := range c.Ranks[rk].Categories {
			if r.Name == "allreduce" {
				return r
			}
		}
		t.Fatal("no allreduce row")
		return compare.Row{}
	}
	r0 := ar(0)
	if !r0.Significant || r0.Base.Center < 5e6 || r0.New.Center > 5e5 {
		t.Errorf("rank 0 allreduce %v -> %v ns, significant %v; want ~9.8ms -> ~0.1ms, significant", r0.Base.Center, r0.New.Center, r0.Significant)
	}
	biggest, size := "", 0.0
	for _, r := range c.Ranks[0].Categories {
		if r.Mean.Significant && math.Abs(r.Mean.Delta) > size {
			biggest, size = r.Name, math.Abs(r.Mean.Delta)
		}
	}
	if biggest != "allreduce" {
		t.Errorf("rank 0's biggest significant change of the mean is %q; want allreduce", biggest)
	}
	if r1 := ar(1); r1.Base.Center > 1e5 {
		t.Errorf("rank 1 allreduce base %v ns; want well under 100µs (rank 1 never waited)", r1.Base.Center)
	}
}

func storyNames(items []compare.StoryItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Row.Name)
	}
	return out
}

// TestFindingsOnce: the comparison lines up the findings each side's report carries
// (findings.Of, knobs included), not findings of its own: on the 2-GPU eager capture, whose
// environment records NCCL knobs, rank 0's communication finding in the diff is the
// report's, with the knobs in its evidence, claim and suggestion.
func TestFindingsOnce(t *testing.T) {
	b, n := captureReport(t, "tp2-moe-eager"), captureReport(t, "tp2-moe-graph")
	c := compare.Compare(compare.Side{Label: "eager", Reports: []*findings.Report{b}},
		compare.Side{Label: "graph", Reports: []*findings.Report{n}}, breakdown.Decode, compare.Options{})
	seen := 0
	for _, fc := range c.Findings {
		for _, x := range []struct {
			f   *findings.Finding
			rep *findings.Report
		}{{fc.Base, b}, {fc.New, n}} {
			if x.f == nil {
				continue
			}
			seen++
			i := slices.IndexFunc(x.rep.Findings[fc.Rank], func(f findings.Finding) bool { return f.ID == fc.ID })
			if i < 0 || !reflect.DeepEqual(*x.f, x.rep.Findings[fc.Rank][i]) {
				t.Errorf("rank %d %s: the diff's finding is not the report's", fc.Rank, fc.ID)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no findings on either side")
	}
	i := slices.IndexFunc(c.Findings, func(fc compare.FindingChange) bool {
		return fc.Rank == 0 && fc.ID == findings.Communication && fc.Base != nil
	})
	if i < 0 {
		t.Fatalf("no communication finding on rank 0 of the eager side")
	}
	f := c.Findings[i].Base
	k, ok := f.Fact("knobs")
	if !ok || !strings.Contains(k.Text, "NCCL_") || !strings.HasSuffix(f.Claim, "knobs: "+k.Text) {
		t.Errorf("rank 0 communication finding without the recorded knobs: knobs %q, claim %q", k.Text, f.Claim)
	}
	// The knobs are evidence: the suggestion names a knob only to change it.
	if strings.Contains(f.Suggestion, k.Text) {
		t.Errorf("rank 0 communication suggestion repeats the recorded knobs: %s", f.Suggestion)
	}
}
