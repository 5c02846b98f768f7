package render

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// echartsVersion is the version of the ECharts source embedded in the binary
// (render/assets/echarts.min.js, from the npm package echarts; Apache-2.0, see
// render/assets/LICENSE and NOTICE).
const echartsVersion = "5.6.0"

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
	// TopKernels chooses what the top-kernels table covers (TopSteps by default).
	TopKernels TopKernels
}

// DefaultHTMLOptions returns the options with the embedded ECharts source.
func DefaultHTMLOptions() HTMLOptions { return HTMLOptions{EChartsJS: echartsMinJS} }

// The page template. html.tmpl defines a page shell ("page": head, inlined ECharts, header
// facts, warnings, the "content" block, the chart bootstrap script) and partials shared by
// every page ("table", "chart", "facts", "warnings"), plus the content of each kind of page
// ("report"). basePage is never executed, so that each kind of page can Clone it and wire
// its own content into "content"; a diff page would do the same with a "diff" template.
var (
	basePage   = template.Must(template.New("html.tmpl").Funcs(template.FuncMap{"categoryCSS": categoryCSS}).Parse(htmlTemplateText))
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
	Source    string // the trace (or the two traces) under the heading
	Generator string
	EChartsJS template.JS
	// Facts, FactTable and Config are folded at the end of the page ("about"): the first
	// screen is the answer.
	Facts     []htmlFact
	FactTable *htmlTable // e.g. one row per device: GPU, step method, steps found
	Config    *htmlTable // the run configuration (report) or the knobs that changed (diff); nil when none
	Warnings  []string   // folded under one line at the top
	// ConfigFirst shows Config under the heading, not folded: a diff's changed knobs are
	// part of its answer.
	ConfigFirst bool
	Content     any // the data of the "content" block
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
	Class   string // "wide": many columns, set tight
}

// htmlRow is a table row. A row with a Span holds one cell spanning Span columns (a note).
type htmlRow struct {
	Class string
	Span  int
	Cells []htmlCell
}

// htmlCell is a table cell; Class "num" right-aligns numbers, "name" marks free text (the
// only cells that wrap). Title, when set, is shown on hover (the whole of an elided name).
type htmlCell struct {
	Text  string
	Class string
	Title string
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
func HTML(w io.Writer, r *findings.Report, opt HTMLOptions) error {
	if err := checkScriptText(opt.EChartsJS); err != nil {
		return err
	}
	content, err := newHTMLReport(r, opt)
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	page := htmlPage{
		Title:     "stepstat: " + filepath.Base(r.Path),
		Heading:   "stepstat report: " + filepath.Base(r.Path),
		Source:    r.Path,
		Generator: "stepstat",
		EChartsJS: template.JS(opt.EChartsJS),
		Facts:     reportFacts(r.Report),
		FactTable: deviceOverview(r.Report),
		Config:    configTable(r.Report),
		Content:   content,
	}
	for _, wn := range r.Warnings {
		page.Warnings = append(page.Warnings, warningText(wn))
	}
	vw := &validUTF8Writer{w: w} // names may hold bytes that are not UTF-8
	if err := reportPage.ExecuteTemplate(vw, "page", page); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	return vw.Flush()
}

// htmlReport is the content of a report page.
type htmlReport struct {
	// Answer is the first screen: headline, limiter, findings, the mean step by category.
	Answer *htmlAnswer
	// Timelines draw the median and the slowest step on a time axis.
	Timelines []chartBlock
	Devices   []htmlDevice
	Ranks     []chartBlock // several devices: step time and category medians per device
	RankTable *htmlTable
	// RankWait (several devices with matched collectives): wait vs transfer per rank.
	RankWait  *htmlTable
	RankLines []string // alignment, spread and straggler lines
	// RunTable (a run given as several files): each file's devices and clock offset.
	RunTable *htmlTable
	Kernels  *htmlTable
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
		Head: []htmlCell{cellNum("device"), cellText("GPU"), cellNum("steps"), cellText("phases"), cellNum("skipped"), cellText("method"), cellText("detail"), cellText("outside steps")}}
	for i := range r.Devices {
		d := &r.Devices[i]
		phases := breakdown.PhaseCounts(d.Steps)
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
			cellName(outsideText(&d.Outside)),
		}})
	}
	return t
}

