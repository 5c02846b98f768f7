package render

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds the device sections of the HTML report: the summary and step tables and
// the per-device charts (steps, shares, gaps, heat map). page_html.go holds the page shell,
// chart_html.go the chart plumbing, ranks_html.go the rank section.

func newHTMLDevice(d *breakdown.DeviceReport) (htmlDevice, error) {
	h := htmlDevice{
		Anchor:   strings.ReplaceAll(d.Name(), " ", "-"), // device-0, or device-0-pid-1234 on a shared device
		Heading:  fmt.Sprintf("%s: %s", capitalize(d.Name()), gpuName(d.GPU)),
		Lifetime: lifetimeLine(d),
	}
	sm := &d.Summary
	if len(d.Steps) == 0 {
		h.Empty = "No steps on this device (after --skip)."
		return h, nil
	}
	if sm.Steps == 0 {
		h.Empty = "No " + phaseWhat(sm) + "s to summarise; the charts and the step table show every step."
	} else {
		h.Lead = summaryLead(sm)
		h.Summary = summaryTable(sm)
		h.IdleLine = idleLine(sm)
		h.Sentences = summarySentences(sm)
	}
	var err error
	if h.Charts, err = deviceCharts(d); err != nil {
		return h, err
	}
	h.Steps = stepTable(d)
	return h, nil
}

// summaryTable is the text report's decode table.
func summaryTable(sm *breakdown.Summary) *htmlTable {
	t := &htmlTable{Caption: summaryCaption(sm),
		Head: []htmlCell{cellText("category"), cellNum("mean/step"), cellNum("share"), cellNum("kernels/step"), cellNum("memops/step")}}
	for _, r := range summaryRows(sm) {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{catCell(r.cat), cellNum(r.mean), cellNum(r.share), cellNum(r.kernels), cellNum(r.memops)}})
	}
	t.Rows = append(t.Rows, htmlRow{Class: "total", Cells: []htmlCell{cellText("total"), cellNum(breakdown.FormatDuration(int64(sm.Mean))), cellNum("100%"),
		cellNum(fmt.Sprintf("%.1f", sm.KernelsPerStep)), cellNum(fmt.Sprintf("%.1f", sm.Categories[kernelclass.Memory].KernelsPerStep))}})
	return t
}

// presentCategories returns the categories, in kernelclass.Order, with time or kernels in
// any of the steps; idle always.
func presentCategories(steps []breakdown.Step) []kernelclass.Category {
	var seen [kernelclass.NumCategories]bool
	for i := range steps {
		for c := range steps[i].Exclusive {
			if steps[i].Exclusive[c] != 0 || steps[i].Kernels[c] != 0 {
				seen[c] = true
			}
		}
	}
	seen[kernelclass.Idle] = true
	var out []kernelclass.Category
	for _, c := range kernelclass.Order {
		if seen[c] {
			out = append(out, c)
		}
	}
	return out
}

// stepEvidence is a step's phase evidence as the step tables show it, with its graph
// capture mark.
func stepEvidence(s *breakdown.Step) string {
	if s.GraphCapture && !strings.Contains(s.PhaseEvidence, "CUDA graph") {
		return "captures a CUDA graph; " + s.PhaseEvidence
	}
	return s.PhaseEvidence
}

