package render

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// Layout limits of the HTML comparison.
const maxChangeRows = 100 // rows of each kernel-change table; the JSON output has them all

// diffPage is the page shell with the "diff" content and the diff page's own styles
// ("diff-style" in html.tmpl, wired into the shell's "page-style" hook).
var diffPage = func() *template.Template {
	t := pageWith("diff")
	return template.Must(t.Parse(`{{define "page-style"}}{{template "diff-style"}}{{end}}`))
}()

// Colours of the two sides in the diff charts.
const (
	baseColor = "#9aa5b1"
	newColor  = "#2f6fdf"
	// Labels of significant changes: slower, faster.
	worseColor  = "#c62828"
	betterColor = "#2e7d32"
)

// htmlDiff is the content of a diff page.
type htmlDiff struct {
	Answer *htmlAnswer // the first screen (headline.go)
	// What changed: the rows a side cannot measure, the changes of the mean (with the
	// ranks that differ and why the views disagree), and for 2+ GPUs each rank's wait and
	// transfer with the straggler.
	NotComparable *htmlTable
	Story         *htmlTable
	RankWait      *htmlTable
	Lead          string
	Charts        []chartBlock
	Table         *htmlTable // the benchstat table
	Means         *htmlTable // means per step, adding up to the mean step
	Caveat        string
	Counts        *htmlTable
	NCCL          *htmlTable
	Changes       []*htmlTable // appeared, vanished, changed variants (only those with rows)
	NoChange      string       // set when no kernel family changed
}

// DiffHTML writes a comparison as one self-contained HTML file: the header facts of both
// sides, what changed (the rows not comparable, the changes of the mean with the ranks that
// differ, and per rank wait vs transfer), the benchstat-style table (the same strings as
// DiffText), grouped bars of each category's mean per step on both sides, both sides' step
// time over the run, the counts
// per step, NCCL kernels, the kernels that appeared, vanished or changed variant, the
// caveat and the warnings. Like HTML it loads nothing from the network, and the same
// comparison and options give the same bytes.
func DiffHTML(w io.Writer, c *compare.Comparison, opt HTMLOptions) error {
	if err := checkScriptText(opt.EChartsJS); err != nil {
		return err
	}
	content, err := newHTMLDiff(c)
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	bl, nl := sideNames(c)
	page := htmlPage{
		Title:       "stepstat diff: " + bl + " vs " + nl,
		Heading:     "stepstat diff: " + bl + " vs " + nl,
		Generator:   "stepstat",
		EChartsJS:   template.JS(opt.EChartsJS),
		Facts:       diffFacts(c),
		FactTable:   diffSides(c),
		Config:      diffConfigTable(c, bl, nl),
		ConfigFirst: true,
		Warnings:    diffWarnings(c),
		Content:     content,
	}
	vw := &validUTF8Writer{w: w} // names may hold bytes that are not UTF-8
	if err := diffPage.ExecuteTemplate(vw, "page", page); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	return vw.Flush()
}

func diffFacts(c *compare.Comparison) []htmlFact {
	unit := "step (every step is a sample)"
	if ranked(c) {
		unit = sampleWords(c)
	}
	if c.Options.PerRun {
		unit = "run (each run's mean and median per step are its samples)"
	}
	test := fmt.Sprintf("means: permutation test on the difference of means, medians: Mann-Whitney U; both at α=%g, ± the %g%% interval; changes under %s/step show as ~",
		c.Options.Alpha, 100*c.Options.Confidence, breakdown.FormatDurationF(c.MinChangeNS))
	if !c.Tested {
		test = c.Untested
	}
	return []htmlFact{
		{"Base", c.Base.Label},
		{"Base files", strings.Join(c.Base.Paths, ", ")},
		{"New", c.New.Label},
		{"New files", strings.Join(c.New.Paths, ", ")},
		{"Phase compared", c.Phase.String()},
		{"Sample unit", unit},
		{"Test", test},
	}
}

// diffSides lists, per side, the runs and how their steps were found.
func diffSides(c *compare.Comparison) *htmlTable {
	t := &htmlTable{ID: "sides", Caption: "Steps found per side",
		Head: []htmlCell{cellText("side"), cellText("label"), cellNum("runs"), cellNum("devices/run"), cellText("steps found"),
			cellNum(c.Phase.String() + " steps compared"), cellText("step method"), cellText("files")}}
	for _, s := range []struct {
		side string
		ss   *compare.SideSummary
	}{{"base", &c.Base}, {"new", &c.New}} {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellText(s.side), cellName(s.ss.Label), cellNum(strconv.Itoa(len(s.ss.Paths))),
			cellNum(strconv.Itoa(s.ss.Devices)), cellText(orDefault(s.ss.PhaseMix, "none")), cellNum(strconv.Itoa(s.ss.Steps)),
			cellText(orDefault(strings.Join(s.ss.Methods, "+"), "-")), cellName(strings.Join(s.ss.Paths, ", "))}})
	}
	return t
}

