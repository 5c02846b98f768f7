package compare_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// defaults are the options of `stepstat diff` without flags.
var defaults = compare.Options{Alpha: 0.05, Confidence: 0.95, MinChange: 0.01}

func compareWith(t *testing.T, base, new []string, opt compare.Options) *compare.Comparison {
	t.Helper()
	side := func(label string, names []string) compare.Side {
		s := compare.Side{Label: label}
		for _, n := range names {
			s.Reports = append(s.Reports, captureReport(t, n))
		}
		return s
	}
	return compare.Compare(side("base", base), side("new", new), breakdown.Decode, opt)
}

func catRow(rows []compare.Row, cat kernelclass.Category) *compare.Row {
	for i := range rows {
		if rows[i].Name == cat.String() {
			return &rows[i]
		}
	}
	return nil
}

// TestStoryTP2Means: 2-GPU eager -> CUDA graphs. Rank 0's all-reduce waits for rank 1 in
// eager mode (about 9.8 ms of a 14.7 ms step) and hardly at all with graphs; the pooled
// medians cannot see it (rank 1's 12 steps sit at ~44 µs, so the pooled median is in the
// gap), the means can. What changed lists allreduce with rank 0 under it, tested, and says
// why the median disagrees; the wait/transfer comparison shows rank 0's wait collapsing.
func TestStoryTP2Means(t *testing.T) {
	c := compareWith(t, []string{"tp2-moe-eager"}, []string{"tp2-moe-graph"}, defaults)
	if !c.Tested || len(c.Ranks) != 2 {
		t.Fatalf("tested %v, %d ranks; want tested, 2 ranks", c.Tested, len(c.Ranks))
	}
	r0 := catRow(c.Ranks[0].Categories, kernelclass.AllReduce)
	if !r0.Mean.Significant || r0.Mean.P >= 0.05 || r0.Mean.Base < 9e6 || r0.Mean.New > 0.3e6 || r0.Mean.Delta > -9e6 ||
		!(r0.Mean.Lo <= r0.Mean.Delta && r0.Mean.Delta <= r0.Mean.Hi && r0.Mean.Hi < 0) {
		t.Errorf("rank 0 allreduce mean %.0f -> %.0f ns (change %.0f [%.0f, %.0f], p=%v, significant %v); want ~9.8ms -> <0.3ms, significant, interval below 0",
			r0.Mean.Base, r0.Mean.New, r0.Mean.Delta, r0.Mean.Lo, r0.Mean.Hi, r0.Mean.P, r0.Mean.Significant)
	}
	pooled := catRow(c.Categories, kernelclass.AllReduce)
	if pooled.Significant || !pooled.Mean.Significant || !strings.Contains(pooled.Why, "the median says ~") || !strings.Contains(pooled.Why, "(all on rank 0)") ||
		!strings.Contains(pooled.Why, "none after") {
		t.Errorf("pooled allreduce: median significant %v, mean significant %v, why %q; want the median ~, the mean significant, why naming rank 0's steps",
			pooled.Significant, pooled.Mean.Significant, pooled.Why)
	}
	var item *compare.StoryItem
	story := c.Story()
	if len(story) == 0 || story[0].Row != &c.Step {
		t.Fatalf("story does not lead with the whole step")
	}
	for i := range story {
		if story[i].Row.Name == "allreduce" {
			item = &story[i]
		}
	}
	if item == nil || len(item.Ranks) == 0 || item.Ranks[0].Rank != 0 || item.Ranks[0].Row != r0 {
		t.Fatalf("what changed has no allreduce item with rank 0 under it: %+v", item)
	}
	// By time per step: idle (-8.4 ms) before allreduce (-4.8 ms pooled, -9.6 ms on rank 0).
	for i := 2; i < len(story); i++ { // story[0] is the whole step
		if a, b := storySize(story[i-1]), storySize(story[i]); a < b {
			t.Errorf("story not ranked by change per step: %s (%.0f) before %s (%.0f)", story[i-1].Row.Name, a, story[i].Row.Name, b)
		}
	}
	// Quiet: nothing under the default threshold (1% of the 14.7 ms step) has a verdict.
	for _, r := range c.Categories {
		if (r.Mean.Significant || r.Significant) && math.Abs(r.Mean.Delta) < c.MinChangeNS && math.Abs(r.New.Center-r.Base.Center) < c.MinChangeNS {
			t.Errorf("%s: change %.0f ns under the threshold %.0f has a verdict", r.Name, r.Mean.Delta, c.MinChangeNS)
		}
	}
	if c.MinChangeNS < 0.01*float64(c.Base.MeanStep)-1 {
		t.Errorf("threshold %.0f ns, want 1%% of the base mean step %v", c.MinChangeNS, c.Base.MeanStep)
	}
	// Wait vs transfer per rank: rank 0 waited ~10 ms per step for rank 1 in eager mode.
	w0, w1 := c.Ranks[0], c.Ranks[1]
	if w0.Base.Wait < 9*time.Millisecond || w0.New.Wait > time.Millisecond || w0.Base.Transfer > 200*time.Microsecond || w1.Base.Wait > time.Millisecond {
		t.Errorf("wait/transfer per step: rank 0 %v+%v -> %v+%v, rank 1 wait %v; want rank 0 waiting ~10ms before, under 1ms after",
			w0.Base.Wait, w0.Base.Transfer, w0.New.Wait, w0.New.Transfer, w1.Base.Wait)
	}
	if c.Base.Ranks == nil || c.Base.Ranks.Straggler != 1 || c.Base.Ranks.LastArrivals[1] < c.Base.Ranks.Calls*9/10 {
		t.Errorf("base straggler %+v; want rank 1, last at 90%%+ of the calls", c.Base.Ranks)
	}
	checkMeansAddUp(t, c)
}