// stepTable lists every step, or the first and last tableEdgeSteps of a long run.
func stepTable(d *breakdown.DeviceReport) *htmlTable {
	cats := presentCategories(d.Steps)
	hasLabel := false
	for i := range d.Steps {
		if d.Steps[i].Label != "" {
			hasLabel = true
			break
		}
	}
	t := &htmlTable{ID: fmt.Sprintf("steptable-%d", d.Device), Caption: "Every step: exclusive time by category", Class: "wide"}
	t.Head = []htmlCell{cellNum("step"), cellText("phase"), cellNum("offset"), cellNum("wall")}
	for _, c := range cats {
		// A name is not broken: the category headers stand upright (th.vert), as wide
		// as a line, so that the table of many columns fits the page.
		h := cellNum(c.String())
		h.Class += " vert"
		t.Head = append(t.Head, h)
	}
	how := "cut by; phase evidence"
	if hasLabel {
		how = "label; " + how // one column of prose for the three: the table fits at 1000 px
	}
	t.Head = append(t.Head, cellNum("launches"), cellNum("kernels"), cellNum("gaps"), cellText(how))
	t0 := d.Steps[0].Start
	outliers := d.Summary.Outliers.Steps
	if len(outliers) > 0 {
		t.Caption += fmt.Sprintf("; outlier steps (over %gx the median %s, left out of the summary) marked", float64(breakdown.OutlierFactor), breakdown.FormatDuration(int64(d.Summary.Outliers.Median)))
	}
	row := func(s *breakdown.Step) htmlRow {
		phase, class := s.Phase.String(), s.Phase.String()
		if slices.Contains(outliers, s.Index) {
			phase, class = phase+" · outlier", class+" outlier"
		}
		cells := []htmlCell{cellNum(strconv.Itoa(s.Index)), cellText(phase), cellNum(breakdown.FormatDuration(int64(s.Start - t0))), cellNum(breakdown.FormatDuration(int64(s.Wall())))}
		for _, c := range cats {
			cells = append(cells, cellNum(breakdown.FormatDuration(int64(s.Exclusive[c]))))
		}
		cells = append(cells, cellNum(strconv.Itoa(s.Launches)), cellNum(strconv.Itoa(s.TotalKernels())), cellNum(strconv.Itoa(s.Gaps.Count)))
		how := breakable(s.CutBy) + "; " + stepEvidence(s)
		if hasLabel {
			how = orDefault(s.Label, "-") + "; " + how
		}
		cells = append(cells, cellFree(how))
		return htmlRow{Class: class, Cells: cells}
	}
	n := len(d.Steps)
	if n <= maxTableSteps {
		for i := range d.Steps {
			t.Rows = append(t.Rows, row(&d.Steps[i]))
		}
		return t
	}
	for i := 0; i < tableEdgeSteps; i++ {
		t.Rows = append(t.Rows, row(&d.Steps[i]))
	}
	hidden := n - 2*tableEdgeSteps
	t.Rows = append(t.Rows, htmlRow{Class: "skip", Span: len(t.Head), Cells: []htmlCell{cellText(fmt.Sprintf(
		"… %d steps not shown (steps %d to %d); the CSV output (stepstat report --format csv) has every step …",
		hidden, d.Steps[tableEdgeSteps].Index, d.Steps[n-tableEdgeSteps-1].Index))}})
	for i := n - tableEdgeSteps; i < n; i++ {
		t.Rows = append(t.Rows, row(&d.Steps[i]))
	}
	t.Note = fmt.Sprintf("%d steps: the first and last %d are shown.", n, tableEdgeSteps)
	return t
}

const prefillColor = "#d4572a"

// outlierColor marks outlier steps (Summary.Outliers) in the step chart and table.
const outlierColor = "#c62828"

// splitPrefill returns the steps the step charts and the heat map show on the main scale
// (every step but prefill) and the prefill steps, which get a chart of their own scale;
// pre is empty unless both kinds are present. A 200 ms prefill on the scale of 3 ms decode
// steps would flatten every decode bar.
func splitPrefill(steps []breakdown.Step) (main, pre []breakdown.Step) {
	for i := range steps {
		if steps[i].Phase == breakdown.Prefill {
			pre = append(pre, steps[i])
		} else {
			main = append(main, steps[i])
		}
	}
	if len(pre) == 0 || len(main) == 0 {
		return steps, nil
	}
	return main, pre
}

func deviceCharts(d *breakdown.DeviceReport) ([]chartBlock, error) {
	var out []chartBlock
	add := func(c chartBlock, err error) error {
		if err != nil {
			return err
		}
		out = append(out, c)
		return nil
	}
	main, pre := splitPrefill(d.Steps)
	if err := add(stepsChart(d, main, len(pre), false)); err != nil {
		return nil, err
	}
	if len(pre) > 1 { // one prefill step is a bar alone: the step table has it
		if err := add(stepsChart(d, pre, 0, true)); err != nil {
			return nil, err
		}
	}
	if d.Summary.Steps > 0 {
		if err := add(shareChart(d)); err != nil {
			return nil, err
		}
		if d.Summary.Gaps.Count > 0 {
			if err := add(gapsChart(d)); err != nil {
				return nil, err
			}
		}
	}
	if err := add(heatChart(d, main, len(pre))); err != nil {
		return nil, err
	}
	return out, nil
}

