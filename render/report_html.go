package render

import (
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strconv"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
)

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
	Lifetime  string // a whole-process capture: what lies outside the served loop (lifetimeLine)
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
