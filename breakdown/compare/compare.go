// Package compare compares two sides, each the reports (with their findings) of one or
// more runs of one configuration: per category and for the whole step, the change of the
// mean per step with a permutation test (permute.go) and medians with confidence intervals
// and a Mann-Whitney U test (benchmath), the kernels that appeared, vanished or changed
// variant, and the side summaries (compare.go); what cannot be compared, why the two views
// disagree, and what changed (story.go); the same per device position of multi-GPU traces,
// with each rank's wait and transfer (ranks.go); the findings that appeared, vanished or
// changed (findings.go); and the run configuration of each side and what differs (config.go).
// The steps compared on a device are those its report summarises (breakdown.SummarisedSteps,
// the one function both use): no graph capture iteration, window edge's piece or outlier.
package compare

import (
	"fmt"
	"math"
	"slices"
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// A Side is one side of a comparison: the reports of one or more runs (files) of the same
// configuration.
type Side struct {
	Label   string
	Reports []*findings.Report
}

// Options control Compare.
type Options struct {
	Alpha      float64 // significance level of both tests (default 0.05)
	Confidence float64 // confidence level of the intervals (default 0.95)
	// MinChange is the smallest change that gets a verdict, as a fraction of the base side's
	// mean step (0.01 = 1%); MinChangeNS the same as time per step. The larger applies;
	// smaller changes are "~" whatever p says, in both views.
	MinChange   float64
	MinChangeNS float64
	// PerRun uses one sample per run (file) — each run's median per step for the medians,
	// its mean per step for the means — instead of one sample per step. Steps of one run
	// are not independent; runs are.
	PerRun bool
}

// Stat is the distribution of one quantity on one side.
type Stat struct {
	Center, Lo, Hi float64 // median and confidence interval, in ns
	N              int
}

// Row compares one quantity (a category's exclusive time per step, or the step time) in
// two views: the medians of benchstat's table (Base, New, DeltaPct, P: Mann-Whitney U),
// each row its own samples, and the change of the mean per step (Mean: a permutation
// test), which adds up over the categories and leads the comparison.
type Row struct {
	Name string // the category's id, or WholeStep
	// Category is the category the row is about; meaningless for the whole step's row (Whole).
	Category    kernelclass.Category
	Whole       bool // the whole step's row (Comparison.Step, RankComparison.Step)
	Base, New   Stat
	DeltaPct    float64 // change of the median: (new/base - 1) * 100; NaN when base is 0
	P           float64 // Mann-Whitney U
	Significant bool    // the median's verdict: tested, comparable, P < Alpha, |change| >= the threshold
	Mean        MeanChange
	// NotComparable says why a side cannot measure the quantity ("" when both can); such a
	// row has no verdict in either view.
	NotComparable string
	// Why says in one line why the views disagree (one calls the change significant, the
	// other not), from the samples; "" when they agree.
	Why      string
	Warnings []error
	// the samples of the mean test, tagged with their device position and run
	baseSamples, newSamples []sample
}

// MeanChange is the change of the mean per step of one quantity, tested by a two-sided
// permutation test on the difference of the means (permute.go).
type MeanChange struct {
	// Base and New are the means per step in ns: the side's total over its steps divided by
	// their number (for categories, rounded so that they add up to the mean step).
	Base, New float64
	Delta     float64 // New - Base
	// Lo and Hi bound Delta at the confidence level: Delta ± the smallest change the
	// permutation test calls significant at 1 - confidence. NaN when not tested.
	Lo, Hi float64
	P      float64 // two-sided; NaN when not tested
	// NBase and NNew count the samples: steps, or runs with PerRun.
	NBase, NNew int
	Tested      bool   // both sides have enough samples for the test to reach Alpha
	Method      string // "exact", "monte-carlo" or "normal" (permute.go); "" when not tested
	Significant bool   // tested, comparable, P < Alpha and |Delta| >= the threshold
}

// sample is one sample of the mean test: a step's value (or a run's mean per step) with
// the device position and run it comes from.
type sample struct {
	v        float64
	dev, run int
}

// NCCLCount totals NCCL kernels of one op/algorithm/protocol/data type.
type NCCLCount struct {
	kernelclass.NCCLKernel
	Count int
	Total time.Duration
}

// SideSummary describes one side beyond time per category.
type SideSummary struct {
	Label      string
	Paths      []string
	Steps      int // steps compared (of the compared phase), all runs
	MedianStep time.Duration
	// MeanStep is the mean step and Means each category's mean exclusive time per step,
	// rounded so that they add up exactly to MeanStep (as Summary's means).
	MeanStep        time.Duration
	Means           [kernelclass.NumCategories]time.Duration
	LaunchesPerStep float64 // host launches per step, mean
	KernelsPerStep  float64
	GapsPerStep     float64
	Methods         []string // step methods used, "graph", "nvtx", ...
	Devices         int      // devices per run (the largest)
	PhaseMix        string   // e.g. "1 prefill, 12 decode"
	PhaseShare      float64  // fraction of all steps that have the compared phase
	NCCL            []NCCLCount
	// Config is the side's run configuration (knobs that differ between its runs show
	// each value, joined by " | ").
	Config []nsys.EnvVar
	// Capture is the side's nsys capture options (breakdown.Report.Capture), merged as
	// Config is.
	Capture []nsys.EnvVar
	// Ranks sums the rank view of the side's runs (wait and transfer in matched
	// collectives, the straggler); nil when no run has two or more devices.
	Ranks *RankWait
	// Warnings are the capture-quality and self-check warnings of the side's runs
	// (breakdown.Report.Warnings), each once, in run order.
	Warnings []SideWarning
	// AlignedBy says, per run of two or more devices with steps of the phase, how its
	// ranks' steps were aligned into the side's samples (one per aligned step: the step on
	// the slowest rank): "index", "time" (the rank view's overlap) or "index, first N"
	// (counts differ and no rank view); empty when every run has one device.
	AlignedBy []string
}

// SideWarning is a warning of one or more runs of a side.
type SideWarning struct {
	Text string
	Runs []int // indexes into Paths of the runs that gave it
}

// KernelChange is a kernel family that appeared, vanished or changed variant.
type KernelChange struct {
	Family    string // normalised name (Normalize)
	Category  kernelclass.Category
	BaseNames []string // distinct names on the base side
	NewNames  []string
	BaseCount int
	NewCount  int
	BaseTotal time.Duration
	NewTotal  time.Duration
}

// A Comparison is the finished comparison of two sides.
type Comparison struct {
	Base, New SideSummary
	Config    []ConfigChange // knobs whose value differs between the sides, by name
	// Capture lists the nsys capture options (nsys.CaptureOptions) that differ between the
	// sides: the profiler's own overhead differs, so a change may be the profiler's. Each
	// is also a warning (Warnings), as changed knobs are shown first.
	Capture    []ConfigChange
	Phase      breakdown.Phase
	Step       Row
	Categories []Row // in Order
	Appeared   []KernelChange
	Vanished   []KernelChange
	Variants   []KernelChange // same family, different names (tile shapes, template arguments)
	Options    Options
	Warnings   []error
	// Ranks compares each device position on its own (ranks.go); nil unless both sides
	// have two or more devices per run.
	Ranks []RankComparison
	// Findings lines up the findings of the first run of each side, per device position.
	Findings []FindingChange
	// BaseSteps and NewSteps hold, per run, the wall time of each step of the compared
	// phase, in order (devices of a run one after another).
	BaseSteps, NewSteps [][]time.Duration
	// MinChangeNS is the threshold of both verdicts, in ns per step: the larger of
	// Options.MinChange of the base mean step and Options.MinChangeNS.
	MinChangeNS float64
	// Tested is false when a side has too few samples for the tests (fewer than
	// SamplesNeeded(Alpha)); Untested then says so, and no row has a verdict.
	Tested   bool
	Untested string
	// BaseRounds and NewRounds describe each side's compared steps as speculative rounds
	// and their tokens (rounds.go).
	BaseRounds, NewRounds SideRounds
	// Token compares the time per token (speculative rounds make tokens per step vary):
	// each side's samples are its steps' walls over their tokens; nil unless both sides
	// know their tokens (rounds.go). TokenMinChangeNS is its threshold: MinChangeNS scaled
	// by the base's time per token over its mean step.
	Token            *Row
	TokenMinChangeNS float64
	story            []StoryItem // Story's, set last by Compare
}

// Compare compares the steps of one phase (decode unless phase says otherwise) of two sides.
func Compare(base, new Side, phase breakdown.Phase, opt Options) *Comparison {
	if opt.Alpha == 0 {
		opt.Alpha = 0.05
	}
	if opt.Confidence == 0 {
		opt.Confidence = 0.95
	}
	if phase == breakdown.Unknown {
		phase = breakdown.Decode
	}
	c := &Comparison{Phase: phase, Options: opt}
	bs, bsteps := summarizeSide(base, phase)
	ns, nsteps := summarizeSide(new, phase)
	c.Base, c.New = bs, ns
	c.Config = configChanges(bs.Config, ns.Config)
	c.Capture = configChanges(bs.Capture, ns.Capture)
	c.BaseSteps, c.NewSteps = stepWalls(bsteps), stepWalls(nsteps)
	c.MinChangeNS = max(opt.MinChange*float64(bs.MeanStep), opt.MinChangeNS)
	th := benchmath.DefaultThresholds
	th.CompareAlpha = opt.Alpha
	c.Step, c.Categories = compareSteps(bsteps, nsteps, bs.MeanStep, ns.MeanStep, bs.Means, ns.Means, opt, &th)
	var bper, nper map[*breakdown.Step]float64
	c.BaseRounds, bper = sideRounds(base, bsteps)
	c.NewRounds, nper = sideRounds(new, nsteps)
	c.Token = tokenRow(bsteps, nsteps, bper, nper, opt, &th)
	c.Appeared, c.Vanished, c.Variants = kernelChanges(base, new)
	c.Ranks = compareRanks(base, new, phase, opt, &th)
	c.Findings = compareFindings(base, new)
	c.Warnings = sideWarnings(bs, ns)
	c.Warnings = append(c.Warnings, captureWarnings(c.Capture, base.Label, new.Label)...)
	c.Warnings = append(c.Warnings, ranksAsRuns(base)...)
	c.Warnings = append(c.Warnings, ranksAsRuns(new)...)
	nb, nn := c.Step.Mean.NBase, c.Step.Mean.NNew
	c.Tested = testable(nb, nn, opt.Alpha)
	if !c.Tested {
		unit := "step"
		if opt.PerRun {
			unit = "run"
		}
		c.Untested = fmt.Sprintf("cannot test: one sample per %s, %d on %s and %d on %s; the permutation test needs %d %ss a side to reach p < %g, so the changes below have no verdict",
			unit, nb, base.Label, nn, new.Label, SamplesNeeded(opt.Alpha), unit, opt.Alpha)
	}
	c.comparability()
	c.verdicts()
	c.story = c.whatChanged()
	return c
}

// WholeStep names the whole step's row (Row.Whole) in every output.
const WholeStep = "whole step"

// compareSteps compares the steps of the two sides' runs: the whole step, then each
// category's exclusive time in kernelclass.Order, with the means (which add up) of each side.
func compareSteps(base, new [][]tagged, baseStep, newStep time.Duration, baseMeans, newMeans [kernelclass.NumCategories]time.Duration,
	opt Options, th *benchmath.Thresholds) (Row, []Row) {
	step := compareRow(WholeStep, base, new, stepWall, opt, th)
	step.Whole = true
	setMean(&step, baseStep, newStep)
	var cats []Row
	for _, cat := range kernelclass.Order {
		r := compareRow(cat.String(), base, new, exclusive(cat), opt, th)
		r.Category = cat
		setMean(&r, baseMeans[cat], newMeans[cat])
		cats = append(cats, r)
	}
	return step, cats
}

func stepWall(s *breakdown.Step) float64 { return float64(s.Wall()) }

func exclusive(cat kernelclass.Category) func(s *breakdown.Step) float64 {
	return func(s *breakdown.Step) float64 { return float64(s.Exclusive[cat]) }
}

// setMean sets the means of a row to the side summaries' (which add up), and the change.
func setMean(r *Row, b, n time.Duration) {
	r.Mean.Base, r.Mean.New = float64(b), float64(n)
	r.Mean.Delta = r.Mean.New - r.Mean.Base
	if r.Mean.Tested {
		r.Mean.Lo, r.Mean.Hi = r.Mean.Delta-r.halfWidth(), r.Mean.Delta+r.halfWidth()
	}
}

// halfWidth is the half-width of the mean's interval, kept from the test.
func (r *Row) halfWidth() float64 { return (r.Mean.Hi - r.Mean.Lo) / 2 }

// stepWalls returns the wall time of each step, per run.
func stepWalls(runs [][]tagged) [][]time.Duration {
	out := make([][]time.Duration, len(runs))
	for i, run := range runs {
		for _, t := range run {
			out[i] = append(out[i], t.step.Wall())
		}
	}
	return out
}

// tagged is a step of the compared phase with its device position in the run.
type tagged struct {
	step *breakdown.Step
	dev  int
}

// compareRow summarises each side's samples and tests the difference, in both views.
// Samples are per step (all runs pooled) or, with PerRun, one per run: its median per step
// for the medians, its mean per step for the means. Verdicts come later (verdicts).
func compareRow(name string, base, new [][]tagged, value func(s *breakdown.Step) float64, opt Options, th *benchmath.Thresholds) Row {
	flatten := func(runs [][]tagged) ([]float64, []sample) {
		var med []float64
		var mean []sample
		for ri, r := range runs {
			if len(r) == 0 {
				continue
			}
			vals := make([]float64, len(r))
			for i, t := range r {
				vals[i] = value(t.step)
			}
			if !opt.PerRun {
				med = append(med, vals...)
				for i, t := range r {
					mean = append(mean, sample{vals[i], t.dev, ri})
				}
				continue
			}
			med = append(med, medianF(vals))
			var sum float64
			for _, v := range vals {
				sum += v
			}
			mean = append(mean, sample{sum / float64(len(vals)), -1, ri})
		}
		return med, mean
	}
	b, bm := flatten(base)
	n, nm := flatten(new)
	r := Row{Name: name, DeltaPct: math.NaN(), P: 1, baseSamples: bm, newSamples: nm}
	r.Mean.NBase, r.Mean.NNew = len(bm), len(nm)
	r.Mean.Lo, r.Mean.Hi, r.Mean.P = math.NaN(), math.NaN(), math.NaN()
	if len(b) == 0 || len(n) == 0 {
		r.Warnings = append(r.Warnings, fmt.Errorf("%s: no steps to compare", name))
		r.Base.N, r.New.N = len(b), len(n)
		return r
	}
	sb, sn := benchmath.NewSample(b, th), benchmath.NewSample(n, th)
	sumB := benchmath.AssumeNothing.Summary(sb, opt.Confidence)
	sumN := benchmath.AssumeNothing.Summary(sn, opt.Confidence)
	r.Base = Stat{sumB.Center, sumB.Lo, sumB.Hi, len(b)}
	r.New = Stat{sumN.Center, sumN.Lo, sumN.Hi, len(n)}
	if allEqual(b, n) || constant(b, n) {
		// Identical samples: the U test has nothing to reject (and errors on all-tied data).
		r.P = 1
	} else {
		cmpRes := benchmath.AssumeNothing.Compare(sb, sn)
		r.P = cmpRes.P
		r.Warnings = append(r.Warnings, cmpRes.Warnings...)
	}
	if r.Base.Center != 0 {
		r.DeltaPct = (r.New.Center/r.Base.Center - 1) * 100
	} else if r.New.Center == 0 {
		r.DeltaPct = 0
	}
	if testable(len(bm), len(nm), opt.Alpha) {
		vals := func(ss []sample) []float64 {
			out := make([]float64, len(ss))
			for i, s := range ss {
				out[i] = s.v
			}
			return out
		}
		t := permutationTest(vals(bm), vals(nm), opt.Confidence)
		r.Mean.Tested, r.Mean.P, r.Mean.Method = true, t.P, t.Method
		r.Mean.Lo, r.Mean.Hi = t.Delta-t.Half, t.Delta+t.Half
	}
	return r
}

// verdicts decides both views of every row once the rows' comparability is known: a change
// is significant when the row is comparable, the samples can be tested, p < Alpha and the
// change is at least MinChangeNS per step.
func (c *Comparison) verdicts() {
	each := func(r *Row, th float64) {
		ok := r.NotComparable == "" && c.Tested && r.Mean.Tested && r.Base.N > 0 && r.New.N > 0
		r.Significant = ok && r.P < c.Options.Alpha && r.Base.Center != r.New.Center &&
			math.Abs(r.New.Center-r.Base.Center) >= th
		r.Mean.Significant = ok && r.Mean.P < c.Options.Alpha && r.Mean.Delta != 0 && math.Abs(r.Mean.Delta) >= th
		r.Why = ""
		if ok && (r.Significant != r.Mean.Significant || (r.Significant && (r.New.Center > r.Base.Center) != (r.Mean.Delta > 0))) {
			r.Why = c.why(r)
		}
	}
	each(&c.Step, c.MinChangeNS)
	if c.Token != nil {
		if c.Token.NotComparable == "" {
			c.Token.NotComparable = c.Step.NotComparable
		}
		// The threshold per step, as time per token: scaled by the base's time per token
		// over its mean step (--min-change 1% is 1% of the base's time per token).
		if c.Base.MeanStep > 0 {
			c.TokenMinChangeNS = c.MinChangeNS * c.Token.Mean.Base / float64(c.Base.MeanStep)
		}
		each(c.Token, c.TokenMinChangeNS)
	}
	for i := range c.Categories {
		each(&c.Categories[i], c.MinChangeNS)
	}
	for i := range c.Ranks {
		each(&c.Ranks[i].Step, c.MinChangeNS)
		for j := range c.Ranks[i].Categories {
			each(&c.Ranks[i].Categories[j], c.MinChangeNS)
		}
	}
}

func allEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// constant reports whether every value of both samples is the same.
func constant(a, b []float64) bool {
	for _, x := range append(slices.Clone(a), b...) {
		if x != a[0] {
			return false
		}
	}
	return true
}

func medianF(xs []float64) float64 { return breakdown.QuantileF(xs, 0.5) }

// summarizeSide gathers the steps of the phase from every run and device of a side.
func summarizeSide(s Side, phase breakdown.Phase) (SideSummary, [][]tagged) {
	var cfgs, caps [][]nsys.EnvVar
	for _, r := range s.Reports {
		cfgs = append(cfgs, r.Config)
		caps = append(caps, r.Capture)
	}
	ss := SideSummary{Label: s.Label, Config: sideConfig(cfgs), Capture: sideConfig(caps), Ranks: rankWait(s), Warnings: runWarnings(s)}
	var runs [][]tagged
	methods := map[string]bool{}
	var walls []time.Duration
	var launches, kernels, gaps int
	var phaseSteps []breakdown.Step
	var excl [kernelclass.NumCategories]time.Duration
	for _, r := range s.Reports {
		ss.Paths = append(ss.Paths, r.Path)
		ss.Devices = max(ss.Devices, len(r.Devices))
		for di := range r.Devices {
			methods[r.Devices[di].Method.String()] = true
			phaseSteps = append(phaseSteps, r.Devices[di].Steps...)
		}
		run, how := alignedSteps(r, phase)
		if how != "" {
			ss.AlignedBy = append(ss.AlignedBy, how)
		}
		for _, t := range run {
			st := t.step
			walls = append(walls, st.Wall())
			for c, d := range st.Exclusive {
				excl[c] += d
			}
			launches += st.Launches
			kernels += st.TotalKernels()
			gaps += st.Gaps.Count
		}
		runs = append(runs, run)
	}
	ss.Steps = len(walls)
	ss.MedianStep = breakdown.Quantile(walls, 0.5)
	if len(walls) > 0 {
		var total time.Duration
		for _, w := range walls {
			total += w
		}
		means := breakdown.Summary{Steps: len(walls), Mean: total / time.Duration(len(walls))}
		breakdown.SetMeans(&means, excl)
		ss.MeanStep = means.Mean
		for c := range ss.Means {
			ss.Means[c] = means.Categories[c].Mean
		}
		n := float64(len(walls))
		ss.LaunchesPerStep = float64(launches) / n
		ss.KernelsPerStep = float64(kernels) / n
		ss.GapsPerStep = float64(gaps) / n
	}
	for m := range methods {
		ss.Methods = append(ss.Methods, m)
	}
	slices.Sort(ss.Methods)
	ss.PhaseMix = breakdown.PhaseCounts(phaseSteps)
	if len(phaseSteps) > 0 {
		ss.PhaseShare = float64(ss.Steps) / float64(len(phaseSteps))
	}
	ss.NCCL = sideNCCL(s)
	return ss, runs
}

// alignedSteps returns the steps of the phase of one run that report's summary covers
// (breakdown.SummarisedSteps: no graph capture iteration, no window edge's piece, no
// outlier), one per aligned step: with one
// device, its steps; with several (ranks run in lock step, so a step lasts as long as its
// slowest rank), the i-th step of the phase on every device aligned, and the one with the
// longest wall time of each (ties: the first device) standing for it. Devices without steps
// of the phase are left out. Aligned by index when every device has the same number of
// steps of the phase; else through the rank view's alignment (by time overlap) where the
// report has one; else the first of each device, as many as the fewest. how says which;
// "" with one device.
func alignedSteps(r *findings.Report, phase breakdown.Phase) (run []tagged, how string) {
	var per [][]tagged // steps of the phase per device with any
	for di := range r.Devices {
		var ds []tagged
		kept, _ := breakdown.SummarisedSteps(r.Devices[di].Steps, phase)
		for _, i := range kept {
			ds = append(ds, tagged{&r.Devices[di].Steps[i], di})
		}
		if len(ds) > 0 {
			per = append(per, ds)
		}
	}
	switch len(per) {
	case 0:
		return nil, ""
	case 1:
		return per[0], ""
	}
	n, same := len(per[0]), true
	for _, ds := range per {
		same = same && len(ds) == n
		n = min(n, len(ds))
	}
	slowest := func(group []tagged) tagged {
		best := group[0]
		for _, t := range group[1:] {
			if t.step.Wall() > best.step.Wall() {
				best = t
			}
		}
		return best
	}
	if !same && r.Ranks != nil && len(r.Ranks.Steps) > 0 && len(r.Ranks.Devices) == len(r.Devices) {
		byIndex := make([]map[int]tagged, len(r.Devices))
		for _, ds := range per {
			m := map[int]tagged{}
			for _, t := range ds {
				m[t.step.Index] = t
			}
			byIndex[ds[0].dev] = m
		}
		for _, rs := range r.Ranks.Steps {
			var group []tagged
			for d, idx := range rs.Steps {
				if byIndex[d] == nil {
					continue
				}
				if t, ok := byIndex[d][idx]; ok {
					group = append(group, t)
				}
			}
			if len(group) > 0 {
				run = append(run, slowest(group))
			}
		}
		return run, "time"
	}
	for i := 0; i < n; i++ {
		group := make([]tagged, len(per))
		for k, ds := range per {
			group[k] = ds[i]
		}
		run = append(run, slowest(group))
	}
	if same {
		return run, "index"
	}
	return run, fmt.Sprintf("index, first %d", n)
}
