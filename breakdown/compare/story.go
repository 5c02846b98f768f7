package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file decides what a comparison leads with: which rows cannot be compared and why,
// the one-line reason when the mean and the median disagree, and the story — the changes
// of the mean per step, biggest first, with the ranks that differ from the pooled change.

// comparability marks the rows that a side cannot measure: every category when a side's
// steps hold CUDA graph replays traced at graph level (their kernels have no rows, so the
// categories lose time the other side counts), everything of a side without steps, every
// row of a rank that a side lacks or has no steps on, and the pooled rows when a rank has
// steps on one side only (the pools then hold different ranks).
func (c *Comparison) comparability() {
	var untraced []string
	for _, s := range []*SideSummary{&c.Base, &c.New} {
		u := s.Means[kernelclass.UntracedGraph]
		if u == 0 {
			continue
		}
		if float64(u) < c.MinChangeNS {
			c.Warnings = append(c.Warnings, fmt.Errorf("%s: %s/step of CUDA graph replays traced at graph level (below the %s threshold): categories compared anyway",
				s.Label, breakdown.FormatDuration(int64(u)), breakdown.FormatDurationF(c.MinChangeNS)))
			continue
		}
		untraced = append(untraced, fmt.Sprintf("%s: %s/step (%s of its mean step) is CUDA graph replays traced at graph level, whose kernels have no rows; re-capture with nsys profile --cuda-graph-trace=node",
			s.Label, breakdown.FormatDuration(int64(u)), breakdown.FormatPercent(float64(u)/float64(max(s.MeanStep, 1)))))
	}
	graphs := strings.Join(untraced, "; ")
	var empty []string
	for _, s := range []*SideSummary{&c.Base, &c.New} {
		if s.Steps == 0 {
			empty = append(empty, fmt.Sprintf("%s has no %s steps", s.Label, c.Phase))
		}
	}
	noSteps := strings.Join(empty, "; ")
	// A rank with steps on one side only: the pooled samples hold other ranks on each side.
	var pooled []string
	for i := range c.Ranks {
		rk := &c.Ranks[i]
		if rk.NotComparable != "" {
			continue
		}
		var missing []string
		for _, x := range []struct {
			label string
			n     int
			other int
		}{{c.Base.Label, rk.Step.Mean.NBase, rk.Step.Mean.NNew}, {c.New.Label, rk.Step.Mean.NNew, rk.Step.Mean.NBase}} {
			if x.n == 0 && x.other > 0 {
				missing = append(missing, fmt.Sprintf("%s has no %s steps on device %d (a capture that stopped early, or steps not found: see the warnings)", x.label, c.Phase, rk.Rank))
			}
		}
		if len(missing) > 0 {
			rk.NotComparable = strings.Join(missing, "; ")
			pooled = append(pooled, rk.NotComparable)
		}
	}
	mark := func(r *Row, reasons ...string) {
		var rs []string
		for _, x := range reasons {
			if x != "" {
				rs = append(rs, x)
			}
		}
		if len(rs) > 0 && r.NotComparable == "" {
			r.NotComparable = strings.Join(rs, "; ")
		}
	}
	pool := ""
	if len(pooled) > 0 {
		pool = "the pooled steps hold different ranks on the two sides (" + strings.Join(pooled, "; ") + "); compare per rank"
	}
	mark(&c.Step, noSteps, pool)
	for i := range c.Categories {
		mark(&c.Categories[i], noSteps, pool, graphs)
	}
	for i := range c.Ranks {
		rk := &c.Ranks[i]
		mark(&rk.Step, noSteps, rk.NotComparable)
		for j := range rk.Categories {
			mark(&rk.Categories[j], noSteps, rk.NotComparable, graphs)
		}
	}
}

