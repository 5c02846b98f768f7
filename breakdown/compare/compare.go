// Package compare compares two sides, each the reports (with their findings) of one or
// more runs of one configuration: per category and for the whole step, medians with
// confidence intervals and a Mann-Whitney U test (benchmath), the kernels that appeared,
// vanished or changed variant, and the side summaries (compare.go); the same per device
// position of multi-GPU traces (ranks.go); the findings that appeared, vanished or changed
// (findings.go); and the run configuration of each side and what differs (config.go).
package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
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
	Alpha      float64 // significance level of the Mann-Whitney U test (default 0.05)
	Confidence float64 // confidence level of the intervals (default 0.95)
	MinChange  float64 // relative change below which a row is "~" whatever p says (0.01 = 1%)
	// PerRun uses one sample per run (file) — each run's median per step — instead of one
	// sample per step. Steps of one run are not independent; runs are.
	PerRun bool
}

// Stat is the distribution of one quantity on one side.
type Stat struct {
	Center, Lo, Hi float64 // median and confidence interval, in ns
	N              int
}

// Row compares one quantity (a category's exclusive time per step, or the step time).
type Row struct {
	Name        string
	Base, New   Stat
	DeltaPct    float64 // (new/base - 1) * 100; NaN when base is 0
	P           float64
	Significant bool // P < Alpha and |delta| >= MinChange
	Warnings    []error
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
	Base, New  SideSummary
	Config     []ConfigChange // knobs whose value differs between the sides, by name
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
	c.BaseSteps, c.NewSteps = stepWalls(bsteps), stepWalls(nsteps)
	th := benchmath.DefaultThresholds
	th.CompareAlpha = opt.Alpha
	c.Step, c.Categories = compareSteps(bsteps, nsteps, opt, &th)
	c.Appeared, c.Vanished, c.Variants = kernelChanges(base, new)
	c.Ranks = compareRanks(base, new, phase, opt, &th)
	c.Findings = compareFindings(base, new)
	c.Warnings = sideWarnings(bs, ns)
	if opt.PerRun && (len(base.Reports) < 2 || len(new.Reports) < 2) {
		c.Warnings = append(c.Warnings, fmt.Errorf("one sample per run with %d run(s) on %s and %d on %s: too few to test or to bound (± ∞); give several runs per side",
			len(base.Reports), base.Label, len(new.Reports), new.Label))
	}
	return c
}

// stepWalls returns the wall time of each step, per run.
func stepWalls(runs [][]*breakdown.Step) [][]time.Duration {
	out := make([][]time.Duration, len(runs))
	for i, run := range runs {
		for _, s := range run {
			out[i] = append(out[i], s.Wall())
		}
	}
	return out
}

// compareSteps compares the steps of the two sides' runs: the whole step, then each
// category's exclusive time in kernelclass.Order.
func compareSteps(base, new [][]*breakdown.Step, opt Options, th *benchmath.Thresholds) (Row, []Row) {
	row := func(name string, value func(s *breakdown.Step) float64) Row {
		var b, n [][]float64
		for _, run := range base {
			b = append(b, values(run, value))
		}
		for _, run := range new {
			n = append(n, values(run, value))
		}
		return compareRow(name, b, n, opt, th)
	}
	step := row("whole step", func(s *breakdown.Step) float64 { return float64(s.Wall()) })
	var cats []Row
	for _, cat := range kernelclass.Order {
		cats = append(cats, row(cat.String(), func(s *breakdown.Step) float64 { return float64(s.Exclusive[cat]) }))
	}
	return step, cats
}

func values(steps []*breakdown.Step, value func(s *breakdown.Step) float64) []float64 {
	out := make([]float64, len(steps))
	for i, s := range steps {
		out[i] = value(s)
	}
	return out
}