func newHTMLDiff(c *compare.Comparison) (*htmlDiff, error) {
	bl, nl := sideNames(c)
	out := &htmlDiff{Caveat: diffCaveat(c)}
	r := &c.Step
	out.Lead = fmt.Sprintf("%s: mean %s → %s, %s %s", capitalize(c.Phase.String())+" step", breakdown.FormatDurationF(r.Mean.Base),
		breakdown.FormatDurationF(r.Mean.New), meanWords(c, r), meanPN(c, r))
	out.NotComparable = notComparableTable(c)
	out.Story = storyTable(c, bl, nl)
	out.RankWait = diffRankWaitTable(c)
	if tr := c.Token; tr != nil { // the verdict is per token; the step is a round
		out.Lead = fmt.Sprintf("Time per token: mean %s → %s, %s %s; per round: %s", breakdown.FormatDurationF(tr.Mean.Base),
			breakdown.FormatDurationF(tr.Mean.New), meanWords(c, tr), meanPN(c, tr), out.Lead)
	}
	out.Answer = diffAnswer(c, out.Lead)
	cats, err := diffCatsChart(c)
	if err != nil {
		return nil, err
	}
	out.Charts = append(out.Charts, cats)
	if steps, ok, err := diffStepsChart(c); err != nil {
		return nil, err
	} else if ok {
		out.Charts = append(out.Charts, steps)
	}
	out.Table = diffTable(c, bl, nl)
	out.Means = diffMeansTable(c, bl, nl)
	out.Counts = diffCounts(c, bl, nl)
	out.NCCL = diffNCCL(c, bl, nl)
	for _, t := range []*htmlTable{
		changeTable("diff-appeared", "Kernels only in "+nl, c.Appeared, false),
		changeTable("diff-vanished", "Kernels only in "+bl, c.Vanished, true),
		variantTable(c.Variants, bl, nl),
	} {
		if t != nil {
			out.Changes = append(out.Changes, t)
		}
	}
	if len(out.Changes) == 0 {
		out.NoChange = "No kernel family appeared, vanished or changed variant (names normalised, so tile and template variants of one kernel are one family)."
	}
	return out, nil
}

// notComparableTable lists the rows (pooled, then ranks) that a side cannot measure, with
// the reason; nil when every row can be compared.
func notComparableTable(c *compare.Comparison) *htmlTable {
	t := &htmlTable{ID: "diff-not-comparable", Caption: "Not comparable: a side cannot measure these (no verdict, no change shown)",
		Head: []htmlCell{cellText("rows"), cellText("why")}}
	for _, g := range c.NotComparableRows() {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellText(strings.Join(g.Rows, ", ")), cellName(g.Reason)}})
	}
	for _, rk := range c.Ranks {
		if rk.NotComparable != "" {
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellText(fmt.Sprintf("rank %d", rk.Rank)), cellName(rk.NotComparable)}})
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// storyTable is DiffText's what changed: the whole step and each category whose mean per
// step changed significantly, biggest first, each with the ranks whose change differs from
// the pooled one, and why the median disagrees where it does.
func storyTable(c *compare.Comparison, bl, nl string) *htmlTable {
	t := &htmlTable{ID: "diff-story",
		Caption: fmt.Sprintf("What changed: the mean per %s step (adds up), tested by a permutation test on the difference of means; biggest change first", c.Phase),
		Head:    []htmlCell{cellText(""), cellText("rank"), cellNum(bl), cellNum(nl), cellNum("change/step"), cellNum("±"), cellNum("vs base"), cellText("(p, n)")}}
	row := func(name htmlCell, rank string, r *compare.Row, class string) {
		delta := cellNum(meanVerdict(c, r))
		if r.Mean.Significant {
			if r.Mean.Delta > 0 {
				delta.Class += " worse"
			} else {
				delta.Class += " better"
			}
		}
		t.Rows = append(t.Rows, htmlRow{Class: class, Cells: []htmlCell{name, cellText(rank), cellNum(breakdown.FormatDurationF(r.Mean.Base)),
			cellNum(breakdown.FormatDurationF(r.Mean.New)), cellNum(signedDuration(r.Mean.Delta)), cellNum(meanRange(c, r)), delta, cellText(meanPN(c, r))}})
	}
	if c.Token != nil { // the verdict: per token, before the step (a speculative round)
		row(cellText("time per token"), "all", c.Token, "total")
	}
	changed := 0
	for _, it := range c.Story() {
		name := cellText(it.Row.Name)
		if !it.Row.Whole {
			name = catCell(it.Row.Category)
			changed++
		}
		class := ""
		if it.Row == &c.Step {
			class = "total"
		}
		if it.Row.NotComparable == "" {
			row(name, "all", it.Row, class)
		} else {
			t.Rows = append(t.Rows, htmlRow{Class: class, Cells: []htmlCell{name, cellText("all"), cellText("not comparable pooled; per rank below")}})
		}
		for _, l := range it.Ranks {
			row(cellText(""), strconv.Itoa(l.Rank), l.Row, "rank")
		}
		for _, w := range whyLines(it) {
			t.Rows = append(t.Rows, htmlRow{Span: 8, Class: "why", Cells: []htmlCell{cellName(w)}})
		}
	}
	if changed == 0 && c.Tested {
		t.Note = capitalize(noChangeLine(c)) + "."
	}
	if t.Note == "" {
		t.Note = fmt.Sprintf("Verdict at p < %g and a change of at least %s per step (--min-change); ± is the %g%% interval of the change.",
			c.Options.Alpha, breakdown.FormatDurationF(c.MinChangeNS), 100*c.Options.Confidence)
	}
	return t
}

