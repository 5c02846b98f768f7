package render

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/stepstat/stepstat/breakdown/compare"
)

// diffCatsChart: grouped bars, base vs new, of each category's mean exclusive time per
// step (the categories either side has; they add up to the mean step), and of the whole
// step on an axis of its own; the new side's bars are labelled with the change of the
// mean, coloured where it is significant.
func diffCatsChart(c *compare.Comparison) (chartBlock, error) {
	bl, nl := sideNames(c)
	title := fmt.Sprintf("Mean time per %s step by category: %s vs %s", c.Phase, bl, nl)
	sub := "the means add up to the mean step; labels: the change of the mean where significant (red slower, green faster), else ~, n/c not comparable; right: the whole step"
	var labels []string
	var base, nw []opts.BarData
	var totalBase, totalNew []opts.BarData
	for _, r := range shownRows(c) {
		b, n := barPair(c, r)
		if r == &c.Step {
			totalBase, totalNew = append(totalBase, b), append(totalNew, n)
			continue
		}
		labels = append(labels, r.Name)
		base, nw = append(base, b), append(nw, n)
	}
	bar := charts.NewBar()
	b := chartBlock{ID: "diff-cats", Title: title, Height: 400, Wide: true, Units: "time,time"}
	legend, top := wrapLegend([]string{bl, nl}, 46)
	legend.Data = []string{bl, nl}
	top += 12 // room for the value axis's name
	b.Height += top - 96
	bar.SetGlobalOptions(append(b.globalOpts(sub),
		charts.WithLegendOpts(legend),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(
			opts.Grid{Top: strconv.Itoa(top), Left: "8", Right: "20%", Bottom: "16", ContainLabel: opts.Bool(true)},
			opts.Grid{Top: strconv.Itoa(top), Left: "83%", Right: "16", Bottom: "16", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0"}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "mean/step"}),
	)...)
	bar.ExtendXAxis(opts.XAxis{Type: "category", GridIndex: 1, Data: []string{compare.WholeStep}})
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

// barPair returns the bars of a row: the base mean per step, and the new mean labelled
// with the change (the means table's verdict).
func barPair(c *compare.Comparison, r *compare.Row) (opts.BarData, opts.BarData) {
	b := opts.BarData{Value: math.Round(r.Mean.Base) / 1e3}
	n := opts.BarData{Value: math.Round(r.Mean.New) / 1e3}
	label := &opts.Label{Show: opts.Bool(true), Position: "top", Formatter: meanVerdict(c, r), Color: "#777777"}
	if r.Mean.Significant {
		label.Color, label.FontWeight = betterColor, "bold"
		if r.Mean.Delta > 0 {
			label.Color = worseColor
		}
	}
	n.Label = label
	return b, n
}

// diffStepsChart: each side's step time over the run, as two lines over the step's position
// among the compared steps; runs one after another, and for runs of several devices one
// point per aligned step (the step on the slowest rank, as the tests' samples). Above
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
	if ranked(c) {
		sub = fmt.Sprintf("%s: %d aligned steps, %s: %d aligned steps (each the step on the slowest rank)", bl, len(bs), nl, len(ns))
	}
	if len(c.BaseSteps) > 1 || len(c.NewSteps) > 1 {
		sub += "; runs one after another"
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
	names := []string{bl, nl}
	if g.bucketed() {
		names = []string{bl + " median", bl + " shortest", bl + " longest", nl + " median", nl + " shortest", nl + " longest"}
	}
	legend, top := wrapLegend(names, 46)
	top += 16 // room for the value axis's name
	b.Height += top - 100
	line.SetGlobalOptions(append(b.globalOpts(sub),
		charts.WithLegendOpts(legend),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithGridOpts(opts.Grid{Top: strconv.Itoa(top), Left: "8", Right: "24", Bottom: bottom, ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: diffStepAxisName(c, g), NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "step time", Scale: opts.Bool(true)}),
	)...)
	if dz := dataZooms(g.count()); dz != nil {
		line.SetGlobalOptions(charts.WithDataZoomOpts(dz...))
	}
	line.SetXAxis(xs)
	showSymbol := g.count() <= 100
	addStepLines(line, g, bl, baseColor, bs, showSymbol)
	addStepLines(line, g, nl, newColor, ns, showSymbol)
	cb, err := newChart(b, line)
	return cb, err == nil, err
}

// addStepLines adds one side's step walls to the line chart in g's buckets: one line of
// the steps (the median of each bucket), and when bucketed the shortest and the longest.
func addStepLines(line *charts.Line, g stepGroups, label, color string, walls []time.Duration, showSymbol bool) {
	if len(walls) == 0 {
		return
	}
	sg := stepGroups{n: len(walls), k: g.k}
	med := make([]opts.LineData, sg.count())
	lo := make([]opts.LineData, sg.count())
	hi := make([]opts.LineData, sg.count())
	for b := range med {
		first, last := sg.bounds(b)
		vals := make([]float64, 0, last-first)
		for _, w := range walls[first:last] {
			vals = append(vals, chartUS(w))
		}
		m := bucketMedian(vals) // sorts vals
		med[b].Value, lo[b].Value, hi[b].Value = m, vals[0], vals[len(vals)-1]
	}
	if color == baseColor {
		color = "#6b7785" // the base's bars are light; its line needs more contrast
	}
	name := label
	if g.bucketed() {
		name = label + " median"
	}
	line.AddSeries(name, med, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(showSymbol), SymbolSize: 5}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: color}), charts.WithLineStyleOpts(opts.LineStyle{Width: 2}))
	if g.bucketed() {
		line.AddSeries(label+" shortest", lo, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: color}), charts.WithLineStyleOpts(opts.LineStyle{Width: 1, Type: "dashed", Opacity: opts.Float(0.6)}))
		line.AddSeries(label+" longest", hi, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: color}), charts.WithLineStyleOpts(opts.LineStyle{Width: 1, Opacity: opts.Float(0.6)}))
	}
}

func diffStepAxisName(c *compare.Comparison, g stepGroups) string {
	what := c.Phase.String() + " step (position among the compared steps)"
	if g.bucketed() {
		return fmt.Sprintf("%s, buckets of %d", what, g.k)
	}
	return what
}