// why explains, from the samples, why the mean and the median views of a row disagree: a
// group of samples far above the rest on the side with the larger mean moves the mean but
// not the median, e.g. "the median says ~ (543.0µs -> 58.99µs, p=0.642): 12 of 24 steps
// (all on rank 0) took 776.8µs-16.46ms before; none after".
func (c *Comparison) why(r *Row) string {
	hi, lo := r.baseSamples, r.newSamples
	hiBase := r.Mean.Base >= r.Mean.New
	if !hiBase {
		hi, lo = lo, hi
	}
	unit := "steps"
	if c.Options.PerRun {
		unit = "runs"
	}
	lov := values(lo)
	p90 := breakdown.QuantileF(lov, 0.9)
	cut := max(2*p90, p90+c.MinChangeNS)
	var high []sample
	for _, s := range hi {
		if s.v > cut {
			high = append(high, s)
		}
	}
	lowAbove := 0
	for _, v := range lov {
		if v > cut {
			lowAbove++
		}
	}
	// The view that does not call the change significant, and its numbers.
	views := fmt.Sprintf("the median says ~ (%s -> %s, p=%.3f)", breakdown.FormatDurationF(r.Base.Center), breakdown.FormatDurationF(r.New.Center), r.P)
	if r.Significant && !r.Mean.Significant {
		views = fmt.Sprintf("the mean says ~ (%s -> %s, p=%.3f)", breakdown.FormatDurationF(r.Mean.Base), breakdown.FormatDurationF(r.Mean.New), r.Mean.P)
	} else if r.Significant {
		views = fmt.Sprintf("the median moved the other way (%s -> %s)", breakdown.FormatDurationF(r.Base.Center), breakdown.FormatDurationF(r.New.Center))
	}
	if len(high) == 0 || len(high) > len(hi)*3/4 {
		hv, lv := values(hi), lov
		return fmt.Sprintf("%s: the distribution changed shape (p90 %s -> %s, longest %s -> %s)", views,
			breakdown.FormatDurationF(breakdown.QuantileF(pick(hiBase, hv, lv), 0.9)), breakdown.FormatDurationF(breakdown.QuantileF(pick(hiBase, lv, hv), 0.9)),
			breakdown.FormatDurationF(slices.Max(pick(hiBase, hv, lv))), breakdown.FormatDurationF(slices.Max(pick(hiBase, lv, hv))))
	}
	hv := values(high)
	where := ""
	if c.Base.Devices > 1 || c.New.Devices > 1 {
		where = ranksOf(high)
	}
	tail := fmt.Sprintf("%d of %d %s%s took %s-%s", len(high), len(hi), unit, where,
		breakdown.FormatDurationF(slices.Min(hv)), breakdown.FormatDurationF(slices.Max(hv)))
	other := "none"
	if lowAbove > 0 {
		other = fmt.Sprintf("%d of %d", lowAbove, len(lo))
	}
	if hiBase {
		return fmt.Sprintf("%s: %s before; %s after", views, tail, other)
	}
	return fmt.Sprintf("%s: %s before; %s after", views, other, tail)
}

func pick(first bool, a, b []float64) []float64 {
	if first {
		return a
	}
	return b
}

func values(ss []sample) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = s.v
	}
	return out
}