// whyLines are the reasons the mean and the median disagree for a story item: pooled, then
// each rank shown.
func whyLines(it compare.StoryItem) []string {
	var out []string
	if it.Row.Why != "" {
		out = append(out, "why: "+it.Row.Why)
	}
	for _, l := range it.Ranks {
		if l.Row.Why != "" {
			out = append(out, fmt.Sprintf("why (rank %d): %s", l.Rank, l.Row.Why))
		}
	}
	return out
}

// diffRankWaitTable compares each rank's wait and transfer in matched collectives per aligned
// step, and the calls at which it arrived last; nil below 2 GPUs.
func diffRankWaitTable(c *compare.Comparison) *htmlTable {
	if len(c.Ranks) == 0 || (c.Base.Ranks == nil && c.New.Ranks == nil) {
		return nil
	}
	t := &htmlTable{ID: "diff-ranks",
		Caption: "Per rank: wait vs transfer in matched collectives, per aligned step (wait + transfer = the rank's matched allreduce + collective time)",
		Head:    []htmlCell{cellNum("rank"), cellNum("wait/step"), cellNum("→"), cellNum("transfer/step"), cellNum("→"), cellNum("times last"), cellNum("→")}}
	for _, rk := range c.Ranks {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellNum(strconv.Itoa(rk.Rank)),
			cellNum(rankTimeText(rk.Base, true)), cellNum(rankTimeText(rk.New, true)),
			cellNum(rankTimeText(rk.Base, false)), cellNum(rankTimeText(rk.New, false)),
			cellNum(lastText(rk.Base)), cellNum(lastText(rk.New))}})
	}
	t.Note = "Straggler: " + stragglerWords(c.Base.Ranks) + " → " + stragglerWords(c.New.Ranks)
	return t
}

// deltaWords says the delta of a row in the lead line.
func deltaWords(r *compare.Row) string {
	switch d := rowDelta(r); d {
	case "~":
		return "no significant change"
	case "?":
		return "no comparison"
	default:
		return d
	}
}

// shownRows returns the rows DiffText prints: the categories either side has, then the
// whole step.
func shownRows(c *compare.Comparison) []*compare.Row {
	var out []*compare.Row
	for i := range c.Categories {
		r := &c.Categories[i]
		if r.Base.Center == 0 && r.New.Center == 0 && r.Base.N > 0 {
			continue // a category neither side has
		}
		out = append(out, r)
	}
	return append(out, &c.Step)
}

// deltaClass marks significant changes: "worse" for slower, "better" for faster.
func deltaClass(r *compare.Row) string {
	if !r.Significant {
		return ""
	}
	if r.New.Center > r.Base.Center {
		return "worse"
	}
	return "better"
}