// stepsChart: stacked bars of each step's exclusive time by category, for the steps given:
// every step but prefill (with the number of prefill steps charted apart), or, with
// prefill, the prefill steps on their own scale.
func stepsChart(d *breakdown.DeviceReport, steps []breakdown.Step, prefillApart int, prefill bool) (chartBlock, error) {
	g := newStepGroups(len(steps))
	cats := presentCategories(steps)
	title := fmt.Sprintf("%s (%s): exclusive time per step by category", capitalize(d.Name()), gpuName(d.GPU))
	id := fmt.Sprintf("steps-%d", d.Device)
	if prefill {
		title = fmt.Sprintf("%s (%s): prefill steps, on their own scale", capitalize(d.Name()), gpuName(d.GPU))
		id = fmt.Sprintf("prefill-%d", d.Device)
	}
	sub := stepsSubtitle(d, steps, g, prefillApart, prefill)
	bar := charts.NewBar()
	b := chartBlock{ID: id, Title: title, Height: 440, Wide: true, Units: "time"}
	if prefill {
		b.Height = 340
	}
	var names []string
	for _, c := range cats {
		names = append(names, c.String())
	}
	if g.bucketed() {
		names = append(names, "shortest step", "longest step")
	}
	legend, top := wrapLegend(names, 46)
	b.Height += top - 84
	bar.SetGlobalOptions(append(b.globalOpts(sub),
		charts.WithLegendOpts(legend),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(opts.Grid{Top: strconv.Itoa(top), Left: "8", Right: "24", Bottom: gridBottom(g.count()), ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: stepAxisName(g), NameLocation: "middle", NameGap: 28,
			AxisLabel: categoryLabels(g.count())}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value"}),
	)...)
	if dz := dataZooms(g.count()); dz != nil {
		bar.SetGlobalOptions(charts.WithDataZoomOpts(dz...))
	}
	outliers := d.Summary.Outliers.Steps
	bar.SetXAxis(g.xLabels(steps, outliers))
	for _, c := range cats {
		data := make([]opts.BarData, g.count())
		for b := range data {
			if !g.bucketed() {
				data[b].Value = chartUS(steps[b].Exclusive[c])
				continue
			}
			med, _, _ := g.bucketStat(steps, b, func(s *breakdown.Step) float64 { return chartUS(s.Exclusive[c]) })
			data[b].Value = med
		}
		so := []charts.SeriesOpts{charts.WithBarChartOpts(opts.BarChart{Stack: "step"}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: categoryColors[c]})}
		if marks := outlierMarks(g, steps, outliers); len(marks) > 0 && c == cats[len(cats)-1] {
			// A red pin over each outlier step (or bucket holding one), on the stack's top.
			so = append(so, charts.WithMarkPointNameCoordItemOpts(marks...),
				charts.WithMarkPointStyleOpts(opts.MarkPointStyle{Symbol: []string{"pin"}, SymbolSize: 36,
					Label: &opts.Label{Show: opts.Bool(true), Formatter: "!", Color: "#ffffff"}}))
		}
		bar.AddSeries(c.String(), data, so...)
	}
	if g.bucketed() {
		bar.Overlap(minMaxLines(g, steps))
	}
	if !g.bucketed() {
		b.Kind = "stack"
	}
	return newChart(b, bar)
}

// countPhase returns the number of steps of phase p.
func countPhase(steps []breakdown.Step, p breakdown.Phase) int {
	n := 0
	for i := range steps {
		if steps[i].Phase == p {
			n++
		}
	}
	return n
}

// stepsSubtitle is the steps chart's subtitle: how steps are grouped and what is marked
// or left out.
func stepsSubtitle(d *breakdown.DeviceReport, steps []breakdown.Step, g stepGroups, prefillApart int, prefill bool) string {
	sub := g.note() + "; bars stack to the step's wall time"
	if g.bucketed() {
		sub = g.note() + "; bars: median of each category per bucket; lines: shortest and longest step"
	} else if !prefill && hasPhase(steps, breakdown.Prefill) {
		sub += "; prefill steps' indices in orange"
	}
	if n := countPhase(steps, breakdown.Uncertain); n > 0 && !prefill {
		sub += fmt.Sprintf("; %d step%s of uncertain phase (no signal told %s from decode or showed prompt tokens; out of the decode summary)", n, plural(n), map[bool]string{true: "it", false: "them"}[n == 1])
	}
	if n := len(d.Summary.Outliers.Steps); n > 0 && !prefill {
		sub += fmt.Sprintf("; %d outlier step%s (over %gx the median, left out of the summary) marked in red", n, plural(n), float64(breakdown.OutlierFactor))
	}
	if prefillApart > 0 {
		if prefillApart == 1 {
			for i := range d.Steps {
				if d.Steps[i].Phase == breakdown.Prefill {
					sub += fmt.Sprintf("; the prefill step (step %d, %s) is left out: the step table has it", d.Steps[i].Index, breakdown.FormatDuration(int64(d.Steps[i].Wall())))
					break
				}
			}
		} else {
			sub += fmt.Sprintf("; the %d prefill steps are on their own scale in the next chart", prefillApart)
		}
	}
	return sub
}