// ranksOf says which ranks the samples come from: " (all on rank 0)", " (rank 0: 11, rank 1: 1)".
func ranksOf(ss []sample) string {
	n := map[int]int{}
	for _, s := range ss {
		if s.dev >= 0 {
			n[s.dev]++
		}
	}
	if len(n) == 0 {
		return ""
	}
	var ds []int
	for d := range n {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	if len(ds) == 1 {
		return fmt.Sprintf(" (all on rank %d)", ds[0])
	}
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("rank %d: %d", d, n[d]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// A StoryItem is one line of what changed: a pooled row (a category, or the whole step)
// and the ranks whose change differs from the pooled one.
type StoryItem struct {
	Row   *Row // the pooled row
	Ranks []RankLine
}

// RankLine is one rank's row of a story item.
type RankLine struct {
	Rank int
	Row  *Row
}

// Story returns what the comparison leads with (computed once, by Compare): the whole step
// first, then each category
// whose mean per step changed significantly, pooled or on some rank, by the largest change
// per step (pooled or of a rank shown); each with the ranks whose story differs from the
// pooled one. Not comparable rows are left out (NotComparableRows lists them). When the
// samples are too few to test, the categories that changed by at least the threshold,
// without a verdict.
func (c *Comparison) Story() []StoryItem { return c.story }

// whatChanged computes Story's items.
func (c *Comparison) whatChanged() []StoryItem {
	item := func(r *Row, idx int) (StoryItem, bool) {
		it := StoryItem{Row: r}
		for i := range c.Ranks {
			rk := &c.Ranks[i]
			rr := &rk.Step
			if idx >= 0 {
				rr = &rk.Categories[idx]
			}
			if rr.NotComparable == "" && rr.Mean.Tested && c.rankDiffers(rr, r) {
				it.Ranks = append(it.Ranks, RankLine{Rank: rk.Rank, Row: rr})
			}
		}
		keep := r.NotComparable == "" && r.Mean.Significant
		for _, l := range it.Ranks {
			keep = keep || l.Row.Mean.Significant
		}
		if !c.Tested { // no verdicts: the changes of at least the threshold, without one
			keep = r.NotComparable == "" && r.Mean.Delta != 0 && math.Abs(r.Mean.Delta) >= c.MinChangeNS
		}
		return it, keep
	}
	var out []StoryItem
	if it, _ := item(&c.Step, -1); c.Step.NotComparable == "" || len(it.Ranks) > 0 {
		out = append(out, it)
	}
	var cats []StoryItem
	for i := range c.Categories {
		if it, ok := item(&c.Categories[i], i); ok {
			cats = append(cats, it)
		}
	}
	size := func(it StoryItem) float64 {
		s := 0.0
		if it.Row.NotComparable == "" {
			s = math.Abs(it.Row.Mean.Delta)
		}
		for _, l := range it.Ranks {
			s = max(s, math.Abs(l.Row.Mean.Delta))
		}
		return s
	}
	slices.SortStableFunc(cats, func(a, b StoryItem) int {
		if x := cmp.Compare(size(b), size(a)); x != 0 {
			return x
		}
		return cmp.Compare(a.Row.Name, b.Row.Name)
	})
	return append(out, cats...)
}

// rankDiffers reports whether a rank's change of the mean tells another story than the
// pooled one: a different verdict or direction, or a change that differs from the pooled
// change by the threshold and by a quarter of the pooled change; every significant rank
// when the pooled row is not comparable.
func (c *Comparison) rankDiffers(rr, pr *Row) bool {
	if pr.NotComparable != "" {
		return rr.Mean.Significant
	}
	if rr.Mean.Significant != pr.Mean.Significant {
		return true
	}
	if !rr.Mean.Significant {
		return false
	}
	if (rr.Mean.Delta > 0) != (pr.Mean.Delta > 0) {
		return true
	}
	d := math.Abs(rr.Mean.Delta - pr.Mean.Delta)
	return d >= c.MinChangeNS && d >= 0.25*math.Abs(pr.Mean.Delta)
}

// NotComparableRows returns the pooled rows that a side cannot measure, grouped by reason,
// in kernelclass.Order (the whole step last): each reason with the row names.
func (c *Comparison) NotComparableRows() []NotComparableGroup {
	var out []NotComparableGroup
	add := func(r *Row) {
		if r.NotComparable == "" || (r.Mean.Base == 0 && r.Mean.New == 0 && !r.Whole) {
			return
		}
		for i := range out {
			if out[i].Reason == r.NotComparable {
				out[i].Rows = append(out[i].Rows, r.Name)
				return
			}
		}
		out = append(out, NotComparableGroup{Reason: r.NotComparable, Rows: []string{r.Name}})
	}
	for i := range c.Categories {
		add(&c.Categories[i])
	}
	add(&c.Step)
	return out
}

// NotComparableGroup is a reason and the rows it applies to.
type NotComparableGroup struct {
	Reason string
	Rows   []string
}
