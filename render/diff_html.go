package render

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// Layout limits of the HTML comparison.
const maxChangeRows = 100 // rows of each kernel-change table; the JSON output has them all

// diffPage is the page shell with the "diff" content and the diff page's own styles
// ("diff-style" in html.tmpl, wired into the shell's "page-style" hook).
var diffPage = func() *template.Template {
	t := pageWith("diff")
	return template.Must(t.Parse(`{{define "page-style"}}{{template "diff-style"}}{{end}}`))
}()

// Colours of the two sides in the diff charts.
const (
	baseColor = "#9aa5b1"
	newColor  = "#2f6fdf"
	// Labels of significant changes: slower, faster.
	worseColor  = "#c62828"
	betterColor = "#2e7d32"
)

// htmlDiff is the content of a diff page.
type htmlDiff struct {
	Lead     string
	Charts   []chartBlock
	Table    *htmlTable // the benchstat table
	Means    *htmlTable // means per step, adding up to the mean step
	Caveat   string
	Counts   *htmlTable
	NCCL     *htmlTable
	Changes  []*htmlTable // appeared, vanished, changed variants (only those with rows)
	NoChange string       // set when no kernel family changed
}

// DiffHTML writes a comparison as one self-contained HTML file: the header facts of both
// sides, the benchstat-style table (the same strings as DiffText), grouped bars of each
// category's median per step on both sides, both sides' step time over the run, the counts
// per step, NCCL kernels, the kernels that appeared, vanished or changed variant, the
// caveat and the warnings. Like HTML it loads nothing from the network, and the same
// comparison and options give the same bytes.
func DiffHTML(w io.Writer, c *compare.Comparison, opt HTMLOptions) error {
	if err := checkScriptText(opt.EChartsJS); err != nil {
		return err
	}
	content, err := newHTMLDiff(c)
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	bl, nl := sideNames(c)
	page := htmlPage{
		Title:     "stepstat diff: " + bl + " vs " + nl,
		Heading:   "stepstat diff: " + bl + " vs " + nl,
		Generator: "stepstat",
		EChartsJS: template.JS(opt.EChartsJS),
		Facts:     diffFacts(c),
		FactTable: diffSides(c),
		Config:    diffConfigTable(c, bl, nl),
		Warnings:  diffWarnings(c),
		Content:   content,
	}
	if err := diffPage.ExecuteTemplate(w, "page", page); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	return nil
}

// sideNames returns the labels of the two sides, told apart when they are equal (the
// charts' legends merge series of the same name).
func sideNames(c *compare.Comparison) (string, string) {
	bl, nl := c.Base.Label, c.New.Label
	if bl == nl {
		return "base " + bl, "new " + nl
	}
	return bl, nl
}

func diffFacts(c *compare.Comparison) []htmlFact {
	unit := "step (every step is a sample)"
	if c.Options.PerRun {
		unit = "run (each run's median per step is a sample)"
	}
	test := fmt.Sprintf("Mann-Whitney U at α=%g; ± is the %g%% confidence interval of the median",
		c.Options.Alpha, 100*c.Options.Confidence)
	if c.Options.MinChange > 0 {
		test += fmt.Sprintf("; changes under %g%% show as ~", 100*c.Options.MinChange)
	}
	return []htmlFact{
		{"Base", c.Base.Label},
		{"Base files", strings.Join(c.Base.Paths, ", ")},
		{"New", c.New.Label},
		{"New files", strings.Join(c.New.Paths, ", ")},
		{"Phase compared", c.Phase.String()},
		{"Sample unit", unit},
		{"Test", test},
	}
}

// diffSides lists, per side, the runs and how their steps were found.
func diffSides(c *compare.Comparison) *htmlTable {
	t := &htmlTable{ID: "sides", Caption: "Steps found per side",
		Head: []htmlCell{cellText("side"), cellText("label"), cellNum("runs"), cellNum("devices/run"), cellText("steps found"),
			cellNum(c.Phase.String() + " steps compared"), cellText("step method"), cellText("files")}}
	for _, s := range []struct {
		side string
		ss   *compare.SideSummary
	}{{"base", &c.Base}, {"new", &c.New}} {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellText(s.side), cellName(s.ss.Label), cellNum(strconv.Itoa(len(s.ss.Paths))),
			cellNum(strconv.Itoa(s.ss.Devices)), cellText(orDefault(s.ss.PhaseMix, "none")), cellNum(strconv.Itoa(s.ss.Steps)),
			cellText(orDefault(strings.Join(s.ss.Methods, "+"), "-")), cellName(strings.Join(s.ss.Paths, ", "))}})
	}
	return t
}