// minMaxLines is the bucketed steps chart's lines: the shortest and longest step of each
// bucket.
func minMaxLines(g stepGroups, steps []breakdown.Step) *charts.Line {
	lines := charts.NewLine()
	minD := make([]opts.LineData, g.count())
	maxD := make([]opts.LineData, g.count())
	for b := range minD {
		_, lo, hi := g.bucketStat(steps, b, func(s *breakdown.Step) float64 { return chartUS(s.Wall()) })
		minD[b].Value, maxD[b].Value = lo, hi
	}
	lines.AddSeries("shortest step", minD, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: "#333333"}), charts.WithLineStyleOpts(opts.LineStyle{Width: 1, Type: "dashed"}))
	lines.AddSeries("longest step", maxD, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: "#000000"}), charts.WithLineStyleOpts(opts.LineStyle{Width: 1}))
	return lines
}

// outlierMarks are the pins of the outlier steps in a step chart: at the top of the step's
// (or its bucket's longest step's) bar.
func outlierMarks(g stepGroups, steps []breakdown.Step, outliers []int) []opts.MarkPointNameCoordItem {
	var out []opts.MarkPointNameCoordItem
	for b := range g.count() {
		lo, hi := g.bounds(b)
		var top float64
		found := false
		for i := lo; i < hi; i++ {
			if slices.Contains(outliers, steps[i].Index) {
				found = true
			}
			top = max(top, chartUS(steps[i].Wall()))
		}
		if found {
			out = append(out, opts.MarkPointNameCoordItem{Name: "outlier step", Coordinate: []interface{}{b, top}})
		}
	}
	return out
}

func hasPhase(steps []breakdown.Step, p breakdown.Phase) bool {
	for i := range steps {
		if steps[i].Phase == p {
			return true
		}
	}
	return false
}

func stepAxisName(g stepGroups) string {
	if g.bucketed() {
		return fmt.Sprintf("steps (buckets of %d)", g.k)
	}
	return "step"
}

// shareChart: the share of each category in the summarised steps, as horizontal bars,
// largest first.
func shareChart(d *breakdown.DeviceReport) (chartBlock, error) {
	sm := &d.Summary
	title := "Share of the mean " + phaseWhat(sm)
	sub := fmt.Sprintf("exclusive time, idle included; shares of the mean step %s over %d steps; bars labelled", breakdown.FormatDuration(int64(sm.Mean)), sm.Steps)
	var cats []kernelclass.Category
	for _, c := range kernelclass.Order {
		if sm.Categories[c].Share > 0 {
			cats = append(cats, c)
		}
	}
	slices.SortStableFunc(cats, func(a, b kernelclass.Category) int {
		return cmp.Compare(sm.Categories[b].Share, sm.Categories[a].Share)
	})
	labels := make([]string, len(cats))
	data := make([]opts.BarData, len(cats))
	values := make([]barValue, len(cats))
	for i, c := range cats {
		labels[i] = c.String()
		values[i] = chartRound2(100 * sm.Categories[c].Share)
		data[i] = opts.BarData{Value: values[i], ItemStyle: &opts.ItemStyle{Color: categoryColors[c]}}
	}
	bar := charts.NewBar()
	b := chartBlock{ID: fmt.Sprintf("share-%d", d.Device), Title: title, Height: 80 + 34*max(len(cats), 4), Units: "pct"}
	bar.SetGlobalOptions(append(b.globalOpts(sub),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(opts.Grid{Top: "60", Left: "8", Right: "64", Bottom: "24", ContainLabel: opts.Bool(true)}),
		// A linear axis: a share is a length (2% drawn as a fiftieth of 100%), from 0.
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Min: 0, AxisLabel: &opts.AxisLabel{Formatter: "{value}%"}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Inverse: opts.Bool(true), AxisLabel: &opts.AxisLabel{Interval: "0"}}),
	)...)
	bar.SetXAxis(labels)
	bar.XYReversal()
	bar.AddSeries("share", data, charts.WithBarChartOpts(opts.BarChart{BarCategoryGap: "25%"}),
		charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "right", Formatter: "{c}%"}))
	b.Height = max(b.Height, 340)
	return newChart(b, bar)
}