func storySize(it compare.StoryItem) float64 {
	s := math.Abs(it.Row.Mean.Delta)
	for _, l := range it.Ranks {
		s = max(s, math.Abs(l.Row.Mean.Delta))
	}
	return s
}

// checkMeansAddUp: on each side, the pooled and every rank's category means add up exactly
// to the mean step; with several ranks, the side's samples are aligned steps (the step on
// the slowest rank), so the side's mean step is at least every rank's and at most the
// mean of the ranks' sum, and n is the aligned steps, not steps x ranks.
func checkMeansAddUp(t *testing.T, c *compare.Comparison) {
	t.Helper()
	sum := func(m [kernelclass.NumCategories]time.Duration) (s time.Duration) {
		for _, d := range m {
			s += d
		}
		return s
	}
	if sum(c.Base.Means) != c.Base.MeanStep || sum(c.New.Means) != c.New.MeanStep {
		t.Errorf("pooled means add up to %v / %v; want the mean steps %v / %v", sum(c.Base.Means), sum(c.New.Means), c.Base.MeanStep, c.New.MeanStep)
	}
	for i, cat := range kernelclass.Order {
		if r := c.Categories[i]; r.Mean.Base != float64(c.Base.Means[cat]) || r.Mean.New != float64(c.New.Means[cat]) || r.Mean.Delta != r.Mean.New-r.Mean.Base {
			t.Errorf("%s: row means %v -> %v, side means %v -> %v", cat, r.Mean.Base, r.Mean.New, c.Base.Means[cat], c.New.Means[cat])
		}
	}
	for _, side := range []struct {
		name string
		mean time.Duration
		n    int
		rank func(rk *compare.RankComparison) (time.Duration, [kernelclass.NumCategories]time.Duration, int)
	}{
		{"base", c.Base.MeanStep, c.Step.Mean.NBase, func(rk *compare.RankComparison) (time.Duration, [kernelclass.NumCategories]time.Duration, int) {
			return rk.BaseMeanStep, rk.BaseMeans, rk.Step.Mean.NBase
		}},
		{"new", c.New.MeanStep, c.Step.Mean.NNew, func(rk *compare.RankComparison) (time.Duration, [kernelclass.NumCategories]time.Duration, int) {
			return rk.NewMeanStep, rk.NewMeans, rk.Step.Mean.NNew
		}},
	} {
		var total time.Duration
		for i := range c.Ranks {
			m, ms, k := side.rank(&c.Ranks[i])
			if sum(ms) != m {
				t.Errorf("%s rank %d: means add up to %v, mean step %v", side.name, i, sum(ms), m)
			}
			if k > 0 && m > side.mean+1 {
				t.Errorf("%s rank %d: mean step %v above the side's %v (the slowest rank's per aligned step)", side.name, i, m, side.mean)
			}
			if k > 0 && k != side.n {
				t.Errorf("%s rank %d: %d steps, the side %d aligned samples", side.name, i, k, side.n)
			}
			total += m
		}
		if len(c.Ranks) > 1 && side.mean > total {
			t.Errorf("%s: mean step %v above the ranks' sum %v", side.name, side.mean, total)
		}
	}
}