func newHTMLDiff(c *compare.Comparison) (*htmlDiff, error) {
	bl, nl := sideNames(c)
	out := &htmlDiff{Caveat: diffCaveat}
	r := &c.Step
	out.Lead = fmt.Sprintf("%s: %s → %s, %s %s", capitalize(c.Phase.String())+" step", breakdown.FormatDuration(int64(math.Round(r.Base.Center))),
		breakdown.FormatDuration(int64(math.Round(r.New.Center))), deltaWords(r), rowPN(r))
	cats, err := diffCatsChart(c)
	if err != nil {
		return nil, err
	}
	out.Charts = append(out.Charts, cats)
	if steps, ok, err := diffStepsChart(c); err != nil {
		return nil, err
	} else if ok {
		out.Charts = append(out.Charts, steps)
	}
	out.Table = diffTable(c, bl, nl)
	out.Means = diffMeansTable(c, bl, nl)
	out.Counts = diffCounts(c, bl, nl)
	out.NCCL = diffNCCL(c, bl, nl)
	for _, t := range []*htmlTable{
		changeTable("diff-appeared", "Kernels only in "+nl, c.Appeared, false),
		changeTable("diff-vanished", "Kernels only in "+bl, c.Vanished, true),
		variantTable(c.Variants, bl, nl),
	} {
		if t != nil {
			out.Changes = append(out.Changes, t)
		}
	}
	if len(out.Changes) == 0 {
		out.NoChange = "No kernel family appeared, vanished or changed variant (names normalised, so tile and template variants of one kernel are one family)."
	}
	return out, nil
}

// deltaWords says the delta of a row in the lead line.
func deltaWords(r *compare.Row) string {
	switch d := rowDelta(r); d {
	case "~":
		return "no significant change"
	case "?":
		return "no comparison"
	default:
		return d
	}
}

// shownRows returns the rows DiffText prints: the categories either side has, then the
// whole step.
func shownRows(c *compare.Comparison) []*compare.Row {
	var out []*compare.Row
	for i := range c.Categories {
		r := &c.Categories[i]
		if r.Base.Center == 0 && r.New.Center == 0 && r.Base.N > 0 {
			continue // a category neither side has
		}
		out = append(out, r)
	}
	return append(out, &c.Step)
}

// rowCategory returns the category a row is about, and false for the whole step.
func rowCategory(r *compare.Row) (kernelclass.Category, bool) {
	for _, cat := range kernelclass.Order {
		if cat.String() == r.Name {
			return cat, true
		}
	}
	return 0, false
}

// deltaClass marks significant changes: "worse" for slower, "better" for faster.
func deltaClass(r *compare.Row) string {
	if !r.Significant {
		return ""
	}
	if r.New.Center > r.Base.Center {
		return "worse"
	}
	return "better"
}

// diffTable is DiffText's benchstat table: median ± CI per side, the delta or ~, p and n.
func diffTable(c *compare.Comparison, bl, nl string) *htmlTable {
	t := &htmlTable{ID: "diff-table",
		Caption: fmt.Sprintf("Time per %s step: median ± %g%% confidence interval, each row its own samples and test (medians do not add up; the means table does)", c.Phase, 100*c.Options.Confidence),
		Head:    []htmlCell{cellText(""), cellNum(bl), cellText("±"), cellNum(nl), cellText("±"), cellNum("vs base"), cellText("(p, n)")}}
	for _, r := range shownRows(c) {
		name := cellText(r.Name)
		if cat, ok := rowCategory(r); ok {
			name = catCell(cat)
		}
		delta := cellNum(rowDelta(r))
		if cl := deltaClass(r); cl != "" {
			delta.Class += " " + cl
		}
		row := htmlRow{Cells: []htmlCell{name, cellNum(breakdown.FormatDuration(int64(r.Base.Center))), cellText(pctRange(r.Base)),
			cellNum(breakdown.FormatDuration(int64(r.New.Center))), cellText(pctRange(r.New)), delta, cellText(rowPN(r))}}
		if r == &c.Step {
			row.Class = "total"
		}
		t.Rows = append(t.Rows, row)
	}
	t.Note = fmt.Sprintf("vs base: the change of the median where the difference is significant, else ~. Samples: one per %s. "+
		"Several categories are tested at once: expect about α=%g of the rows to test significant by chance.",
		map[bool]string{false: "step", true: "run (its median per step)"}[c.Options.PerRun], c.Options.Alpha)
	return t
}

