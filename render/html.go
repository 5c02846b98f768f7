package render

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/stepstat/stepstat/breakdown"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// EChartsVersion is the version of the ECharts source embedded in the binary
// (render/assets/echarts.min.js, from the npm package echarts; Apache-2.0, see
// render/assets/LICENSE and NOTICE).
const EChartsVersion = "5.6.0"

//go:embed assets/echarts.min.js
var echartsMinJS string

//go:embed html.tmpl
var htmlTemplateText string

// Layout limits of the HTML report.
const (
	defaultHTMLTop = 20   // kernel rows when HTMLOptions.Top is 0
	maxChartSteps  = 2000 // above this many steps, charts show buckets of consecutive steps
	chartBuckets   = 1000 // about this many buckets when they do
	maxTableSteps  = 500  // above this many steps, the step table shows only its two ends
	tableEdgeSteps = 100  // rows shown at each end then
)

// HTMLOptions control the HTML report.
type HTMLOptions struct {
	// EChartsJS is the ECharts source, inlined once into the page. DefaultHTMLOptions sets
	// the embedded ECharts; tests pass a stub such as "/*echarts*/". It must not contain
	// "</script" or "<!--". When it is empty the page still holds every table, and the chart
	// areas say that the charts need the script.
	EChartsJS string
	// Top is the number of rows of the top-kernels table: 0 means 20, a negative number none.
	Top int
}

// DefaultHTMLOptions returns the options with the embedded ECharts source.
func DefaultHTMLOptions() HTMLOptions { return HTMLOptions{EChartsJS: echartsMinJS} }

// The page template. html.tmpl defines a page shell ("page": head, inlined ECharts, header
// facts, warnings, the "content" block, the chart bootstrap script) and partials shared by
// every page ("table", "chart", "facts", "warnings"), plus the content of each kind of page
// ("report"). basePage is never executed, so that each kind of page can Clone it and wire
// its own content into "content"; a diff page would do the same with a "diff" template.
var (
	basePage   = template.Must(template.New("html.tmpl").Parse(htmlTemplateText))
	reportPage = pageWith("report")
)

// pageWith returns a copy of the page shell whose "content" block runs template name.
func pageWith(name string) *template.Template {
	t := template.Must(basePage.Clone())
	return template.Must(t.Parse(`{{define "content"}}{{template "` + name + `" .}}{{end}}`))
}

// htmlPage is the data of the page shell: what every stepstat page has.
type htmlPage struct {
	Title     string
	Heading   string
	Generator string
	EChartsJS template.JS
	Facts     []htmlFact
	FactTable *htmlTable // e.g. one row per device: GPU, step method, steps found
	Warnings  []string
	Content   any // the data of the "content" block
}

// htmlFact is one labelled line of the page header.
type htmlFact struct{ Label, Value string }

// htmlTable is a plain HTML table: the same numbers as the charts, readable without
// JavaScript.
type htmlTable struct {
	ID      string // element id, optional
	Caption string
	Head    []htmlCell
	Rows    []htmlRow
	Note    string // a line under the table
}

// htmlRow is a table row. A row with a Span holds one cell spanning Span columns (a note).
type htmlRow struct {
	Class string
	Span  int
	Cells []htmlCell
}

// htmlCell is a table cell; Class "num" right-aligns numbers, "name" marks free text.
type htmlCell struct {
	Text  string
	Class string
}

func cellNum(s string) htmlCell  { return htmlCell{Text: s, Class: "num"} }
func cellText(s string) htmlCell { return htmlCell{Text: s} }
func cellName(s string) htmlCell { return htmlCell{Text: s, Class: "name"} }

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

