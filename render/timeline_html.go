package render

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// This file draws one step on a time axis, as Nsight Systems' timeline does: the step of
// each device (the same aligned step on every rank), its work as bars on its streams
// coloured by category, the idle gaps marked across the device's streams, and a host lane per
// thread with the CUDA calls in flight. It is an ECharts custom series: each data item is
// [lane, start, end, name index] (µs from the earliest step start; lane indexes the y
// axis), and the page's script ("timeline" in html.tmpl's bootstrap) draws the rectangles and
// writes the tooltips, escaping the names. Names are kept once, in the option's "names".

// Host call groups of the host lane, with their colours (darker than the categories'
// colours, on rows of their own).
var hostGroups = []struct {
	name  string
	color string
	kinds []nsys.APIKind
}{
	{"launch", "#37474f", []nsys.APIKind{nsys.APILaunch}},
	{"graph launch", "#00897b", []nsys.APIKind{nsys.APIGraphLaunch}},
	{"sync", "#c2185b", []nsys.APIKind{nsys.APISync}},
	{"copy", "#ef6c00", []nsys.APIKind{nsys.APIMemcpy, nsys.APIMemset}},
}

// idleMark is the colour of the idle gaps drawn across a device's streams.
const idleMark = "rgba(120,120,120,0.22)"