// compareRow summarises each side's samples and tests the difference. Samples are per step
// (all runs pooled) or, with PerRun, one median per run.
func compareRow(name string, base, new [][]float64, opt Options, th *benchmath.Thresholds) Row {
	flatten := func(runs [][]float64) []float64 {
		var out []float64
		for _, r := range runs {
			if opt.PerRun {
				if len(r) > 0 {
					out = append(out, medianF(r))
				}
				continue
			}
			out = append(out, r...)
		}
		return out
	}
	b, n := flatten(base), flatten(new)
	r := Row{Name: name, DeltaPct: math.NaN(), P: 1}
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
	bigEnough := math.IsNaN(r.DeltaPct) || math.Abs(r.DeltaPct) >= opt.MinChange*100
	r.Significant = r.P < opt.Alpha && bigEnough && r.Base.Center != r.New.Center
	return r
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
func summarizeSide(s Side, phase breakdown.Phase) (SideSummary, [][]*breakdown.Step) {
	var cfgs [][]nsys.EnvVar
	for _, r := range s.Reports {
		cfgs = append(cfgs, r.Config)
	}
	ss := SideSummary{Label: s.Label, Config: sideConfig(cfgs)}
	var runs [][]*breakdown.Step
	methods := map[string]bool{}
	var walls []time.Duration
	var launches, kernels, gaps int
	var phaseSteps []breakdown.Step
	var excl [kernelclass.NumCategories]time.Duration
	for _, r := range s.Reports {
		ss.Paths = append(ss.Paths, r.Path)
		ss.Devices = max(ss.Devices, len(r.Devices))
		var run []*breakdown.Step
		for di := range r.Devices {
			d := &r.Devices[di]
			methods[d.Method.String()] = true
			phaseSteps = append(phaseSteps, d.Steps...)
			for i := range d.Steps {
				st := &d.Steps[i]
				if st.Phase != phase {
					continue
				}
				run = append(run, st)
				walls = append(walls, st.Wall())
				for c, d := range st.Exclusive {
					excl[c] += d
				}
				launches += st.Launches
				kernels += st.TotalKernels()
				gaps += st.Gaps.Count
			}
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

// sideNCCL totals the NCCL kernels of a side's runs per op, algorithm, protocol and data
// type, in that order.
func sideNCCL(s Side) []NCCLCount {
	nccl := map[kernelclass.NCCLKernel]*NCCLCount{}
	for _, r := range s.Reports {
		for _, k := range r.Kernels {
			if k.NCCL == nil {
				continue
			}
			nc := nccl[*k.NCCL]
			if nc == nil {
				nc = &NCCLCount{NCCLKernel: *k.NCCL}
				nccl[*k.NCCL] = nc
			}
			nc.Count += k.Count
			nc.Total += k.Total
		}
	}
	var out []NCCLCount
	for _, nc := range nccl {
		out = append(out, *nc)
	}
	slices.SortFunc(out, func(a, b NCCLCount) int {
		return cmp.Compare(a.Op+" "+a.Algo+" "+a.Proto+" "+a.DType, b.Op+" "+b.Algo+" "+b.Proto+" "+b.DType)
	})
	return out
}

func sideWarnings(b, n SideSummary) []error {
	var w []error
	if b.Devices != n.Devices {
		w = append(w, fmt.Errorf("the sides have different device counts: %s %d, %s %d", b.Label, b.Devices, n.Label, n.Devices))
	}
	if !slices.Equal(b.Methods, n.Methods) {
		w = append(w, fmt.Errorf("the sides found steps differently: %s by %s, %s by %s", b.Label, strings.Join(b.Methods, "+"), n.Label, strings.Join(n.Methods, "+")))
	}
	if b.Steps == 0 || n.Steps == 0 {
		w = append(w, fmt.Errorf("a side has no steps of the compared phase (%s: %d, %s: %d)", b.Label, b.Steps, n.Label, n.Steps))
	}
	if math.Abs(b.PhaseShare-n.PhaseShare) > 0.1 {
		w = append(w, fmt.Errorf("the sides have different phase mixes: %s %s; %s %s", b.Label, b.PhaseMix, n.Label, n.PhaseMix))
	}
	return w
}

// kernelChanges lists kernel families (Normalize) present on one side only, and families
// whose exact names differ between the sides (a different tile or template choice).
func kernelChanges(base, new Side) (appeared, vanished, variants []KernelChange) {
	type fam struct {
		cat   kernelclass.Category
		names map[string]bool
		count int
		total time.Duration
	}
	collect := func(s Side) map[string]*fam {
		m := map[string]*fam{}
		for _, r := range s.Reports {
			for _, k := range r.Kernels {
				f := kernelclass.Normalize(k.Name)
				x := m[f]
				if x == nil {
					x = &fam{cat: k.Category, names: map[string]bool{}}
					m[f] = x
				}
				x.names[k.Name] = true
				x.count += k.Count
				x.total += k.Total
			}
		}
		return m
	}
	b, n := collect(base), collect(new)
	keys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for f, x := range b {
		y := n[f]
		switch {
		case y == nil:
			vanished = append(vanished, KernelChange{Family: f, Category: x.cat, BaseNames: keys(x.names), BaseCount: x.count, BaseTotal: x.total})
		case !maps2Equal(x.names, y.names):
			variants = append(variants, KernelChange{Family: f, Category: x.cat, BaseNames: keys(x.names), NewNames: keys(y.names),
				BaseCount: x.count, NewCount: y.count, BaseTotal: x.total, NewTotal: y.total})
		}
	}
	for f, y := range n {
		if b[f] == nil {
			appeared = append(appeared, KernelChange{Family: f, Category: y.cat, NewNames: keys(y.names), NewCount: y.count, NewTotal: y.total})
		}
	}
	byTime := func(a, b KernelChange) int {
		if c := cmp.Compare(b.BaseTotal+b.NewTotal, a.BaseTotal+a.NewTotal); c != 0 {
			return c
		}
		return cmp.Compare(a.Family, b.Family)
	}
	slices.SortFunc(appeared, byTime)
	slices.SortFunc(vanished, byTime)
	slices.SortFunc(variants, byTime)
	return
}

func maps2Equal(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// BiggestChanges returns the significant rows of rows, largest absolute change of the
// median first (ties by name).
func BiggestChanges(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.Significant {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Row) int {
		if c := cmp.Compare(math.Abs(b.New.Center-b.Base.Center), math.Abs(a.New.Center-a.Base.Center)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}