// diffMeansTable is DiffText's means table: each category's mean per step on both sides,
// adding up to the mean step, and the change.
func diffMeansTable(c *compare.Comparison, bl, nl string) *htmlTable {
	t := &htmlTable{ID: "diff-means", Caption: fmt.Sprintf("Means per %s step (the rows add up to the mean step)", c.Phase),
		Head: []htmlCell{cellText(""), cellNum(bl), cellNum(nl), cellNum("change/step")}}
	for _, cat := range kernelclass.Order {
		b, n := c.Base.Means[cat], c.New.Means[cat]
		if b == 0 && n == 0 {
			continue
		}
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{catCell(cat), cellNum(breakdown.FormatDuration(int64(b))), cellNum(breakdown.FormatDuration(int64(n))),
			cellNum(signedDuration(float64(n - b)))}})
	}
	t.Rows = append(t.Rows, htmlRow{Class: "total", Cells: []htmlCell{cellText("mean step"), cellNum(breakdown.FormatDuration(int64(c.Base.MeanStep))),
		cellNum(breakdown.FormatDuration(int64(c.New.MeanStep))), cellNum(signedDuration(float64(c.New.MeanStep - c.Base.MeanStep)))}})
	return t
}

// diffCounts is DiffText's counts table, with the median step.
func diffCounts(c *compare.Comparison, bl, nl string) *htmlTable {
	t := &htmlTable{ID: "diff-counts", Caption: "Counts per " + c.Phase.String() + " step",
		Head: []htmlCell{cellText(""), cellNum(bl), cellNum(nl)}}
	f1 := func(f float64) string { return fmt.Sprintf("%.1f", f) }
	for _, r := range []struct {
		name string
		b, n string
	}{
		{c.Phase.String() + " steps", strconv.Itoa(c.Base.Steps), strconv.Itoa(c.New.Steps)},
		{"median step", breakdown.FormatDuration(int64(c.Base.MedianStep)), breakdown.FormatDuration(int64(c.New.MedianStep))},
		{"host launches/step", f1(c.Base.LaunchesPerStep), f1(c.New.LaunchesPerStep)},
		{"kernels/step", f1(c.Base.KernelsPerStep), f1(c.New.KernelsPerStep)},
		{"idle gaps/step", f1(c.Base.GapsPerStep), f1(c.New.GapsPerStep)},
		{"step method", strings.Join(c.Base.Methods, "+"), strings.Join(c.New.Methods, "+")},
	} {
		cell := cellNum
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellText(r.name), cell(orDefault(r.b, "-")), cell(orDefault(r.n, "-"))}})
	}
	return t
}

// diffNCCL lists NCCL kernels by op, algorithm, protocol and data type, per side.
func diffNCCL(c *compare.Comparison, bl, nl string) *htmlTable {
	if len(c.Base.NCCL)+len(c.New.NCCL) == 0 {
		return nil
	}
	t := &htmlTable{ID: "diff-nccl", Caption: "NCCL kernels by op, algorithm, protocol and data type (whole trace)", Note: diffNCCLNote(c, bl, nl),
		Head: []htmlCell{cellText("side"), cellText("op"), cellText("algo"), cellText("proto"), cellText("dtype"), cellNum("count"), cellNum("total")}}
	for _, s := range []struct {
		label string
		n     []compare.NCCLCount
	}{{bl, c.Base.NCCL}, {nl, c.New.NCCL}} {
		for _, n := range s.n {
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellName(s.label), cellName(orDefault(n.Op, "-")), cellName(orDefault(n.Algo, "-")),
				cellName(orDefault(n.Proto, "-")), cellName(orDefault(n.DType, "-")), cellNum(strconv.Itoa(n.Count)), cellNum(breakdown.FormatDuration(int64(n.Total)))}})
		}
	}
	return t
}

// changeTable lists kernel families of one side only.
func changeTable(id, caption string, cs []compare.KernelChange, base bool) *htmlTable {
	if len(cs) == 0 {
		return nil
	}
	t := &htmlTable{ID: id, Caption: fmt.Sprintf("%s: %d kernel families", caption, len(cs)),
		Head: []htmlCell{cellText("category"), cellNum("count"), cellNum("total"), cellText("family"), cellText("names")}}
	for i, k := range cs {
		if i == maxChangeRows {
			t.Note = moreNote(len(cs))
			break
		}
		n, total, names := k.NewCount, k.NewTotal, k.NewNames
		if base {
			n, total, names = k.BaseCount, k.BaseTotal, k.BaseNames
		}
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{catCell(k.Category), cellNum(strconv.Itoa(n)), cellNum(breakdown.FormatDuration(int64(total))),
			familyCell(k.Family), namesCell(names)}})
	}
	return t
}

