package render

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds the rank section of the HTML report: the per-device comparison table and
// the rank charts of a multi-GPU trace. page_html.go holds the page shell.

// rankTable compares the devices: the step's median, p10, p90 and mean, and the categories'
// means per step, which add up to the mean. One column per device and a row per statistic,
// so that many categories make the table longer, not wider.
func rankTable(ds []breakdown.DeviceReport) *htmlTable {
	cats := rankCategories(ds)
	t := &htmlTable{ID: "ranktable", Caption: "Per device: " + phaseWhat(&ds[0].Summary) +
		" time; categories as mean per step (they add up to the mean row)",
		Head: []htmlCell{cellText("")}}
	for i := range ds {
		t.Head = append(t.Head, cellNum(fmt.Sprintf("device %d", ds[i].Device)))
	}
	row := func(label htmlCell, class string, f func(d *breakdown.DeviceReport) htmlCell) {
		r := htmlRow{Class: class, Cells: []htmlCell{label}}
		for i := range ds {
			r.Cells = append(r.Cells, f(&ds[i]))
		}
		t.Rows = append(t.Rows, r)
	}
	dur := func(f func(sm *breakdown.Summary) time.Duration) func(d *breakdown.DeviceReport) htmlCell {
		return func(d *breakdown.DeviceReport) htmlCell {
			return cellNum(breakdown.FormatDuration(int64(f(&d.Summary))))
		}
	}
	row(cellText("GPU"), "", func(d *breakdown.DeviceReport) htmlCell { return htmlCell{Text: gpuName(d.GPU), Class: "num"} })
	row(cellText("steps"), "", func(d *breakdown.DeviceReport) htmlCell { return cellNum(strconv.Itoa(d.Summary.Steps)) })
	row(cellText("median"), "", dur(func(sm *breakdown.Summary) time.Duration { return sm.Median }))
	row(cellText("p10"), "", dur(func(sm *breakdown.Summary) time.Duration { return sm.P10 }))
	row(cellText("p90"), "", dur(func(sm *breakdown.Summary) time.Duration { return sm.P90 }))
	for _, c := range cats {
		row(catCell(c), "", dur(func(sm *breakdown.Summary) time.Duration { return sm.Categories[c].Mean }))
	}
	row(cellText("mean"), "total", dur(func(sm *breakdown.Summary) time.Duration { return sm.Mean }))
	return t
}