// TestGraphLevelNotComparable: eager against a capture whose CUDA graphs were traced at
// graph level. The kernels inside the replays have no rows, so every category is not
// comparable (never "-100%"), with the reason; the whole step is, and it fell.
func TestGraphLevelNotComparable(t *testing.T) {
	c := compareWith(t, []string{"hf-qwen3moe-eager"}, []string{"hf-qwen3moe-compile-graphlevel"}, defaults)
	for _, r := range c.Categories {
		if r.NotComparable == "" || !strings.Contains(r.NotComparable, "--cuda-graph-trace=node") || r.Significant || r.Mean.Significant || r.Why != "" {
			t.Errorf("%s: not comparable %q, significant %v/%v; want not comparable, naming the capture flag, no verdict", r.Name, r.NotComparable, r.Significant, r.Mean.Significant)
		}
	}
	if c.Step.NotComparable != "" || !c.Step.Mean.Significant || c.Step.Mean.Delta > -5e6 {
		t.Errorf("whole step: not comparable %q, change %.0f ns significant %v; want comparable, about -5.8ms, significant", c.Step.NotComparable, c.Step.Mean.Delta, c.Step.Mean.Significant)
	}
	if story := c.Story(); len(story) != 1 || story[0].Row != &c.Step {
		t.Errorf("what changed lists %d items; want the whole step only", len(story))
	}
	nc := c.NotComparableRows()
	if len(nc) != 1 || len(nc[0].Rows) < 8 || !strings.Contains(nc[0].Reason, "hf-qwen3moe-compile-graphlevel") && !strings.Contains(nc[0].Reason, "new:") {
		t.Errorf("not comparable groups %+v", nc)
	}
	found := false
	for _, w := range c.New.Warnings {
		found = found || strings.Contains(w.Text, "traced at graph level")
	}
	if !found {
		t.Errorf("the new side's graph-level warning is not in the comparison: %+v", c.New.Warnings)
	}
}

// TestRunsTwoAndFour: the same dense workload captured 4 times per side (eager, then CUDA
// graphs). With one sample per run and 2 runs a side there is no test (the permutation test
// cannot go below p = 1/3): no verdict anywhere, and the comparison says so. With 4 a side
// it can (exact: 70 arrangements, smallest p = 2/70): the step and its idle time fall,
// significantly.
func TestRunsTwoAndFour(t *testing.T) {
	runs := func(mode string, n int) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, fmt.Sprintf("runs/dense-%s-r%d", mode, i))
		}
		return out
	}
	opt := defaults
	opt.PerRun = true
	two := compareWith(t, runs("eager", 2), runs("graph", 2), opt)
	if two.Tested || !strings.Contains(two.Untested, "2 on base and 2 on new") || !strings.Contains(two.Untested, "needs 4 runs a side") {
		t.Errorf("2 runs a side: tested %v, %q; want untested, saying it needs 4", two.Tested, two.Untested)
	}
	for _, r := range append([]compare.Row{two.Step}, two.Categories...) {
		if r.Significant || r.Mean.Significant || r.Mean.Tested || !math.IsNaN(r.Mean.P) {
			t.Errorf("2 runs a side, %s: a verdict (significant %v/%v, p %v)", r.Name, r.Significant, r.Mean.Significant, r.Mean.P)
		}
	}
	if two.Step.Mean.Delta > -1e6 {
		t.Errorf("2 runs a side: step change %.0f ns not shown", two.Step.Mean.Delta)
	}
	if story := two.Story(); len(story) < 2 || story[1].Row.Name != "idle" {
		t.Errorf("2 runs a side: what changed does not show the idle change without a verdict")
	}

	four := compareWith(t, runs("eager", 4), runs("graph", 4), opt)
	idle := catRow(four.Categories, kernelclass.Idle)
	if !four.Tested || !four.Step.Mean.Significant || four.Step.Mean.Method != "exact" || math.Abs(four.Step.Mean.P-2.0/70) > 1e-9 ||
		!idle.Mean.Significant || idle.Mean.Delta > -1e6 || four.Step.Mean.NBase != 4 || four.Step.Mean.NNew != 4 {
		t.Errorf("4 runs a side: tested %v, step significant %v by %s p=%v n=%d+%d, idle %.0f ns significant %v; want exact p=2/70, both significant",
			four.Tested, four.Step.Mean.Significant, four.Step.Mean.Method, four.Step.Mean.P, four.Step.Mean.NBase, four.Step.Mean.NNew, idle.Mean.Delta, idle.Mean.Significant)
	}
	checkMeansAddUp(t, four)
}