// variantTable lists kernel families whose names differ between the sides.
func variantTable(cs []compare.KernelChange, bl, nl string) *htmlTable {
	if len(cs) == 0 {
		return nil
	}
	t := &htmlTable{ID: "diff-variants",
		Caption: fmt.Sprintf("Changed variants (same kernel family, other tile or template choice): %d kernel families", len(cs)),
		Head: []htmlCell{cellText("category"), cellNum(bl + " count"), cellNum(nl + " count"), cellText("family"),
			cellText(bl + " names"), cellText(nl + " names")}}
	for i, k := range cs {
		if i == maxChangeRows {
			t.Note = moreNote(len(cs))
			break
		}
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{catCell(k.Category), cellNum(strconv.Itoa(k.BaseCount)), cellNum(strconv.Itoa(k.NewCount)),
			familyCell(k.Family), namesCell(k.BaseNames), namesCell(k.NewNames)}})
	}
	return t
}

func moreNote(n int) string {
	return fmt.Sprintf("The first %d of %d are shown; stepstat diff --format json lists them all.", maxChangeRows, n)
}

func familyCell(f string) htmlCell { return htmlCell{Text: f, Class: "name family"} }

// namesCell holds kernel names one a line.
func namesCell(names []string) htmlCell {
	return htmlCell{Text: strings.Join(names, "\n"), Class: "name names"}
}

// diffCatsChart: grouped bars, base vs new, of each category's median exclusive time per
// step (the categories either side has), and of the whole step on an axis of its own; the
// new side's bars are labelled with the change, coloured where it is significant.
func diffCatsChart(c *compare.Comparison) (chartBlock, error) {
	bl, nl := sideNames(c)
	title := fmt.Sprintf("Median time per %s step by category: %s vs %s", c.Phase, bl, nl)
	sub := "labels: the change of the median where significant (red slower, green faster), else ~; right: the whole step"
	var labels []string
	var base, nw []opts.BarData
	var totalBase, totalNew []opts.BarData
	for _, r := range shownRows(c) {
		b, n := barPair(r)
		if r == &c.Step {
			totalBase, totalNew = append(totalBase, b), append(totalNew, n)
			continue
		}
		labels = append(labels, r.Name)
		base, nw = append(base, b), append(nw, n)
	}
	bar := charts.NewBar()
	b := chartBlock{ID: "diff-cats", Title: title, Height: 400, Wide: true, Units: "time,time"}
	bar.SetGlobalOptions(append(b.globalOpts(sub),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "46", Left: "8", Right: "120", Data: []string{bl, nl}}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(
			opts.Grid{Top: "96", Left: "8", Right: "20%", Bottom: "16", ContainLabel: opts.Bool(true)},
			opts.Grid{Top: "96", Left: "83%", Right: "16", Bottom: "16", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0"}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "median/step"}),
	)...)
	bar.ExtendXAxis(opts.XAxis{Type: "category", GridIndex: 1, Data: []string{"whole step"}})
	bar.ExtendYAxis(opts.YAxis{Type: "value", GridIndex: 1})
	bar.SetXAxis(labels)
	bar.AddSeries(bl, base, charts.WithItemStyleOpts(opts.ItemStyle{Color: baseColor}))
	bar.AddSeries(nl, nw, charts.WithItemStyleOpts(opts.ItemStyle{Color: newColor}))
	bar.AddSeries(bl, totalBase, charts.WithBarChartOpts(opts.BarChart{XAxisIndex: 1, YAxisIndex: 1}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: baseColor}))
	bar.AddSeries(nl, totalNew, charts.WithBarChartOpts(opts.BarChart{XAxisIndex: 1, YAxisIndex: 1}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: newColor}))
	return newChart(b, bar)
}

// barPair returns the bars of a row: the base median, and the new median labelled with
// the change.
func barPair(r *compare.Row) (opts.BarData, opts.BarData) {
	b := opts.BarData{Value: math.Round(r.Base.Center) / 1e3}
	n := opts.BarData{Value: math.Round(r.New.Center) / 1e3}
	label := &opts.Label{Show: opts.Bool(true), Position: "top", Formatter: rowDelta(r), Color: "#777777"}
	switch deltaClass(r) {
	case "worse":
		label.Color, label.FontWeight = worseColor, "bold"
	case "better":
		label.Color, label.FontWeight = betterColor, "bold"
	}
	n.Label = label
	return b, n
}