// gapsChart: the idle-gap histogram per summarised step (left), and what the host was
// doing during the idle time (right).
func gapsChart(d *breakdown.DeviceReport) (chartBlock, error) {
	sm := &d.Summary
	g := &sm.Gaps
	n := float64(max(sm.Steps, 1))
	title := fmt.Sprintf("Idle gaps per %s: %.1f gaps, %s", phaseWhat(sm), sm.GapsPerStep, breakdown.FormatDuration(int64(float64(g.Total)/n)))
	sub := "left: gaps and idle time per step by gap size; right: what the host did meanwhile"
	counts := make([]opts.BarData, breakdown.NumGapSizes)
	times := make([]opts.BarData, breakdown.NumGapSizes)
	labels := make([]string, breakdown.NumGapSizes)
	for i := range breakdown.NumGapSizes {
		labels[i] = gapSizeLabels[i]
		counts[i].Value = chartRound2(float64(g.Sizes[i]) / n)
		times[i].Value = math.Round(float64(g.SizeNS[i])/n) / 1e3
	}
	// What the launching threads were doing, by API group (breakdown.APIGroupOrder).
	hostColors := [breakdown.NumAPIGroups]string{breakdown.APISynchronizing: "#e15759", breakdown.APICopying: "#f28e2b",
		breakdown.APIGraphLaunching: "#76b7b2", breakdown.APILaunching: "#4e79a7", breakdown.APIModuleLoading: "#b07aa1",
		breakdown.APIMemoryManagement: "#edc948", breakdown.APIOther: "#9c755f", breakdown.APINone: "#bab0ac"}
	hostLabels := make([]string, breakdown.NumAPIGroups)
	host := make([]opts.BarData, breakdown.NumAPIGroups)
	for i, a := range breakdown.APIGroupOrder {
		hostLabels[i] = breakdown.APIGroupNames[a]
		host[i] = opts.BarData{Value: chartRound2(100 * frac(int64(g.API[a]), int64(g.Total))), ItemStyle: &opts.ItemStyle{Color: hostColors[a]}}
	}
	bar := charts.NewBar()
	b := chartBlock{ID: fmt.Sprintf("gaps-%d", d.Device), Title: title, Height: 340, Units: "count,time,pct"}
	bar.SetGlobalOptions(append(b.globalOpts(sub),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "46", Left: "8", Data: []string{"gaps/step", "idle/step"}}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(
			opts.Grid{Top: "104", Left: "8", Right: "43%", Bottom: "36", ContainLabel: opts.Bool(true)},
			opts.Grid{Top: "104", Left: "64%", Right: "56", Bottom: "36", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "gap size", NameLocation: "middle", NameGap: 26,
			AxisLabel: &opts.AxisLabel{Interval: "0", FontSize: 10}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "gaps/step"}),
	)...)
	bar.ExtendXAxis(opts.XAxis{Type: "value", GridIndex: 1, Max: 100, SplitNumber: 2, Name: "launching threads meanwhile, % of idle time",
		NameLocation: "middle", NameGap: 26, AxisLabel: &opts.AxisLabel{Formatter: "{value}%"}})
	bar.ExtendYAxis(
		opts.YAxis{Type: "value", Name: "idle/step", SplitLine: &opts.SplitLine{Show: opts.Bool(false)}},
		opts.YAxis{Type: "category", GridIndex: 1, Data: hostLabels, Inverse: opts.Bool(true), AxisLabel: &opts.AxisLabel{Interval: "0"}})
	bar.SetXAxis(labels)
	bar.AddSeries("gaps/step", counts, charts.WithItemStyleOpts(opts.ItemStyle{Color: "#7f7f7f"}))
	bar.AddSeries("idle/step", times, charts.WithBarChartOpts(opts.BarChart{YAxisIndex: 1}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: categoryColors[kernelclass.Idle]}))
	bar.AddSeries("host during idle", host, charts.WithBarChartOpts(opts.BarChart{XAxisIndex: 1, YAxisIndex: 2, BarCategoryGap: "30%"}),
		charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "right", Formatter: "{c}%"}))
	return newChart(b, bar)
}

// heatFullSpread is the spread of a heat map row (largest minus smallest, over the largest)
// from which its colours span the whole scale.
const heatFullSpread = 0.10