// scriptJSON marshals v as JSON that is safe as the text of a <script> element: '<', '>'
// and '&' are written as \u003c, \u003e and \u0026, and U+2028 and U+2029 as \u2028 and
// \u2029, so no text in the data can close the element, open an HTML comment or end a
// JavaScript line. encoding/json already does this for its own output; the pass below
// repeats it for the output of MarshalJSON methods that turn the escaping off (some
// go-echarts types do). The bytes '<', '>' and '&' can only occur inside JSON strings, where
// the \u form means the same character.
func scriptJSON(v any) (template.JS, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for _, r := range string(b) {
		switch r {
		case '<', '>', '&', '\u2028', '\u2029':
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	return template.JS(sb.String()), nil
}

// checkScriptText reports whether s can be the text of a <script> element as is.
func checkScriptText(s string) error {
	l := strings.ToLower(s)
	for _, bad := range []string{"</script", "<!--"} {
		if strings.Contains(l, bad) {
			return fmt.Errorf("HTMLOptions.EChartsJS contains %q, which would break the page's script element", bad)
		}
	}
	return nil
}

// HTML writes the report as one self-contained HTML file: ECharts inlined once, the charts
// of each device (per-step exclusive time by category, the share of each category, a step
// × category heatmap, the idle-gap histogram), a per-device comparison when there are
// several devices, and the same numbers as plain tables. It loads nothing from the network,
// and the same report and options give the same bytes.
func HTML(w io.Writer, r *breakdown.Report, opt HTMLOptions) error {
	if err := checkScriptText(opt.EChartsJS); err != nil {
		return err
	}
	content, err := newHTMLReport(r, opt)
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	page := htmlPage{
		Title:     "stepstat: " + filepath.Base(r.Path),
		Heading:   "stepstat report",
		Generator: "stepstat",
		EChartsJS: template.JS(opt.EChartsJS),
		Facts:     reportFacts(r),
		FactTable: deviceOverview(r),
		Content:   content,
	}
	for _, wn := range r.Warnings {
		page.Warnings = append(page.Warnings, WarningText(wn))
	}
	if err := reportPage.ExecuteTemplate(w, "page", page); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	return nil
}

// htmlReport is the content of a report page.
type htmlReport struct {
	Devices   []htmlDevice
	Ranks     []chartBlock // several devices: step time and category medians per device
	RankTable *htmlTable
	// RankWait (several devices with matched collectives): wait vs transfer per rank.
	RankWait  *htmlTable
	RankLines []string // alignment, spread and straggler lines
	Kernels   *htmlTable
}

// htmlDevice is one device's section.
type htmlDevice struct {
	Anchor    string
	Heading   string
	Lead      string // "Decode step: median ... (12 steps; ...)"
	Empty     string // set when there is nothing to summarise
	Charts    []chartBlock
	Summary   *htmlTable
	IdleLine  string
	Sentences []string
	SOL       string // the speed-of-light line, when asked for
	Steps     *htmlTable
}

func reportFacts(r *breakdown.Report) []htmlFact {
	facts := []htmlFact{
		{"Trace", r.Path},
		{"Nsight Systems", orNA(r.Meta.NsysVersion)},
	}
	if r.Meta.SchemaVersion != "" {
		facts = append(facts, htmlFact{"Export schema", r.Meta.SchemaVersion})
	}
	facts = append(facts, htmlFact{"Devices", strconv.Itoa(len(r.Devices))})
	return facts
}

// deviceOverview lists how steps were found on each device.
func deviceOverview(r *breakdown.Report) *htmlTable {
	t := &htmlTable{ID: "devices", Caption: "Steps found per device",
		Head: []htmlCell{cellNum("device"), cellText("GPU"), cellNum("steps"), cellText("phases"), cellNum("skipped"), cellText("method"), cellText("detail")}}
	for i := range r.Devices {
		d := &r.Devices[i]
		phases := PhaseCounts(d.Steps)
		if phases == "" {
			phases = "none"
		}
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{
			{Text: strconv.Itoa(int(d.Device)), Class: "num"},
			cellName(gpuName(d.GPU)),
			cellNum(strconv.Itoa(len(d.Steps) + d.Skipped)),
			cellText(phases),
			cellNum(strconv.Itoa(d.Skipped)),
			cellText(d.Method.String()),
			cellName(d.MethodDetail),
		}})
	}
	return t
}

func gpuName(s string) string {
	if s == "" {
		return "GPU n/a"
	}
	return s
}