// outsideText says how much activity belongs to no step (work before the first step,
// between step ranges or after the last).
func outsideText(o *breakdown.Outside) string {
	if o.Windows == 0 {
		return "none"
	}
	return fmt.Sprintf("%s in %d window%s, %d kernels", breakdown.FormatDuration(int64(o.Wall)), o.Windows, plural(o.Windows), o.TotalKernels())
}

func gpuName(s string) string {
	if s == "" {
		return "GPU n/a"
	}
	return s
}

// htmlFinding is one finding, formatted.
type htmlFinding struct {
	Device                                string
	Severity, Headline, Claim, Suggestion string
	PerRank                               string // the group's numbers per rank, one line
}

func newHTMLReport(r *findings.Report, opt HTMLOptions) (*htmlReport, error) {
	out := &htmlReport{Answer: reportAnswer(r)}
	var err error
	if out.Timelines, err = timelineCharts(r.Report); err != nil {
		return nil, err
	}
	for i := range r.Devices {
		d, err := newHTMLDevice(&r.Devices[i])
		if err != nil {
			return nil, err
		}
		if d.Sentences != nil {
			d.Sentences = deviceSentences(r.Report, &r.Devices[i]) // per-rank wording with several ranks
		}
		d.SOL = solLine(&r.Devices[i])
		out.Devices = append(out.Devices, d)
	}
	if len(r.Devices) > 1 {
		ranks, err := rankCharts(r.Devices)
		if err != nil {
			return nil, err
		}
		out.Ranks = ranks
		out.RankTable = rankTable(r.Devices)
		out.RunTable = runTable(r.Run)
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
	if ks, caption := topKernels(r.Report, opt.TopKernels); top > 0 && len(ks) > 0 {
		out.Kernels = kernelTable(ks, top, caption)
	}
	return out, nil
}

func catCell(c kernelclass.Category) htmlCell {
	return htmlCell{Text: c.String(), Class: "cat cat-" + c.String()}
}

// kernelTable lists the kernels with the most time, over what caption says (topKernels).
func kernelTable(ks []breakdown.KernelStat, top int, caption string) *htmlTable {
	var total int64
	for _, k := range ks {
		total += int64(k.Total)
	}
	n := min(top, len(ks))
	t := &htmlTable{ID: "kernels", Caption: fmt.Sprintf("Top %d of %d kernel names by total time (%s)", n, len(ks), caption),
		Head: []htmlCell{cellNum("total"), cellNum("share"), cellNum("count"), cellNum("avg"), cellText("category"), cellText("name")}}
	for _, k := range ks[:n] {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{
			cellNum(breakdown.FormatDuration(int64(k.Total))), cellNum(breakdown.FormatPercent(frac(int64(k.Total), total))), cellNum(strconv.Itoa(k.Count)),
			cellNum(breakdown.FormatDuration(int64(k.Total) / int64(max(k.Count, 1)))), catCell(k.Category), cellName(k.Name)}})
	}
	return t
}

// Chart data. Times are microseconds with nanosecond precision (the page formats them);
// percentages have two decimals.

func chartUS(d time.Duration) float64 { return float64(d) / 1e3 }

func chartRound2(f float64) float64 { return math.Round(f*100) / 100 }

// categoryColors gives each category one colour in every chart.
var categoryColors = [kernelclass.NumCategories]string{
	kernelclass.GEMM:          "#5470c6",
	kernelclass.Attention:     "#91cc75",
	kernelclass.MoERouting:    "#fac858",
	kernelclass.MoEExpert:     "#ee6666",
	kernelclass.AllReduce:     "#9a60b4",
	kernelclass.Collective:    "#ea7ccc",
	kernelclass.Elementwise:   "#73c0de",
	kernelclass.Sampling:      "#fc8452",
	kernelclass.Memory:        "#3ba272",
	kernelclass.Other:         "#8d6e63",
	kernelclass.UntracedGraph: "#546e7a",
	kernelclass.Idle:          "#c8c8c8",
}

// categoryCSS is the style sheet's rules for the category swatches of the tables, one a
// line in Order, in the charts' colours.
func categoryCSS() template.CSS {
	var b strings.Builder
	for _, c := range kernelclass.Order {
		fmt.Fprintf(&b, ".cat-%s::before { background: %s !important; }\n", c, categoryColors[c])
	}
	return template.CSS(strings.TrimSuffix(b.String(), "\n"))
}

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