// rankCategories returns the categories with time on any device's summary; idle always.
func rankCategories(ds []breakdown.DeviceReport) []kernelclass.Category {
	var out []kernelclass.Category
	for _, c := range kernelclass.Order {
		keep := c == kernelclass.Idle
		for i := range ds {
			cs := ds[i].Summary.Categories[c]
			keep = keep || cs.Share != 0 || cs.KernelsPerStep != 0
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

// rankCharts compare the devices: median step time, and the category means.
func rankCharts(ds []breakdown.DeviceReport) ([]chartBlock, error) {
	what := phaseWhat(&ds[0].Summary)
	labels := make([]string, len(ds))
	for i := range ds {
		labels[i] = fmt.Sprintf("device %d", ds[i].Device)
	}
	title := "Per device: " + what + " time"
	bar := charts.NewBar()
	barBlock := chartBlock{ID: "ranks", Title: title, Height: 340, Units: "time"}
	bar.SetGlobalOptions(rankBarOpts(barBlock, "median, p10 and p90 over each device's steps")...)
	bar.SetXAxis(labels)
	for _, q := range []struct {
		name  string
		color string
		f     func(*breakdown.Summary) time.Duration
	}{
		{"p10", "#a6bddb", func(s *breakdown.Summary) time.Duration { return s.P10 }},
		{"median", "#3182bd", func(s *breakdown.Summary) time.Duration { return s.Median }},
		{"p90", "#08519c", func(s *breakdown.Summary) time.Duration { return s.P90 }},
	} {
		data := make([]opts.BarData, len(ds))
		for i := range ds {
			data[i].Value = chartUS(q.f(&ds[i].Summary))
		}
		bar.AddSeries(q.name, data, charts.WithItemStyleOpts(opts.ItemStyle{Color: q.color}))
	}
	ranks, err := newChart(barBlock, bar)
	if err != nil {
		return nil, err
	}

	cats := rankCategories(ds)
	clabels := make([]string, len(cats))
	for i, c := range cats {
		clabels[i] = c.String()
	}
	title2 := "Per device: mean time per " + what + " by category"
	cb := charts.NewBar()
	cbBlock := chartBlock{ID: "rankcat", Title: title2, Height: 340, Units: "time"}
	catLabels := &opts.AxisLabel{Interval: "0"}
	if len(cats) > 6 {
		catLabels.Rotate = 30
	}
	legend, top := wrapLegendIn(labels, 46, halfLegendWidth)
	cbBlock.Height += top - 84
	cb.SetGlobalOptions(append(cbBlock.globalOpts("one bar per device (first solid, others lighter); log scale, bars from the axis origin, labelled where the labels do not overlap (the tooltip has every value)"),
		charts.WithLegendOpts(legend),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(opts.Grid{Top: strconv.Itoa(top), Left: "8", Right: "24", Bottom: "16", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: catLabels}),
		// A log axis: idle or a collective wait of milliseconds beside kernels of
		// microseconds would leave only the largest bars visible on a linear one.
		charts.WithYAxisOpts(opts.YAxis{Type: "log"}),
	)...)
	cb.SetXAxis(clabels)
	// Each bar in its category's colour (as in every chart of the page), the devices told
	// apart by opacity: the first solid, the others lighter; the legend's greys say which.
	var values []barValue
	for i := range ds {
		alpha := float32(math.Max(0.3, 1-0.45*float64(i)))
		data := make([]opts.BarData, len(cats))
		for j, c := range cats {
			data[j].Value = logValue(chartUS(ds[i].Summary.Categories[c].Mean))
			data[j].ItemStyle = &opts.ItemStyle{Color: categoryColors[c], Opacity: opts.Float(alpha)}
			values = append(values, data[j].Value)
		}
		grey := fmt.Sprintf("rgba(60,60,60,%.2f)", alpha)
		// On a log axis lengths are not proportional: each bar says its value (formatted
		// by the page as a time, like the axis).
		cb.AddSeries(labels[i], data, charts.WithItemStyleOpts(opts.ItemStyle{Color: grey}),
			charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "top", FontSize: 10}))
	}
	rankcat, err := newChart(cbBlock, cb, logAxisFrom("yAxis", logFloor(barValues(values))), hideOverlappingLabels)
	if err != nil {
		return nil, err
	}
	return []chartBlock{ranks, rankcat}, nil
}

// rankLines says how the ranks were compared: alignment, matched calls, spread, straggler.
func rankLines(rr *breakdown.RankReport) []string {
	n := len(rr.Steps)
	lines := []string{fmt.Sprintf("%d aligned step%s (by %s), %d collective call%s matched on every rank, %d kernel%s unmatched.",
		n, plural(n), rr.AlignedBy, len(rr.Calls), plural(len(rr.Calls)), rr.Unmatched, plural(rr.Unmatched))}
	if n > 0 {
		lines = append(lines, fmt.Sprintf("Step spread across ranks: median %s, p90 %s.", breakdown.FormatDuration(int64(rr.SpreadMedian)), breakdown.FormatDuration(int64(rr.SpreadP90))))
	}
	if s := stragglerLine(rr); s != "" {
		lines = append(lines, s)
	}
	return lines
}

// rankWaitTable is the text report's per-rank table: collective time split into waiting
// for the last rank and transfer.
func rankWaitTable(rr *breakdown.RankReport) *htmlTable {
	n := len(rr.Steps)
	t := &htmlTable{Caption: "Collectives per rank: waiting for the last rank vs transfer (means per aligned step: allreduce + collective = wait + transfer; beside the median step)",
		Head: []htmlCell{cellText("rank"), cellNum("median step"), cellNum("allreduce/step"), cellNum("collective/step"),
			cellNum("wait/step"), cellNum("transfer/step"), cellNum("wait share"), cellNum("times last")}}
	for i := range rr.Devices {
		d := &rr.Devices[i]
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellText(fmt.Sprint(d.Device)), cellNum(breakdown.FormatDuration(int64(d.MedianStep))),
			cellNum(perStep(d.AllReduce.Time, n)), cellNum(perStep(d.Collective.Time, n)), cellNum(perStep(d.Wait, n)),
			cellNum(perStep(d.Transfer, n)), cellNum(breakdown.FormatPercent(frac(int64(d.Wait), int64(d.Wait+d.Transfer)))),
			cellNum(fmt.Sprintf("%d (%s)", d.LastArrivals, breakdown.FormatPercent(frac(int64(d.LastArrivals), int64(len(rr.Calls))))))}})
	}
	return t
}