// heatChart: percent of each step per category. The colour of a cell is where its value
// lies in its category's (row's) range, so that drift shows in small categories too, and a
// row that hardly changes is faint (heatFullSpread), a constant one lightest; the tooltip
// gives the percent of the step.
func heatChart(d *breakdown.DeviceReport, steps []breakdown.Step, prefillApart int) (chartBlock, error) {
	g := newStepGroups(len(steps))
	cats := presentCategories(steps)
	title := "Percent of each step by category: drift over the run"
	const colour = "colour: where a value lies in its row's range, lightest at the row's smallest (rows that vary by under 10% of their largest value fainter, a constant row lightest)"
	sub := g.note() + "; " + colour
	if g.bucketed() {
		sub = g.note() + "; median percent per bucket; " + colour
	}
	if prefillApart > 0 {
		sub += fmt.Sprintf("; prefill steps (%d) left out, as their mix is not the loop's", prefillApart)
	}
	ylabels := make([]string, len(cats))
	for i, c := range cats {
		ylabels[i] = c.String()
	}
	pct := func(c kernelclass.Category) func(*breakdown.Step) float64 {
		return func(s *breakdown.Step) float64 {
			if s.Wall() <= 0 {
				return 0
			}
			return 100 * float64(s.Exclusive[c]) / float64(s.Wall())
		}
	}
	values := make([][]float64, len(cats)) // [category][bucket]
	for j, c := range cats {
		values[j] = make([]float64, g.count())
		for b := range g.count() {
			if g.bucketed() {
				values[j][b], _, _ = g.bucketStat(steps, b, pct(c))
			} else {
				values[j][b] = pct(c)(&steps[b])
			}
			values[j][b] = chartRound2(values[j][b])
		}
	}
	var data []opts.HeatMapData
	for b := range g.count() {
		for j := range cats {
			v := values[j][b]
			if v == 0 {
				continue
			}
			// The row's range sets the colour: drift shows in small categories too, and a
			// row that does not change is not painted as if it were at its peak.
			// A row that varies by less than heatFullSpread of its largest value is drawn
			// fainter in proportion, so that rounding noise in a constant row (0.07% to
			// 0.08%) is not painted as drift.
			lo, hi := slices.Min(values[j]), slices.Max(values[j])
			rel := 0.0
			if hi > lo {
				rel = chartRound2((v - lo) / (hi - lo) * min(1, (hi-lo)/(heatFullSpread*hi)))
			}
			data = append(data, opts.HeatMapData{Value: [4]any{b, j, v, rel}})
		}
	}
	hm := charts.NewHeatMap()
	b := chartBlock{ID: fmt.Sprintf("heat-%d", d.Device), Title: title, Height: 120 + 26*len(cats), Wide: true, Units: "pct"}
	hm.SetGlobalOptions(append(b.globalOpts(sub),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithGridOpts(opts.Grid{Top: "60", Left: "8", Right: "96", Bottom: gridBottom(g.count()), ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Data: g.xLabels(steps, d.Summary.Outliers.Steps), Name: stepAxisName(g), NameLocation: "middle", NameGap: 28,
			SplitArea: &opts.SplitArea{Show: opts.Bool(false)}, AxisLabel: categoryLabels(g.count())}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: ylabels, Inverse: opts.Bool(true), AxisLabel: &opts.AxisLabel{Interval: "0"}}),
	)...)
	if dz := dataZooms(g.count()); dz != nil {
		hm.SetGlobalOptions(charts.WithDataZoomOpts(dz...))
	}
	hm.AddSeries("percent of step", data)
	if g.count() > 60 {
		b.Height += 32
	}
	// The visual map is set here: go-echarts has a string for VisualMap.Dimension, and
	// ECharts wants the index of the value that picks the colour (the relative one).
	return newChart(b, hm, func(option map[string]interface{}) {
		option["visualMap"] = []map[string]any{{"type": "continuous", "min": 0, "max": 1, "dimension": 3,
			"calculable": false, "orient": "vertical", "right": "16", "top": "64", "itemHeight": max(60, b.Height-150),
			"text":    []string{"row max", "row min"},
			"inRange": map[string]any{"color": []string{"#f7fbff", "#c6dbef", "#6baed6", "#2171b5", "#08306b"}}}}
	})
}

// breakable lets a step's cut_by ("read_back+input_copy") break after its underscores (a
// zero-width space) in the step table's prose column. Headers are never broken inside a
// name (the step table's category headers stand upright instead).
func breakable(s string) string { return strings.ReplaceAll(s, "_", "_\u200b") }