// diffStepsChart: each side's step time over the run, as two lines over the step's position
// among the compared steps; runs (and devices of a run) one after another. Above
// maxChartSteps steps on either side, both sides are shown in buckets of the same size:
// the median per bucket, and thin lines for the shortest and longest step. ok is false
// when neither side has steps.
func diffStepsChart(c *compare.Comparison) (chartBlock, bool, error) {
	flat := func(runs [][]time.Duration) []time.Duration {
		var out []time.Duration
		for _, r := range runs {
			out = append(out, r...)
		}
		return out
	}
	bs, ns := flat(c.BaseSteps), flat(c.NewSteps)
	n := max(len(bs), len(ns))
	if n == 0 {
		return chartBlock{}, false, nil
	}
	bl, nl := sideNames(c)
	g := newStepGroups(n)
	title := fmt.Sprintf("Time of each %s step: %s vs %s", c.Phase, bl, nl)
	if g.bucketed() {
		title = fmt.Sprintf("Time of each %s step: %s vs %s (buckets of %d steps: median, shortest and longest)", c.Phase, bl, nl, g.k)
	}
	sub := fmt.Sprintf("%s: %d steps, %s: %d steps", bl, len(bs), nl, len(ns))
	if len(c.BaseSteps) > 1 || len(c.NewSteps) > 1 || c.Base.Devices > 1 || c.New.Devices > 1 {
		sub += "; runs and devices one after another"
	}
	xs := make([]string, g.count())
	for b := range xs {
		lo, hi := g.bounds(b)
		xs[b] = strconv.Itoa(lo)
		if g.bucketed() {
			xs[b] = fmt.Sprintf("%d-%d", lo, hi-1)
		}
	}
	bottom := "32"
	if g.count() > 60 {
		bottom = "80" // room for the axis name above the zoom slider
	}
	line := charts.NewLine()
	b := chartBlock{ID: "diff-steps", Title: title, Height: 400, Wide: true, Units: "time"}
	line.SetGlobalOptions(append(b.globalOpts(sub),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "46", Left: "8", Right: "120"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithGridOpts(opts.Grid{Top: "100", Left: "8", Right: "24", Bottom: bottom, ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: diffStepAxisName(c, g), NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "step time", Scale: opts.Bool(true)}),
	)...)
	if dz := dataZooms(g.count()); dz != nil {
		line.SetGlobalOptions(charts.WithDataZoomOpts(dz...))
	}
	line.SetXAxis(xs)
	showSymbol := g.count() <= 100
	for _, s := range []struct {
		label string
		color string
		walls []time.Duration
	}{{bl, baseColor, bs}, {nl, newColor, ns}} {
		if len(s.walls) == 0 {
			continue
		}
		sg := stepGroups{n: len(s.walls), k: g.k}
		med := make([]opts.LineData, sg.count())
		lo := make([]opts.LineData, sg.count())
		hi := make([]opts.LineData, sg.count())
		for b := range med {
			first, last := sg.bounds(b)
			vals := make([]float64, 0, last-first)
			for _, w := range s.walls[first:last] {
				vals = append(vals, chartUS(w))
			}
			m := bucketMedian(vals) // sorts vals
			med[b].Value, lo[b].Value, hi[b].Value = m, vals[0], vals[len(vals)-1]
		}
		color := s.color
		if s.color == baseColor {
			color = "#6b7785" // the base's bars are light; its line needs more contrast
		}
		name := s.label
		if g.bucketed() {
			name = s.label + " median"
		}
		line.AddSeries(name, med, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(showSymbol), SymbolSize: 5}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: color}), charts.WithLineStyleOpts(opts.LineStyle{Width: 2}))
		if g.bucketed() {
			line.AddSeries(s.label+" shortest", lo, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
				charts.WithItemStyleOpts(opts.ItemStyle{Color: color}), charts.WithLineStyleOpts(opts.LineStyle{Width: 1, Type: "dashed", Opacity: opts.Float(0.6)}))
			line.AddSeries(s.label+" longest", hi, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
				charts.WithItemStyleOpts(opts.ItemStyle{Color: color}), charts.WithLineStyleOpts(opts.LineStyle{Width: 1, Opacity: opts.Float(0.6)}))
		}
	}
	cb, err := newChart(b, line)
	return cb, err == nil, err
}

func diffStepAxisName(c *compare.Comparison, g stepGroups) string {
	what := c.Phase.String() + " step (position among the compared steps)"
	if g.bucketed() {
		return fmt.Sprintf("%s, buckets of %d", what, g.k)
	}
	return what
}