// timelineCharts returns a chart for each kept step of the report.
// They share one time axis, the longest step's: on axes of their own a slower step (120
// ms on a 120 ms axis) looked no longer than the median one (100 ms on a 100 ms axis).
func timelineCharts(r *breakdown.Report) ([]chartBlock, error) {
	var out []chartBlock
	span := 0.0
	for i := range r.Timelines {
		span = max(span, timelineSpan(&r.Timelines[i]))
	}
	for i := range r.Timelines {
		c, err := timelineChart(r, &r.Timelines[i], span)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// timelineLane is one row of the chart.
type timelineLane struct {
	label string
	dev   int // index into the StepTimeline's lanes
}

// timelineData is the chart's series as the lanes of a step are added: the rows, the
// activities by category, the host's calls by group, the idle gaps, and the names the
// items refer to by index.
type timelineData struct {
	t0       nsys.Time // the earliest lane's start: the axis' zero
	lanes    []timelineLane
	names    []string
	nameIdx  map[string]int
	catData  [kernelclass.NumCategories][]opts.CustomData
	hostData [][]opts.CustomData // by hostGroups
	gapData  []opts.CustomData
	what     []string // each lane's words for the subtitle
}

func (d *timelineData) us(t nsys.Time) float64 { return chartUS(t.Sub(d.t0)) }

// name returns the index of s in names, adding it.
func (d *timelineData) name(s string) int {
	i, ok := d.nameIdx[s]
	if !ok {
		i = len(d.names)
		d.names = append(d.names, s)
		d.nameIdx[s] = i
	}
	return i
}

// addLane adds lane li of the step: its host rows, then its stream rows.
func (d *timelineData) addLane(li int, l *breakdown.DeviceTimeline) {
	dev := fmt.Sprintf("dev %d", l.Device)
	w := fmt.Sprintf("device %d step %d (%s)", l.Device, l.Step, breakdown.FormatDuration(int64(l.End.Sub(l.Start))))
	if l.Truncated {
		w += fmt.Sprintf(", its first %d rows", breakdown.MaxTimelineRows)
	}
	foldedThreads := d.addHost(li, l, dev)
	foldedStreams := d.addStreams(li, l, dev)
	if foldedStreams > 0 || foldedThreads > 0 {
		w += fmt.Sprintf(", %s folded into one row (the busiest %d streams and %d host threads drawn)",
			joinWords(nonEmpty(countOf(foldedStreams, "stream"), countOf(foldedThreads, "host thread"))), maxStreamLanes, maxHostLanes)
	}
	d.what = append(d.what, w)
}

// clip returns the span [s, e) cut to the lane's step, on the axis.
func (d *timelineData) clip(l *breakdown.DeviceTimeline, s, e nsys.Time) (float64, float64) {
	return d.us(max(s, l.Start)), d.us(min(e, l.End))
}

// addHost adds the host rows of lane li: one per thread with calls the chart draws (a
// thread whose calls are all of other kinds would be an empty row), the busiest
// maxHostLanes in thread order, the others folded into one row; it returns how many
// threads it folded.
func (d *timelineData) addHost(li int, l *breakdown.DeviceTimeline, dev string) int {
	threadBusy := map[int64]time.Duration{}
	for _, c := range l.Calls {
		if hostGroup(c.Kind) >= 0 {
			threadBusy[c.Thread] += min(c.End, l.End).Sub(max(c.Start, l.Start))
		}
	}
	threads, threadRow, folded := keepBusiest(threadBusy, maxHostLanes)
	for _, th := range threads {
		d.lanes = append(d.lanes, timelineLane{fmt.Sprintf("%s host %d", dev, th&0xFFFFFF), li})
	}
	if folded > 0 {
		d.lanes = append(d.lanes, timelineLane{fmt.Sprintf("%s host: %d other threads", dev, folded), li})
	}
	firstHost := len(d.lanes) - len(threads) - min(folded, 1)
	// The calls thread by thread, in thread order (the order of the rows).
	byThread := slices.Clone(l.Calls)
	slices.SortStableFunc(byThread, func(a, b breakdown.TimelineCall) int { return cmp.Compare(a.Thread, b.Thread) })
	for _, c := range byThread {
		if g := hostGroup(c.Kind); g >= 0 {
			s, e := d.clip(l, c.Start, c.End)
			d.hostData[g] = append(d.hostData[g], opts.CustomData{Value: []any{firstHost + threadRow[c.Thread], s, e, d.name(c.Name)}})
		}
	}
	return folded
}

// addStreams adds the stream rows of lane li, by stream id: the busiest maxStreamLanes,
// the others folded into one row; and the device's idle gaps across them. It returns how
// many streams it folded.
func (d *timelineData) addStreams(li int, l *breakdown.DeviceTimeline, dev string) int {
	streamBusy := map[int64]time.Duration{}
	for _, a := range l.Activities {
		streamBusy[int64(a.Stream)] += min(a.End, l.End).Sub(max(a.Start, l.Start))
	}
	streams, streamRow, folded := keepBusiest(streamBusy, maxStreamLanes)
	first := len(d.lanes)
	for _, sid := range streams {
		d.lanes = append(d.lanes, timelineLane{fmt.Sprintf("%s stream %d", dev, sid), li})
	}
	if folded > 0 {
		d.lanes = append(d.lanes, timelineLane{fmt.Sprintf("%s: %d other streams", dev, folded), li})
	}
	for _, a := range l.Activities {
		lane := first + streamRow[int64(a.Stream)]
		s, e := d.clip(l, a.Start, a.End)
		d.catData[a.Category] = append(d.catData[a.Category], opts.CustomData{Value: []any{lane, s, e, d.name(a.Name)}})
	}
	if n := len(d.lanes) - first; n > 0 {
		for _, g := range l.Gaps {
			s, e := d.clip(l, g.Start, g.End)
			// [first lane, start, end, last lane]: drawn across the device's streams.
			d.gapData = append(d.gapData, opts.CustomData{Value: []any{first, s, e, first + n - 1}})
		}
	}
	return folded
}

// timelineSpan is a step timeline's extent on its axis, in µs: from its earliest lane's
// start to its latest lane's end.
func timelineSpan(st *breakdown.StepTimeline) float64 {
	if len(st.Lanes) == 0 {
		return 0
	}
	s, e := st.Lanes[0].Start, st.Lanes[0].End
	for _, l := range st.Lanes {
		s, e = min(s, l.Start), max(e, l.End)
	}
	return chartUS(e.Sub(s))
}

// timelineChart draws one step timeline on an axis from 0 to span µs (0: the step's own).
func timelineChart(r *breakdown.Report, st *breakdown.StepTimeline, span float64) (chartBlock, error) {
	d := &timelineData{t0: st.Lanes[0].Start, names: []string{}, nameIdx: map[string]int{}, hostData: make([][]opts.CustomData, len(hostGroups))}
	for _, l := range st.Lanes {
		d.t0 = min(d.t0, l.Start)
	}
	drawn := st.Lanes
	if len(drawn) > maxTimelineDevices {
		drawn = drawn[:maxTimelineDevices]
	}
	for li := range drawn {
		d.addLane(li, &st.Lanes[li])
	}
	if len(st.Lanes) > len(drawn) {
		d.what = append(d.what, fmt.Sprintf("the first %d of %d devices drawn", len(drawn), len(st.Lanes)))
	}
	lanes, names, catData, hostData, gapData, what := d.lanes, d.names, &d.catData, d.hostData, d.gapData, d.what
	labels := make([]string, len(lanes))
	for i, l := range lanes {
		labels[i] = l.label
	}

	id := "timeline-" + st.Which
	title := fmt.Sprintf("The %s %s on a time axis", st.Which, phaseWhat(&r.Devices[0].Summary))
	if len(st.Lanes) > 1 {
		title += fmt.Sprintf(", %d ranks on one clock", len(st.Lanes))
	}
	sub := joinWords(what) + "; bars: GPU work on its stream by category; grey: device idle; host rows: CUDA calls in flight"
	var series []string // the legend's items, in the order of the series below
	if len(gapData) > 0 {
		series = append(series, "idle")
	}
	for _, cat := range kernelclass.Order {
		if len(catData[cat]) > 0 {
			series = append(series, cat.String())
		}
	}
	for g := range hostGroups {
		if len(hostData[g]) > 0 {
			series = append(series, "host: "+hostGroups[g].name)
		}
	}
	legend, top := wrapLegend(series, 46)
	xAxis := opts.XAxis{Type: "value", Name: "time from the step's start", NameLocation: "middle", NameGap: 26, Min: 0}
	if span > 0 {
		xAxis.Max = span
	}
	b := chartBlock{ID: id, Title: title, Height: max(240, top+66+28*len(lanes)), Wide: true, Units: "time", Kind: "timeline"}
	c := charts.NewCustom()
	c.SetGlobalOptions(append(b.globalOpts(sub),
		charts.WithLegendOpts(legend),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithGridOpts(opts.Grid{Top: strconv.Itoa(top), Left: "8", Right: "32", Bottom: "64", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(xAxis),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: labels, Inverse: opts.Bool(true), AxisLabel: &opts.AxisLabel{Interval: "0", FontSize: 11}}),
		charts.WithDataZoomOpts(opts.DataZoom{Type: "slider", Start: 0, End: 100, XAxisIndex: 0, FilterMode: "weakFilter"},
			opts.DataZoom{Type: "inside", XAxisIndex: 0, FilterMode: "weakFilter"}),
	)...)
	enc := charts.WithEncodeOpts(opts.Encode{X: []int{1, 2}, Y: 0})
	if len(gapData) > 0 {
		c.AddSeries("idle", gapData, enc, charts.WithItemStyleOpts(opts.ItemStyle{Color: idleMark}))
	}
	for _, cat := range kernelclass.Order {
		if len(catData[cat]) == 0 {
			continue
		}
		c.AddSeries(cat.String(), catData[cat], enc, charts.WithItemStyleOpts(opts.ItemStyle{Color: categoryColors[cat]}))
	}
	for g := range hostGroups {
		if len(hostData[g]) == 0 {
			continue
		}
		c.AddSeries("host: "+hostGroups[g].name, hostData[g], enc, charts.WithItemStyleOpts(opts.ItemStyle{Color: hostGroups[g].color}))
	}
	return newChart(b, c, func(option map[string]interface{}) { option["names"] = names })
}

// Timeline lanes drawn per device, and devices drawn: 30,000 streams made a chart of
// 40,000 rows, 1.12 M px tall (browsers stop drawing near 32 k). The busiest lanes of the
// step are drawn, the rest folded into one row each for streams and host threads (and
// said in the chart's subtitle).
const (
	maxStreamLanes     = 32
	maxHostLanes       = 8
	maxTimelineDevices = 64
)

// keepBusiest returns the ids of busy kept, at most max of them, the busiest (ties: the
// lower id), in id order; the row of every id (kept ones by their place, the others the
// folded row after them); and how many were folded.
func keepBusiest(busy map[int64]time.Duration, max int) (kept []int64, row map[int64]int, folded int) {
	ids := make([]int64, 0, len(busy))
	for id := range busy {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int64) int {
		if c := cmp.Compare(busy[b], busy[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	kept = ids[:min(max, len(ids))]
	slices.Sort(kept)
	row = make(map[int64]int, len(ids))
	for i, id := range kept {
		row[id] = i
	}
	for _, id := range ids[len(kept):] {
		row[id] = len(kept)
	}
	return kept, row, len(ids) - len(kept)
}

// countOf is "n words" ("1 word"), or "" for none.
func countOf(n int, word string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d %s%s", n, word, plural(n))
}

// nonEmpty returns the strings of xs that are not empty.
func nonEmpty(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// hostGroup returns the index in hostGroups of a call's kind, -1 for kinds not drawn.
func hostGroup(k nsys.APIKind) int {
	for g := range hostGroups {
		if slices.Contains(hostGroups[g].kinds, k) {
			return g
		}
	}
	return -1
}

// joinWords joins a list as "a, b and c".
func joinWords(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return fmt.Sprintf("%s and %s", joinComma(xs[:len(xs)-1]), xs[len(xs)-1])
}

func joinComma(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
