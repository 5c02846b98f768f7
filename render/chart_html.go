package render

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/stepstat/stepstat/breakdown"
)

// chartBlock is one chart of the page: an element with a fixed id and the ECharts option
// of the chart as a JSON data block.
type chartBlock struct {
	ID     string // fixed element id: "steps-0", "share-0", "heat-0", "gaps-0", "ranks", "rankcat", "rankwait"
	Title  string // the chart's title, repeated as the element's label
	Height int    // pixels
	Wide   bool   // full width; otherwise half
	// Units names the unit of each value axis in order ("time": µs values formatted as
	// durations, "pct", "count"); the page script attaches formatters to match.
	Units string
	// Kind is "stack" for per-step stacked bars: the tooltip then also shows the step's total.
	Kind   string
	Option template.JS // JSON, safe inside <script type="application/json">
}

// echartsChart is what every go-echarts chart offers: Validate fills in the option, JSON
// returns it.
type echartsChart interface {
	Validate()
	JSON() map[string]interface{}
}

// newChart completes b with the option of a go-echarts chart. adjust functions may set
// what go-echarts cannot express (such as a visual map's data dimension) in the option
// before it is marshalled.
//
// We use go-echarts to build the option, not to render it. Its snippet and page templates
// would load ECharts from a CDN, write the option JSON into a <script> without HTML
// escaping (data holding "</script>" would end the element) and evaluate it as code, and
// remove every "__f__" (its marker for JavaScript functions) from the whole output, data
// included, which can unbalance the quotes of a string. Instead the option is marshalled
// here with scriptJSON and read by the page with JSON.parse: data is never code, and
// nothing looks for "__f__". Formatters (durations, percentages) are attached by the
// page's own script (see "bootstrap" in html.tmpl), so no option holds a function.
func newChart(b chartBlock, c echartsChart, adjust ...func(option map[string]interface{})) (chartBlock, error) {
	c.Validate()
	option := c.JSON()
	for _, f := range adjust {
		f(option)
	}
	js, err := scriptJSON(option)
	if err != nil {
		return chartBlock{}, fmt.Errorf("chart %s: %w", b.ID, err)
	}
	b.Option = js
	return b, nil
}

func chartUS(d time.Duration) float64 { return float64(d) / 1e3 }

func chartRound2(f float64) float64 { return math.Round(f*100) / 100 }

// globalOpts returns the go-echarts options every chart shares: no animation (the page is
// byte-stable), the block's title with subtitle, a save-as-PNG button, and the block's id.
func (b chartBlock) globalOpts(subtitle string) []charts.GlobalOpts {
	return []charts.GlobalOpts{
		charts.WithAnimation(false),
		charts.WithTitleOpts(opts.Title{Title: b.Title, Subtitle: subtitle, Left: "8",
			TitleStyle: &opts.TextStyle{FontSize: 14}}),
		charts.WithToolboxOpts(opts.Toolbox{Show: opts.Bool(true), Right: "16",
			Feature: &opts.ToolBoxFeature{SaveAsImage: &opts.ToolBoxFeatureSaveAsImage{Show: opts.Bool(true), Title: "save as PNG"}}}),
		charts.WithInitializationOpts(opts.Initialization{ChartID: b.ID}),
	}
}

// stepGroups splits n steps into buckets of k consecutive steps for the charts: k is 1 up
// to maxChartSteps steps, else chosen for about chartBuckets buckets.
type stepGroups struct {
	n, k int
}

func newStepGroups(n int) stepGroups {
	if n <= maxChartSteps {
		return stepGroups{n, 1}
	}
	return stepGroups{n, (n + chartBuckets - 1) / chartBuckets}
}

func (g stepGroups) count() int { return (g.n + g.k - 1) / g.k }

func (g stepGroups) bounds(b int) (int, int) { return b * g.k, min((b+1)*g.k, g.n) }

func (g stepGroups) bucketed() bool { return g.k > 1 }

// note says how the steps are shown, for chart subtitles.
func (g stepGroups) note() string {
	if !g.bucketed() {
		return fmt.Sprintf("%d step%s", g.n, plural(g.n))
	}
	last := g.n - (g.count()-1)*g.k
	s := fmt.Sprintf("%d steps in %d buckets of %d", g.n, g.count(), g.k)
	if last != g.k {
		s += fmt.Sprintf(" (the last of %d)", last)
	}
	return s
}

// xLabels returns the category-axis data: step indices (prefill steps in colour), or the
// index ranges of buckets.
func (g stepGroups) xLabels(steps []breakdown.Step, outliers []int) []any {
	out := make([]any, 0, g.count())
	for b := range g.count() {
		lo, hi := g.bounds(b)
		if !g.bucketed() {
			s := &steps[lo]
			label := strconv.Itoa(s.Index)
			if slices.Contains(outliers, s.Index) {
				out = append(out, map[string]any{"value": label, "textStyle": map[string]any{"color": outlierColor, "fontWeight": "bold"}})
				continue
			}
			if s.Phase == breakdown.Prefill {
				out = append(out, map[string]any{"value": label, "textStyle": map[string]any{"color": prefillColor, "fontWeight": "bold"}})
				continue
			}
			out = append(out, label)
			continue
		}
		out = append(out, fmt.Sprintf("%d-%d", steps[lo].Index, steps[hi-1].Index))
	}
	return out
}

// median returns the median of xs (interpolated, as breakdown's quantiles are); it sorts xs.
func bucketMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	pos := 0.5 * float64(len(xs)-1)
	lo := int(pos)
	if lo+1 >= len(xs) {
		return xs[lo]
	}
	return xs[lo] + (pos-float64(lo))*(xs[lo+1]-xs[lo])
}

// bucketStat applies f to each step of bucket b and returns the median, min and max.
func (g stepGroups) bucketStat(steps []breakdown.Step, b int, f func(*breakdown.Step) float64) (med, lo, hi float64) {
	first, last := g.bounds(b)
	xs := make([]float64, 0, last-first)
	for i := first; i < last; i++ {
		xs = append(xs, f(&steps[i]))
	}
	med = bucketMedian(xs) // sorts xs
	return med, xs[0], xs[len(xs)-1]
}

// maxAllLabels is the most category-axis values whose labels are all shown (interval 0);
// beyond it the axis has a zoom and ECharts thins the labels of the zoomed-out view.
const maxAllLabels = 60

// categoryLabels shows every label of a category axis of n values, turned when they would
// not fit side by side on a wide chart at 1400 px.
func categoryLabels(n int) *opts.AxisLabel {
	if n > maxAllLabels {
		return nil
	}
	l := &opts.AxisLabel{Interval: "0"}
	if n > 30 {
		l.Rotate = 90
	}
	return l
}

// dataZooms returns a slider and mouse-wheel zoom for charts with many x values.
func dataZooms(n int) []opts.DataZoom {
	if n <= 60 {
		return nil
	}
	return []opts.DataZoom{{Type: "slider", Start: 0, End: 100, XAxisIndex: 0}, {Type: "inside", XAxisIndex: 0}}
}

func gridBottom(n int) string {
	if n > 60 {
		return "64"
	}
	return "32"
}