func newHTMLReport(r *breakdown.Report, opt HTMLOptions) (*htmlReport, error) {
	out := &htmlReport{}
	for i := range r.Devices {
		d, err := newHTMLDevice(&r.Devices[i])
		if err != nil {
			return nil, err
		}
		if d.Sentences != nil {
			d.Sentences = DeviceSentences(r, &r.Devices[i]) // per-rank wording with several ranks
		}
		d.SOL = SOLLine(&r.Devices[i])
		out.Devices = append(out.Devices, d)
	}
	if len(r.Devices) > 1 {
		ranks, err := rankCharts(r.Devices)
		if err != nil {
			return nil, err
		}
		out.Ranks = ranks
		out.RankTable = rankTable(r.Devices)
	}
	if rr := r.Ranks; rr != nil {
		out.RankLines = rankLines(rr)
		if len(rr.Calls) > 0 {
			wait, err := rankWaitChart(rr)
			if err != nil {
				return nil, err
			}
			out.Ranks = append(out.Ranks, wait)
			out.RankWait = rankWaitTable(rr)
		}
	}
	top := opt.Top
	if top == 0 {
		top = defaultHTMLTop
	}
	if top > 0 && len(r.Kernels) > 0 {
		out.Kernels = kernelTable(r.Kernels, top)
	}
	return out, nil
}

// phaseWhat names the summarised steps: "decode step", or "step (all phases)".
func phaseWhat(sm *breakdown.Summary) string {
	if sm.Phase == breakdown.Unknown {
		return "step (all phases)"
	}
	return sm.Phase.String() + " step"
}

func newHTMLDevice(d *breakdown.DeviceReport) (htmlDevice, error) {
	h := htmlDevice{
		Anchor:  fmt.Sprintf("device-%d", d.Device),
		Heading: fmt.Sprintf("Device %d: %s", d.Device, gpuName(d.GPU)),
	}
	sm := &d.Summary
	if len(d.Steps) == 0 {
		h.Empty = "No steps on this device (after --skip)."
		return h, nil
	}
	if sm.Steps == 0 {
		h.Empty = "No " + phaseWhat(sm) + "s to summarise; the charts and the step table show every step."
	} else {
		h.Lead = fmt.Sprintf("%s: median %s, p10 %s, p90 %s (%d step%s; %.1f host launches/step, %.1f kernels/step)",
			capitalize(phaseWhat(sm)), Duration(int64(sm.Median)), Duration(int64(sm.P10)), Duration(int64(sm.P90)),
			sm.Steps, plural(sm.Steps), sm.LaunchesPerStp, sm.KernelsPerStep)
		h.Summary = summaryTable(sm)
		h.IdleLine = IdleLine(sm)
		h.Sentences = Sentences(sm)
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
	t := &htmlTable{Caption: capitalize(phaseWhat(sm)) + " by category",
		Head: []htmlCell{cellText("category"), cellNum("median/step"), cellNum("share"), cellNum("p90/step"), cellNum("kernels/step")}}
	for _, r := range summaryRows(sm) {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{catCell(r.cat), cellNum(r.median), cellNum(r.share), cellNum(r.p90), cellNum(r.kernels)}})
	}
	t.Rows = append(t.Rows, htmlRow{Class: "total", Cells: []htmlCell{cellText("total"), cellNum(Duration(int64(sm.Median))), cellNum("100%"),
		cellNum(Duration(int64(sm.P90))), cellNum(fmt.Sprintf("%.1f", sm.KernelsPerStep))}})
	return t
}