// diffTable is DiffText's benchstat table: median ± CI per side, the delta or ~, p and n.
func diffTable(c *compare.Comparison, bl, nl string) *htmlTable {
	t := &htmlTable{ID: "diff-table",
		Caption: fmt.Sprintf("Time per %s step: median ± %g%% confidence interval, each row its own samples and test (medians do not add up; the means table does)", c.Phase, 100*c.Options.Confidence),
		Head:    []htmlCell{cellText(""), cellNum(bl), cellText("±"), cellNum(nl), cellText("±"), cellNum("vs base"), cellText("(p, n)")}}
	for _, r := range shownRows(c) {
		name := cellText(r.Name)
		if !r.Whole {
			name = catCell(r.Category)
		}
		delta := cellNum(rowDelta(r))
		if cl := deltaClass(r); cl != "" {
			delta.Class += " " + cl
		}
		row := htmlRow{Cells: []htmlCell{name, cellNum(breakdown.FormatDuration(int64(r.Base.Center))), cellText(pctRange(r.Base)),
			cellNum(breakdown.FormatDuration(int64(r.New.Center))), cellText(pctRange(r.New)), delta, cellText(rowPN(r))}}
		if r == &c.Step {
			row.Class = "total"
		}
		t.Rows = append(t.Rows, row)
	}
	t.Note = fmt.Sprintf("vs base: the change of the median where the difference is significant, else ~. Samples: one per %s. "+
		"Several categories are tested at once: expect about α=%g of the rows to test significant by chance.",
		map[bool]string{false: "step", true: "run (its median per step)"}[c.Options.PerRun], c.Options.Alpha)
	return t
}

// diffMeansTable is DiffText's means table: each category's mean per step on both sides,
// adding up to the mean step, and the change with the permutation test's interval and
// verdict.
func diffMeansTable(c *compare.Comparison, bl, nl string) *htmlTable {
	t := &htmlTable{ID: "diff-means", Caption: fmt.Sprintf("Means per %s step (the rows add up to the mean step; each change tested by a permutation test)", c.Phase),
		Head: []htmlCell{cellText(""), cellNum(bl), cellNum(nl), cellNum("change/step"), cellNum("±"), cellNum("vs base"), cellText("(p, n)")}}
	line := func(name htmlCell, r *compare.Row, class string) {
		v := cellNum(meanVerdict(c, r))
		if r.Mean.Significant {
			v.Class += map[bool]string{true: " worse", false: " better"}[r.Mean.Delta > 0]
		}
		t.Rows = append(t.Rows, htmlRow{Class: class, Cells: []htmlCell{name, cellNum(breakdown.FormatDurationF(r.Mean.Base)), cellNum(breakdown.FormatDurationF(r.Mean.New)),
			cellNum(meanDelta(r)), cellNum(meanRange(c, r)), v, cellText(meanPN(c, r))}})
	}
	for i, cat := range kernelclass.Order {
		if c.Base.Means[cat] == 0 && c.New.Means[cat] == 0 {
			continue
		}
		line(catCell(cat), &c.Categories[i], "")
	}
	line(cellText("mean step"), &c.Step, "total")
	return t
}

// diffCounts is DiffText's counts table, with the median step.
func diffCounts(c *compare.Comparison, bl, nl string) *htmlTable {
	t := &htmlTable{ID: "diff-counts", Caption: "Counts per " + c.Phase.String() + " step",
		Head: []htmlCell{cellText(""), cellNum(bl), cellNum(nl)}}
	f1 := func(f float64) string { return fmt.Sprintf("%.1f", f) }
	for _, r := range []struct {
		name string
		b, n string
	}{
		{c.Phase.String() + " steps", strconv.Itoa(c.Base.Steps), strconv.Itoa(c.New.Steps)},
		{"median step", breakdown.FormatDuration(int64(c.Base.MedianStep)), breakdown.FormatDuration(int64(c.New.MedianStep))},
		{"host launches/step", f1(c.Base.LaunchesPerStep), f1(c.New.LaunchesPerStep)},
		{"kernels/step", f1(c.Base.KernelsPerStep), f1(c.New.KernelsPerStep)},
		{"idle gaps/step", f1(c.Base.GapsPerStep), f1(c.New.GapsPerStep)},
		{"step method", strings.Join(c.Base.Methods, "+"), strings.Join(c.New.Methods, "+")},
	} {
		cell := cellNum
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellText(r.name), cell(orDefault(r.b, "-")), cell(orDefault(r.n, "-"))}})
	}
	return t
}

