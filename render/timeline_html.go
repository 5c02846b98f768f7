package render

import (
	"fmt"
	"slices"

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
func timelineCharts(r *breakdown.Report) ([]chartBlock, error) {
	var out []chartBlock
	for i := range r.Timelines {
		c, err := timelineChart(r, &r.Timelines[i])
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
	d.what = append(d.what, w)
	d.addHost(li, l, dev)
	d.addStreams(li, l, dev)
}

// clip returns the span [s, e) cut to the lane's step, on the axis.
func (d *timelineData) clip(l *breakdown.DeviceTimeline, s, e nsys.Time) (float64, float64) {
	return d.us(max(s, l.Start)), d.us(min(e, l.End))
}

// addHost adds the host rows of lane li: one per thread with calls, in thread order.
func (d *timelineData) addHost(li int, l *breakdown.DeviceTimeline, dev string) {
	var threads []int64
	for _, c := range l.Calls {
		if !slices.Contains(threads, c.Thread) {
			threads = append(threads, c.Thread)
		}
	}
	slices.Sort(threads)
	for _, th := range threads {
		lane := len(d.lanes)
		d.lanes = append(d.lanes, timelineLane{fmt.Sprintf("%s host %d", dev, th&0xFFFFFF), li})
		for _, c := range l.Calls {
			if c.Thread != th {
				continue
			}
			for g := range hostGroups {
				if slices.Contains(hostGroups[g].kinds, c.Kind) {
					s, e := d.clip(l, c.Start, c.End)
					d.hostData[g] = append(d.hostData[g], opts.CustomData{Value: []any{lane, s, e, d.name(c.Name)}})
				}
			}
		}
	}
}

// addStreams adds the stream rows of lane li, by stream id, and the device's idle gaps
// across them.
func (d *timelineData) addStreams(li int, l *breakdown.DeviceTimeline, dev string) {
	var streams []nsys.StreamID
	for _, a := range l.Activities {
		if !slices.Contains(streams, a.Stream) {
			streams = append(streams, a.Stream)
		}
	}
	slices.Sort(streams)
	first := len(d.lanes)
	for _, sid := range streams {
		d.lanes = append(d.lanes, timelineLane{fmt.Sprintf("%s stream %d", dev, sid), li})
	}
	for _, a := range l.Activities {
		lane := first + slices.Index(streams, a.Stream)
		s, e := d.clip(l, a.Start, a.End)
		d.catData[a.Category] = append(d.catData[a.Category], opts.CustomData{Value: []any{lane, s, e, d.name(a.Name)}})
	}
	if len(streams) > 0 {
		for _, g := range l.Gaps {
			s, e := d.clip(l, g.Start, g.End)
			// [first lane, start, end, last lane]: drawn across the device's streams.
			d.gapData = append(d.gapData, opts.CustomData{Value: []any{first, s, e, first + len(streams) - 1}})
		}
	}
}

func timelineChart(r *breakdown.Report, st *breakdown.StepTimeline) (chartBlock, error) {
	d := &timelineData{t0: st.Lanes[0].Start, names: []string{}, nameIdx: map[string]int{}, hostData: make([][]opts.CustomData, len(hostGroups))}
	for _, l := range st.Lanes {
		d.t0 = min(d.t0, l.Start)
	}
	for li := range st.Lanes {
		d.addLane(li, &st.Lanes[li])
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
	b := chartBlock{ID: id, Title: title, Height: max(240, 150+28*len(lanes)), Wide: true, Units: "time", Kind: "timeline"}
	c := charts.NewCustom()
	c.SetGlobalOptions(append(b.globalOpts(sub),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "46", Left: "8", Right: "120"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithGridOpts(opts.Grid{Top: "84", Left: "8", Right: "32", Bottom: "64", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "time from the step's start", NameLocation: "middle", NameGap: 26, Min: 0}),
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