func catCell(c kernelclass.Category) htmlCell {
	return htmlCell{Text: c.String(), Class: "cat cat-" + c.String()}
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
	t := &htmlTable{ID: fmt.Sprintf("steptable-%d", d.Device), Caption: "Every step: exclusive time by category"}
	t.Head = []htmlCell{cellNum("step"), cellText("phase"), cellNum("offset"), cellNum("wall")}
	for _, c := range cats {
		t.Head = append(t.Head, cellNum(c.String()))
	}
	t.Head = append(t.Head, cellNum("launches"), cellNum("kernels"), cellNum("gaps"))
	if hasLabel {
		t.Head = append(t.Head, cellText("label"))
	}
	t0 := d.Steps[0].Start
	row := func(s *breakdown.Step) htmlRow {
		cells := []htmlCell{cellNum(strconv.Itoa(s.Index)), cellText(s.Phase.String()), cellNum(Duration(int64(s.Start - t0))), cellNum(Duration(int64(s.Wall())))}
		for _, c := range cats {
			cells = append(cells, cellNum(Duration(int64(s.Exclusive[c]))))
		}
		cells = append(cells, cellNum(strconv.Itoa(s.Launches)), cellNum(strconv.Itoa(s.TotalKernels())), cellNum(strconv.Itoa(s.Gaps.Count)))
		if hasLabel {
			cells = append(cells, cellName(s.Label))
		}
		return htmlRow{Class: s.Phase.String(), Cells: cells}
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

// kernelTable lists the kernels with the most time, over the whole trace.
func kernelTable(ks []breakdown.KernelStat, top int) *htmlTable {
	var total int64
	for _, k := range ks {
		total += int64(k.Total)
	}
	n := min(top, len(ks))
	t := &htmlTable{ID: "kernels", Caption: fmt.Sprintf("Top %d of %d kernel names by total time (whole trace, all devices)", n, len(ks)),
		Head: []htmlCell{cellNum("total"), cellNum("share"), cellNum("count"), cellNum("avg"), cellText("category"), cellText("name")}}
	for _, k := range ks[:n] {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{
			cellNum(Duration(int64(k.Total))), cellNum(Percent(frac(int64(k.Total), total))), cellNum(strconv.Itoa(k.Count)),
			cellNum(Duration(int64(k.Total) / int64(max(k.Count, 1)))), catCell(k.Category), cellName(k.Name)}})
	}
	return t
}