// diffNCCL lists NCCL kernels by op, algorithm, protocol and data type, per side.
func diffNCCL(c *compare.Comparison, bl, nl string) *htmlTable {
	if len(c.Base.NCCL)+len(c.New.NCCL) == 0 {
		return nil
	}
	t := &htmlTable{ID: "diff-nccl", Caption: "NCCL kernels by op, algorithm, protocol and data type (whole trace)", Note: diffNCCLNote(c, bl, nl),
		Head: []htmlCell{cellText("side"), cellText("op"), cellText("algo"), cellText("proto"), cellText("dtype"), cellNum("count"), cellNum("total")}}
	for _, s := range []struct {
		label string
		n     []compare.NCCLCount
	}{{bl, c.Base.NCCL}, {nl, c.New.NCCL}} {
		for _, n := range s.n {
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellName(s.label), cellName(orDefault(n.Op, "-")), cellName(orDefault(n.Algo, "-")),
				cellName(orDefault(n.Proto, "-")), cellName(orDefault(n.DType, "-")), cellNum(strconv.Itoa(n.Count)), cellNum(breakdown.FormatDuration(int64(n.Total)))}})
		}
	}
	return t
}

// changeTable lists kernel families of one side only.
func changeTable(id, caption string, cs []compare.KernelChange, base bool) *htmlTable {
	if len(cs) == 0 {
		return nil
	}
	t := &htmlTable{ID: id, Caption: fmt.Sprintf("%s: %d kernel families", caption, len(cs)),
		Head: []htmlCell{cellText("category"), cellNum("count"), cellNum("total"), cellText("family"), cellText("names")}}
	var all [][]string
	for _, k := range cs[:min(len(cs), maxChangeRows)] {
		if base {
			all = append(all, k.BaseNames)
		} else {
			all = append(all, k.NewNames)
		}
	}
	cells := namesCells(all...)
	for i, k := range cs {
		if i == maxChangeRows {
			t.Note = moreNote(len(cs))
			break
		}
		n, total := k.NewCount, k.NewTotal
		if base {
			n, total = k.BaseCount, k.BaseTotal
		}
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{catCell(k.Category), cellNum(strconv.Itoa(n)), cellNum(breakdown.FormatDuration(int64(total))),
			familyCell(k.Family), cells[i]}})
	}
	return t
}

// variantTable lists kernel families whose names differ between the sides.
func variantTable(cs []compare.KernelChange, bl, nl string) *htmlTable {
	if len(cs) == 0 {
		return nil
	}
	t := &htmlTable{ID: "diff-variants",
		Caption: fmt.Sprintf("Changed variants (same kernel family, other tile or template choice): %d kernel families; long names elided to what tells them apart (hover for the whole name; --format json has them whole)", len(cs)),
		Head: []htmlCell{cellText("category"), cellNum(bl + " count"), cellNum(nl + " count"), cellText("family"),
			cellText(bl + " names"), cellText(nl + " names")}}
	var all [][]string
	for _, k := range cs[:min(len(cs), maxChangeRows)] {
		all = append(all, k.BaseNames, k.NewNames)
	}
	cells := namesCells(all...)
	for i, k := range cs {
		if i == maxChangeRows {
			t.Note = moreNote(len(cs))
			break
		}
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{catCell(k.Category), cellNum(strconv.Itoa(k.BaseCount)), cellNum(strconv.Itoa(k.NewCount)),
			familyCell(k.Family), cells[2*i], cells[2*i+1]}})
	}
	return t
}

func moreNote(n int) string {
	return fmt.Sprintf("The first %d of %d are shown; stepstat diff --format json lists them all.", maxChangeRows, n)
}

func familyCell(f string) htmlCell { return htmlCell{Text: f, Class: "name family"} }

// namesCells returns one cell per list of kernel names, the names one a line. Long names
// (template names run to thousands of characters) are elided by what tells them apart
// from the table's other names (elideNames: what rows share goes, what differs stays);
// the whole names are the cell's title, shown on hover (and whole in the JSON).
func namesCells(lists ...[]string) []htmlCell {
	var flat []string
	for _, l := range lists {
		flat = append(flat, l...)
	}
	short := elideNames(flat, maxHTMLName)
	out := make([]htmlCell, len(lists))
	k := 0
	for i, l := range lists {
		c := htmlCell{Text: strings.Join(short[k:k+len(l)], "\n"), Class: "name names"}
		if c.Text != strings.Join(l, "\n") {
			c.Title = strings.Join(l, "\n")
		}
		out[i] = c
		k += len(l)
	}
	return out
}

// maxHTMLName is the longest kernel name a diff table shows whole.
const maxHTMLName = 100