// rankWaitChart stacks each rank's collective time per aligned step: waiting for the last
// rank, then transfer.
func rankWaitChart(rr *breakdown.RankReport) (chartBlock, error) {
	n := max(len(rr.Steps), 1)
	labels := make([]string, len(rr.Devices))
	wait := make([]opts.BarData, len(rr.Devices))
	xfer := make([]opts.BarData, len(rr.Devices))
	for i := range rr.Devices {
		d := &rr.Devices[i]
		labels[i] = fmt.Sprintf("device %d", d.Device)
		wait[i].Value = chartUS(d.Wait / time.Duration(n))
		xfer[i].Value = chartUS(d.Transfer / time.Duration(n))
	}
	title := "Per device: collective time per step, waiting vs transfer"
	bar := charts.NewBar()
	barBlock := chartBlock{ID: "rankwait", Title: title, Height: 340, Units: "time"}
	bar.SetGlobalOptions(rankBarOpts(barBlock, "wait: from the rank's own start to the last rank's start; transfer: the rest")...)
	bar.SetXAxis(labels)
	bar.AddSeries("wait", wait, charts.WithBarChartOpts(opts.BarChart{Stack: "comm"}), charts.WithItemStyleOpts(opts.ItemStyle{Color: "#d4572a"}))
	bar.AddSeries("transfer", xfer, charts.WithBarChartOpts(opts.BarChart{Stack: "comm"}), charts.WithItemStyleOpts(opts.ItemStyle{Color: "#3182bd"}))
	return newChart(barBlock, bar)
}

// rankBarOpts are the options of the per-device bar charts: one category per device, a
// legend of the series, a tooltip per device.
func rankBarOpts(b chartBlock, subtitle string) []charts.GlobalOpts {
	return append(b.globalOpts(subtitle),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "46", Left: "8"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(opts.Grid{Top: "84", Left: "8", Right: "24", Bottom: "16", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0"}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value"}),
	)
}

// logValue is v for a log axis: "-" (no bar) for zero, which a log axis cannot place.
func logValue(v float64) any {
	if v <= 0 {
		return "-"
	}
	return v
}

// hideOverlappingLabels is a newChart adjustment: value labels of neighbouring bars that
// would overlap (two devices of equal time: "188 µs188 µs") are not drawn, those of the
// earlier series kept (ECharts' labelLayout.hideOverlap); the tooltip has every value.
func hideOverlappingLabels(option map[string]interface{}) {
	raw, err := json.Marshal(option["series"])
	if err != nil {
		return
	}
	var series []map[string]interface{}
	if json.Unmarshal(raw, &series) != nil {
		return
	}
	for _, s := range series {
		s["labelLayout"] = map[string]interface{}{"hideOverlap": true}
	}
	option["series"] = series
}