// rankTable compares the devices: step time and category medians.
func rankTable(ds []breakdown.DeviceReport) *htmlTable {
	cats := rankCategories(ds)
	t := &htmlTable{ID: "ranktable", Caption: "Per device: " + phaseWhat(&ds[0].Summary) + " time and category medians",
		Head: []htmlCell{cellNum("device"), cellText("GPU"), cellNum("steps"), cellNum("median"), cellNum("p10"), cellNum("p90")}}
	for _, c := range cats {
		t.Head = append(t.Head, cellNum(c.String()))
	}
	for i := range ds {
		d := &ds[i]
		sm := &d.Summary
		cells := []htmlCell{cellNum(strconv.Itoa(int(d.Device))), cellName(gpuName(d.GPU)), cellNum(strconv.Itoa(sm.Steps)),
			cellNum(Duration(int64(sm.Median))), cellNum(Duration(int64(sm.P10))), cellNum(Duration(int64(sm.P90)))}
		for _, c := range cats {
			cells = append(cells, cellNum(Duration(int64(sm.Categories[c].Median))))
		}
		t.Rows = append(t.Rows, htmlRow{Cells: cells})
	}
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

// Chart data. Times are microseconds with nanosecond precision (the page formats them);
// percentages have two decimals.

func chartUS(d time.Duration) float64 { return float64(d) / 1e3 }

func chartRound2(f float64) float64 { return math.Round(f*100) / 100 }

// categoryColors gives each category one colour in every chart.
var categoryColors = [kernelclass.NumCategories]string{
	kernelclass.GEMM:        "#5470c6",
	kernelclass.Attention:   "#91cc75",
	kernelclass.MoERouting:  "#fac858",
	kernelclass.MoEExpert:   "#ee6666",
	kernelclass.AllReduce:   "#9a60b4",
	kernelclass.Collective:  "#ea7ccc",
	kernelclass.Elementwise: "#73c0de",
	kernelclass.Sampling:    "#fc8452",
	kernelclass.Memory:      "#3ba272",
	kernelclass.Other:       "#8d6e63",
	kernelclass.Idle:        "#c8c8c8",
}

const prefillColor = "#d4572a"

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

func (g stepGroups) count() int              { return (g.n + g.k - 1) / g.k }
func (g stepGroups) bounds(b int) (int, int) { return b * g.k, min((b+1)*g.k, g.n) }
func (g stepGroups) bucketed() bool          { return g.k > 1 }

// note says how the steps are shown, for chart subtitles.
func (g stepGroups) note() string {
	if !g.bucketed() {
		return fmt.Sprintf("%d steps", g.n)
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
func (g stepGroups) xLabels(steps []breakdown.Step) []any {
	out := make([]any, 0, g.count())
	for b := range g.count() {
		lo, hi := g.bounds(b)
		if !g.bucketed() {
			s := &steps[lo]
			label := strconv.Itoa(s.Index)
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

func baseOpts(title, subtitle string) []charts.GlobalOpts {
	return []charts.GlobalOpts{
		charts.WithAnimation(false),
		charts.WithTitleOpts(opts.Title{Title: title, Subtitle: subtitle, Left: "8",
			TitleStyle: &opts.TextStyle{FontSize: 14}}),
		charts.WithToolboxOpts(opts.Toolbox{Show: opts.Bool(true), Right: "16",
			Feature: &opts.ToolBoxFeature{SaveAsImage: &opts.ToolBoxFeatureSaveAsImage{Show: opts.Bool(true), Title: "save as PNG"}}}),
	}
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
	if err := add(stepsChart(d)); err != nil {
		return nil, err
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
	if err := add(heatChart(d)); err != nil {
		return nil, err
	}
	return out, nil
}

// stepsChart: stacked bars of each step's exclusive time by category.
func stepsChart(d *breakdown.DeviceReport) (chartBlock, error) {
	g := newStepGroups(len(d.Steps))
	cats := presentCategories(d.Steps)
	title := fmt.Sprintf("Device %d (%s): exclusive time per step by category", d.Device, gpuName(d.GPU))
	sub := g.note() + "; bars stack to the step's wall time"
	if g.bucketed() {
		sub = g.note() + "; bars: median of each category per bucket; lines: shortest and longest step"
	} else if hasPhase(d.Steps, breakdown.Prefill) {
		sub += "; prefill steps' indices in orange"
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(baseOpts(title, sub),
		charts.WithInitializationOpts(opts.Initialization{ChartID: fmt.Sprintf("steps-%d", d.Device)}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "46", Left: "8", Right: "120"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(opts.Grid{Top: "84", Left: "8", Right: "24", Bottom: gridBottom(g.count()), ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: stepAxisName(g), NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value"}),
	)...)
	if dz := dataZooms(g.count()); dz != nil {
		bar.SetGlobalOptions(charts.WithDataZoomOpts(dz...))
	}
	bar.SetXAxis(g.xLabels(d.Steps))
	for _, c := range cats {
		data := make([]opts.BarData, g.count())
		for b := range data {
			if !g.bucketed() {
				data[b].Value = chartUS(d.Steps[b].Exclusive[c])
				continue
			}
			med, _, _ := g.bucketStat(d.Steps, b, func(s *breakdown.Step) float64 { return chartUS(s.Exclusive[c]) })
			data[b].Value = med
		}
		bar.AddSeries(c.String(), data, charts.WithBarChartOpts(opts.BarChart{Stack: "step"}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: categoryColors[c]}))
	}
	if g.bucketed() {
		lines := charts.NewLine()
		minD := make([]opts.LineData, g.count())
		maxD := make([]opts.LineData, g.count())
		for b := range minD {
			_, lo, hi := g.bucketStat(d.Steps, b, func(s *breakdown.Step) float64 { return chartUS(s.Wall()) })
			minD[b].Value, maxD[b].Value = lo, hi
		}
		lines.AddSeries("shortest step", minD, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: "#333333"}), charts.WithLineStyleOpts(opts.LineStyle{Width: 1, Type: "dashed"}))
		lines.AddSeries("longest step", maxD, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: "#000000"}), charts.WithLineStyleOpts(opts.LineStyle{Width: 1}))
		bar.Overlap(lines)
	}
	b := chartBlock{ID: fmt.Sprintf("steps-%d", d.Device), Title: title, Height: 440, Wide: true, Units: "time"}
	if !g.bucketed() {
		b.Kind = "stack"
	}
	return newChart(b, bar)
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

// shareChart: the share of each category in the summarised steps, as horizontal bars,
// largest first.
func shareChart(d *breakdown.DeviceReport) (chartBlock, error) {
	sm := &d.Summary
	title := "Share of a " + phaseWhat(sm)
	sub := fmt.Sprintf("exclusive time, idle included; median step %s over %d steps", Duration(int64(sm.Median)), sm.Steps)
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
	for i, c := range cats {
		labels[i] = c.String()
		data[i] = opts.BarData{Value: chartRound2(100 * sm.Categories[c].Share), ItemStyle: &opts.ItemStyle{Color: categoryColors[c]}}
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(baseOpts(title, sub),
		charts.WithInitializationOpts(opts.Initialization{ChartID: fmt.Sprintf("share-%d", d.Device)}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(opts.Grid{Top: "60", Left: "8", Right: "64", Bottom: "24", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", AxisLabel: &opts.AxisLabel{Formatter: "{value}%"}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Inverse: opts.Bool(true)}),
	)...)
	bar.SetXAxis(labels)
	bar.XYReversal()
	bar.AddSeries("share", data, charts.WithBarChartOpts(opts.BarChart{BarCategoryGap: "25%"}),
		charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "right", Formatter: "{c}%"}))
	b := chartBlock{ID: fmt.Sprintf("share-%d", d.Device), Title: title, Height: 80 + 34*max(len(cats), 4), Units: "pct"}
	b.Height = max(b.Height, 340)
	return newChart(b, bar)
}

// gapsChart: the idle-gap histogram per summarised step (left), and what the host was
// doing during the idle time (right).
func gapsChart(d *breakdown.DeviceReport) (chartBlock, error) {
	sm := &d.Summary
	g := &sm.Gaps
	n := float64(max(sm.Steps, 1))
	title := fmt.Sprintf("Idle gaps per %s: %.1f gaps, %s", phaseWhat(sm), sm.GapsPerStep, Duration(int64(float64(g.Total)/n)))
	sub := "left: gaps and idle time per step by gap size; right: what the host did meanwhile"
	counts := make([]opts.BarData, breakdown.NumGapSizes)
	times := make([]opts.BarData, breakdown.NumGapSizes)
	labels := make([]string, breakdown.NumGapSizes)
	for i := range breakdown.NumGapSizes {
		labels[i] = breakdown.GapSizeNames[i]
		counts[i].Value = chartRound2(float64(g.Sizes[i]) / n)
		times[i].Value = math.Round(float64(g.SizeNS[i])/n) / 1e3
	}
	hostColors := [breakdown.NumHostActivities]string{"#e15759", "#f28e2b", "#4e79a7", "#bab0ac"}
	hostLabels := make([]string, breakdown.NumHostActivities)
	host := make([]opts.BarData, breakdown.NumHostActivities)
	for i := range breakdown.NumHostActivities {
		hostLabels[i] = breakdown.HostActivityNames[i]
		host[i] = opts.BarData{Value: chartRound2(100 * frac(int64(g.Host[i]), int64(g.Total))), ItemStyle: &opts.ItemStyle{Color: hostColors[i]}}
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(baseOpts(title, sub),
		charts.WithInitializationOpts(opts.Initialization{ChartID: fmt.Sprintf("gaps-%d", d.Device)}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "46", Left: "8", Data: []string{"gaps/step", "idle/step"}}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(
			opts.Grid{Top: "104", Left: "8", Right: "43%", Bottom: "36", ContainLabel: opts.Bool(true)},
			opts.Grid{Top: "104", Left: "64%", Right: "56", Bottom: "36", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "gap size", NameLocation: "middle", NameGap: 26,
			AxisLabel: &opts.AxisLabel{Interval: "0", FontSize: 10}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "gaps/step"}),
	)...)
	bar.ExtendXAxis(opts.XAxis{Type: "value", GridIndex: 1, Max: 100, SplitNumber: 2, Name: "host meanwhile, % of idle time",
		NameLocation: "middle", NameGap: 26, AxisLabel: &opts.AxisLabel{Formatter: "{value}%"}})
	bar.ExtendYAxis(
		opts.YAxis{Type: "value", Name: "idle/step", SplitLine: &opts.SplitLine{Show: opts.Bool(false)}},
		opts.YAxis{Type: "category", GridIndex: 1, Data: hostLabels, Inverse: opts.Bool(true)})
	bar.SetXAxis(labels)
	bar.AddSeries("gaps/step", counts, charts.WithItemStyleOpts(opts.ItemStyle{Color: "#7f7f7f"}))
	bar.AddSeries("idle/step", times, charts.WithBarChartOpts(opts.BarChart{YAxisIndex: 1}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: categoryColors[kernelclass.Idle]}))
	bar.AddSeries("host during idle", host, charts.WithBarChartOpts(opts.BarChart{XAxisIndex: 1, YAxisIndex: 2, BarCategoryGap: "30%"}),
		charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Position: "right", Formatter: "{c}%"}))
	b := chartBlock{ID: fmt.Sprintf("gaps-%d", d.Device), Title: title, Height: 340, Units: "count,time,pct"}
	return newChart(b, bar)
}

// heatChart: percent of each step per category. The colour of a cell is its value
// relative to the largest value of its category (row), so that drift shows in small
// categories too; the tooltip gives the percent of the step.
func heatChart(d *breakdown.DeviceReport) (chartBlock, error) {
	g := newStepGroups(len(d.Steps))
	cats := presentCategories(d.Steps)
	title := "Percent of each step by category: drift over the run"
	sub := g.note() + "; colour relative to the row's largest value"
	if g.bucketed() {
		sub = g.note() + "; median percent per bucket; colour relative to the row's largest value"
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
				values[j][b], _, _ = g.bucketStat(d.Steps, b, pct(c))
			} else {
				values[j][b] = pct(c)(&d.Steps[b])
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
			rel := chartRound2(v / slices.Max(values[j]))
			data = append(data, opts.HeatMapData{Value: [4]any{b, j, v, rel}})
		}
	}
	hm := charts.NewHeatMap()
	hm.SetGlobalOptions(append(baseOpts(title, sub),
		charts.WithInitializationOpts(opts.Initialization{ChartID: fmt.Sprintf("heat-%d", d.Device)}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithGridOpts(opts.Grid{Top: "60", Left: "8", Right: "96", Bottom: gridBottom(g.count()), ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Data: g.xLabels(d.Steps), Name: stepAxisName(g), NameLocation: "middle", NameGap: 28,
			SplitArea: &opts.SplitArea{Show: opts.Bool(false)}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: ylabels, Inverse: opts.Bool(true)}),
	)...)
	if dz := dataZooms(g.count()); dz != nil {
		hm.SetGlobalOptions(charts.WithDataZoomOpts(dz...))
	}
	hm.AddSeries("percent of step", data)
	b := chartBlock{ID: fmt.Sprintf("heat-%d", d.Device), Title: title, Height: 120 + 26*len(cats), Wide: true, Units: "pct"}
	if g.count() > 60 {
		b.Height += 32
	}
	// The visual map is set here: go-echarts has a string for VisualMap.Dimension, and
	// ECharts wants the index of the value that picks the colour (the relative one).
	return newChart(b, hm, func(option map[string]interface{}) {
		option["visualMap"] = []map[string]any{{"type": "continuous", "min": 0, "max": 1, "dimension": 3,
			"calculable": false, "orient": "vertical", "right": "16", "top": "64", "itemHeight": max(60, b.Height-150),
			"text":    []string{"row max", "0"},
			"inRange": map[string]any{"color": []string{"#f7fbff", "#c6dbef", "#6baed6", "#2171b5", "#08306b"}}}}
	})
}

// rankCharts compare the devices: median step time, and the category medians.
func rankCharts(ds []breakdown.DeviceReport) ([]chartBlock, error) {
	what := phaseWhat(&ds[0].Summary)
	labels := make([]string, len(ds))
	for i := range ds {
		labels[i] = fmt.Sprintf("device %d", ds[i].Device)
	}
	title := "Per device: " + what + " time"
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(baseOpts(title, "median, p10 and p90 over each device's steps"),
		charts.WithInitializationOpts(opts.Initialization{ChartID: "ranks"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "46", Left: "8"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(opts.Grid{Top: "84", Left: "8", Right: "24", Bottom: "16", ContainLabel: opts.Bool(true)}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value"}),
	)...)
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
	ranks, err := newChart(chartBlock{ID: "ranks", Title: title, Height: 340, Units: "time"}, bar)
	if err != nil {
		return nil, err
	}

	cats := rankCategories(ds)
	clabels := make([]string, len(cats))
	for i, c := range cats {
		clabels[i] = c.String()
	}
	title2 := "Per device: median time per " + what + " by category"
	cb := charts.NewBar()
	cb.SetGlobalOptions(append(baseOpts(title2, "grouped by category, one bar per device"),
		charts.WithInitializationOpts(opts.Initialization{ChartID: "rankcat"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "46", Left: "8", Right: "120"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(opts.Grid{Top: "84", Left: "8", Right: "24", Bottom: "16", ContainLabel: opts.Bool(true)}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value"}),
	)...)
	cb.SetXAxis(clabels)
	for i := range ds {
		data := make([]opts.BarData, len(cats))
		for j, c := range cats {
			data[j].Value = chartUS(ds[i].Summary.Categories[c].Median)
		}
		cb.AddSeries(labels[i], data)
	}
	rankcat, err := newChart(chartBlock{ID: "rankcat", Title: title2, Height: 340, Units: "time"}, cb)
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
		lines = append(lines, fmt.Sprintf("Step spread across ranks: median %s, p90 %s.", Duration(int64(rr.SpreadMedian)), Duration(int64(rr.SpreadP90))))
	}
	if s := StragglerLine(rr); s != "" {
		lines = append(lines, s)
	}
	return lines
}

// rankWaitTable is the text report's per-rank table: collective time split into waiting
// for the last rank and transfer.
func rankWaitTable(rr *breakdown.RankReport) *htmlTable {
	n := len(rr.Steps)
	t := &htmlTable{Caption: "Collectives per rank: waiting for the last rank vs transfer (per aligned step)",
		Head: []htmlCell{cellText("rank"), cellNum("median/step"), cellNum("allreduce/step"), cellNum("collective/step"),
			cellNum("wait/step"), cellNum("transfer/step"), cellNum("wait share"), cellNum("times last")}}
	for i := range rr.Devices {
		d := &rr.Devices[i]
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellText(fmt.Sprint(d.Device)), cellNum(Duration(int64(d.MedianStep))),
			cellNum(perStep(d.AllReduce.Time, n)), cellNum(perStep(d.Collective.Time, n)), cellNum(perStep(d.Wait, n)),
			cellNum(perStep(d.Transfer, n)), cellNum(Percent(frac(int64(d.Wait), int64(d.Wait+d.Transfer)))),
			cellNum(fmt.Sprintf("%d (%s)", d.LastArrivals, Percent(frac(int64(d.LastArrivals), int64(len(rr.Calls))))))}})
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
	bar.SetGlobalOptions(append(baseOpts(title, "wait: from the rank's own start to the last rank's start; transfer: the rest"),
		charts.WithInitializationOpts(opts.Initialization{ChartID: "rankwait"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "46", Left: "8"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithGridOpts(opts.Grid{Top: "84", Left: "8", Right: "24", Bottom: "16", ContainLabel: opts.Bool(true)}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value"}),
	)...)
	bar.SetXAxis(labels)
	bar.AddSeries("wait", wait, charts.WithBarChartOpts(opts.BarChart{Stack: "comm"}), charts.WithItemStyleOpts(opts.ItemStyle{Color: "#d4572a"}))
	bar.AddSeries("transfer", xfer, charts.WithBarChartOpts(opts.BarChart{Stack: "comm"}), charts.WithItemStyleOpts(opts.ItemStyle{Color: "#3182bd"}))
	return newChart(chartBlock{ID: "rankwait", Title: title, Height: 340, Units: "time"}, bar)
}
