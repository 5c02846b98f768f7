package render

import (
	_ "embed"
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
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

// htmlCell is a table cell; Class "num" right-aligns numbers, "name" marks names and
// "free" prose (the only cells that wrap). Title, when set, is shown on hover (the whole
// of an elided name).
type htmlCell struct {
	Text  string
	Class string
	Title string
}

func cellNum(s string) htmlCell  { return htmlCell{Text: s, Class: "num"} }
func cellText(s string) htmlCell { return htmlCell{Text: s} }
func cellName(s string) htmlCell { return htmlCell{Text: s, Class: "name"} }

// cellFree is a cell of free prose (a step's phase evidence): it wraps, as names do.
func cellFree(s string) htmlCell { return htmlCell{Text: s, Class: "free"} }

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
