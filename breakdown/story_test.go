package breakdown_test

import (
	"testing"

	"github.com/stepstat/stepstat/breakdown"
)

func compareCaptures(t *testing.T, base, new string) *breakdown.Comparison {
	t.Helper()
	b := captureReport(t, base, breakdown.Options{})
	n := captureReport(t, new, breakdown.Options{})
	return breakdown.Compare(breakdown.Side{Label: base, Reports: []*breakdown.Report{b}},
		breakdown.Side{Label: new, Reports: []*breakdown.Report{n}}, breakdown.Decode, breakdown.CompareOptions{MinChange: 0.01})
}

// TestStoryDense: eager -> graph on the dense model: the biggest significant change is idle,
// launches per step fall from 62 to 1 with the same 62 kernels, launch_bound vanishes.
func TestStoryDense(t *testing.T) {
	c := compareCaptures(t, "dense-eager", "dense-graph")
	big := breakdown.BiggestChanges(c.Categories)
	if len(big) == 0 || big[0].Name != "idle" {
		t.Fatalf("biggest changes %v; want idle first", rowNames(big))
	}
	if c.Base.LaunchesPerStep != 62 || c.New.LaunchesPerStep != 1 || c.Base.KernelsPerStep != c.New.KernelsPerStep {
		t.Errorf("launches/step %v -> %v, kernels/step %v -> %v; want 62 -> 1, the same kernels", c.Base.LaunchesPerStep,
			c.New.LaunchesPerStep, c.Base.KernelsPerStep, c.New.KernelsPerStep)
	}
	if c.Ranks != nil {
		t.Errorf("per-rank rows on 1-GPU traces: %d", len(c.Ranks))
	}
	got := map[string]string{}
	for _, f := range c.Findings {
		got[f.ID] = f.Change
	}
	if got[breakdown.FindLaunchBound] != breakdown.FindingVanished || got[breakdown.FindKernelStorm] != breakdown.FindingChanged {
		t.Errorf("finding changes %v; want launch_bound vanished, kernel_storm changed", got)
	}
	if c.Findings[0].Change == breakdown.FindingSame {
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
	ar := func(rk int) breakdown.Row {
		for _, r := range c.Ranks[rk].Categories {
			if r.Name == "allreduce" {
				return r
			}
		}
		t.Fatal("no allreduce row")
		return breakdown.Row{}
	}
	r0 := ar(0)
	if !r0.Significant || r0.Base.Center < 5e6 || r0.New.Center > 5e5 {
		t.Errorf("rank 0 allreduce %v -> %v ns, significant %v; want ~9.8ms -> ~0.1ms, significant", r0.Base.Center, r0.New.Center, r0.Significant)
	}
	if big := breakdown.BiggestChanges(c.Ranks[0].Categories); len(big) == 0 || big[0].Name != "allreduce" {
		t.Errorf("rank 0 biggest changes %v; want allreduce first", rowNames(big))
	}
	if r1 := ar(1); r1.Base.Center > 1e5 {
		t.Errorf("rank 1 allreduce base %v ns; want well under 100µs (rank 1 never waited)", r1.Base.Center)
	}
}

func rowNames(rs []breakdown.Row) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}