// TestTruncatedRankNotComparable: a 2-GPU capture whose second rank lost its activity
// (the first rank's cudaProfilerStop ended the session) against a complete one: rank 1 and
// the pooled rows are not comparable; rank 0 is, and what changed shows its lines.
func TestTruncatedRankNotComparable(t *testing.T) {
	c := compareWith(t, []string{"tp2-moe-graph-serve"}, []string{"tp2-moe-graph-serve-truncated"}, defaults)
	if len(c.Ranks) != 2 || c.Ranks[1].NotComparable == "" || c.Ranks[0].NotComparable != "" {
		t.Fatalf("ranks %d, not comparable %q / %q; want rank 1 only", len(c.Ranks), c.Ranks[0].NotComparable, c.Ranks[1].NotComparable)
	}
	if c.Step.NotComparable == "" || catRow(c.Categories, kernelclass.AllReduce).NotComparable == "" {
		t.Errorf("pooled rows comparable although rank 1 has no steps on one side")
	}
	story := c.Story()
	if len(story) == 0 || len(story[0].Ranks) != 1 || story[0].Ranks[0].Rank != 0 {
		t.Errorf("what changed does not lead with rank 0's whole step: %+v", story)
	}
	for _, r := range c.Ranks[1].Categories {
		if r.Significant || r.Mean.Significant {
			t.Errorf("rank 1 %s has a verdict", r.Name)
		}
	}
}

// TestDeviceMissingNotComparable: a side whose second run has one device where the others
// have two: rank 1 cannot be compared (named with the run), rank 0 can.
func TestDeviceMissingNotComparable(t *testing.T) {
	c := compareWith(t, []string{"tp2-moe-eager"}, []string{"tp2-moe-graph", "moe-graph"}, defaults)
	if len(c.Ranks) != 2 || c.Ranks[0].NotComparable != "" || !strings.Contains(c.Ranks[1].NotComparable, "new has no device 1 in run 2 of 2") {
		t.Fatalf("ranks %d: not comparable %q / %q", len(c.Ranks), c.Ranks[0].NotComparable, c.Ranks[1].NotComparable)
	}
	for _, r := range append([]compare.Row{c.Ranks[1].Step}, c.Ranks[1].Categories...) {
		if r.NotComparable == "" || r.Significant || r.Mean.Significant {
			t.Errorf("rank 1 %s: not comparable %q, significant %v/%v", r.Name, r.NotComparable, r.Significant, r.Mean.Significant)
		}
	}
	if r := catRow(c.Ranks[0].Categories, kernelclass.AllReduce); !r.Mean.Significant || r.Mean.Delta > -9e6 {
		t.Errorf("rank 0 allreduce: change %.0f ns, significant %v; want the drop of ~9.6ms", r.Mean.Delta, r.Mean.Significant)
	}
}
