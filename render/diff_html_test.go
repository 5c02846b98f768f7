package render

import (
	"bytes"
	"encoding/json"
	"html"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// captureComparison compares the project's dense captures, eager (base) against CUDA
// graphs (new), as `stepstat diff` does by default.
func captureComparison(t testing.TB) *compare.Comparison {
	t.Helper()
	dir := filepath.Join("..", "testdata", "traces")
	a := traceReport(t, filepath.Join(dir, "dense-eager.sqlite.gz"), breakdown.Options{})
	b := traceReport(t, filepath.Join(dir, "dense-graph.sqlite.gz"), breakdown.Options{})
	a.Path, b.Path = "dense-eager.sqlite", "dense-graph.sqlite" // each read had its own temporary folder
	return compare.Compare(compare.Side{Label: "dense-eager", Reports: []*findings.Report{findings.Of(a)}},
		compare.Side{Label: "dense-graph", Reports: []*findings.Report{findings.Of(b)}}, breakdown.Decode, compare.Options{})
}

// untrustedKernel is a kernel name that holds the payload; Normalize drops the payload
// from its family, but a kernel named payload is a family named payload.
const untrustedKernel = "evil" + payload + "_kernel"

// untrustedComparison compares two synthetic runs whose base label, paths, kernel names
// and NCCL data type hold markup: one kernel family appears, one vanishes, one changes
// variant, and both sides have NCCL kernels.
func untrustedComparison(t testing.TB) *compare.Comparison {
	t.Helper()
	a, b := synthReport(8, 1), synthReport(8, 1)
	a.Path, b.Path = "traces/"+payload+".sqlite", "traces/new.sqlite"
	b.Devices[0].Method = breakdown.MethodSync // the step methods differ: a warning naming both labels
	fasterGEMM(b, 40*time.Microsecond)
	const us = time.Microsecond
	a.Kernels = append(a.Kernels,
		breakdown.KernelStat{Name: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1", Category: kernelclass.GEMM, Count: 40, Total: 400 * us},
		breakdown.KernelStat{Name: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Category: kernelclass.AllReduce,
			Count: 16, Total: 2160 * us, NCCL: &kernelclass.NCCLKernel{Op: "AllReduce", RedOp: "Sum", Algo: "RING", Proto: "LL", DType: "bf16"}})
	b.Kernels = append(b.Kernels,
		breakdown.KernelStat{Name: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", Category: kernelclass.GEMM, Count: 40, Total: 380 * us},
		breakdown.KernelStat{Name: untrustedKernel, Category: kernelclass.Other, Count: 8, Total: 80 * us},
		breakdown.KernelStat{Name: payload, Category: kernelclass.Other, Count: 8, Total: 90 * us},
		breakdown.KernelStat{Name: "ncclDevKernel_AllReduce_Sum_" + payload + "_RING_LL", Category: kernelclass.AllReduce,
			Count: 16, Total: 2000 * us, NCCL: &kernelclass.NCCLKernel{Op: "AllReduce", RedOp: "Sum", Algo: "RING", Proto: "LL", DType: payload}})
	b.Kernels = slicesDeleteName(b.Kernels, "flash_fwd_splitkv_kernel")
	return compare.Compare(compare.Side{Label: payload, Reports: []*findings.Report{findings.Of(a)}},
		compare.Side{Label: "tuned", Reports: []*findings.Report{findings.Of(b)}}, breakdown.Decode, compare.Options{})
}

func slicesDeleteName(ks []breakdown.KernelStat, name string) []breakdown.KernelStat {
	var out []breakdown.KernelStat
	for _, k := range ks {
		if k.Name != name {
			out = append(out, k)
		}
	}
	return out
}

// fasterGEMM takes d off the GEMM time of every step of r.
func fasterGEMM(r *breakdown.Report, d time.Duration) {
	for di := range r.Devices {
		dev := &r.Devices[di]
		for i := range dev.Steps {
			s := &dev.Steps[i]
			s.Exclusive[kernelclass.GEMM] -= d
			s.Busy[kernelclass.GEMM] -= d
			s.End -= nsys.Time(d)
		}
		dev.Summary = synthSummary(dev.Steps)
	}
}

// synthComparison compares synthetic runs of nb and nn steps; the new one's GEMMs are
// 15 µs faster.
func synthComparison(nb, nn int) *compare.Comparison {
	a, b := synthReport(nb, 1), synthReport(nn, 1)
	b.Path = "synthetic-new.sqlite"
	fasterGEMM(b, 15*time.Microsecond)
	return compare.Compare(compare.Side{Label: "base", Reports: []*findings.Report{findings.Of(a)}},
		compare.Side{Label: "new", Reports: []*findings.Report{findings.Of(b)}}, breakdown.Decode, compare.Options{})
}

func renderDiff(t testing.TB, c *compare.Comparison, opt HTMLOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := DiffHTML(&b, c, opt); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDiffHTMLGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    func(t *testing.T) *compare.Comparison
	}{
		{"diff-dense", func(t *testing.T) *compare.Comparison { return captureComparison(t) }},
		{"diff-untrusted", func(t *testing.T) *compare.Comparison { return untrustedComparison(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, tc.name+".html", renderDiff(t, tc.c(t), stubJS))
		})
	}
}

// TestDiffHTMLDeterministic renders the captures' comparison twice, from separate reads,
// with the real ECharts, and a bucketed comparison twice, and wants the same bytes.
func TestDiffHTMLDeterministic(t *testing.T) {
	if !bytes.Equal(renderDiff(t, captureComparison(t), DefaultHTMLOptions()), renderDiff(t, captureComparison(t), DefaultHTMLOptions())) {
		t.Fatal("two renderings of the same comparison differ")
	}
	c := synthComparison(5000, 3000)
	if !bytes.Equal(renderDiff(t, c, stubJS), renderDiff(t, c, stubJS)) {
		t.Fatal("two renderings of the same bucketed comparison differ")
	}
}

var (
	tableRE = regexp.MustCompile(`(?s)<table id="([a-z-]+)">.*?</table>`)
	rowRE   = regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`)
	cellRE  = regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`)
)

// pageTables returns the cells of each table of a page by id: rows of unescaped cell text,
// the header first.
func pageTables(page string) map[string][][]string {
	out := map[string][][]string{}
	for _, m := range tableRE.FindAllStringSubmatch(page, -1) {
		var rows [][]string
		for _, r := range rowRE.FindAllStringSubmatch(m[0], -1) {
			var cells []string
			for _, c := range cellRE.FindAllStringSubmatch(r[1], -1) {
				cells = append(cells, html.UnescapeString(c[1]))
			}
			rows = append(rows, cells)
		}
		out[m[1]] = rows
	}
	return out
}

// TestDiffHTMLTable checks that the page's benchstat table holds what DiffText prints,
// string for string, and the counts.
func TestDiffHTMLTable(t *testing.T) {
	for name, c := range map[string]*compare.Comparison{"captures": captureComparison(t), "untrusted": untrustedComparison(t)} {
		t.Run(name, func(t *testing.T) {
			var text bytes.Buffer
			if err := DiffText(&text, c, 0); err != nil {
				t.Fatal(err)
			}
			tables := pageTables(string(renderDiff(t, c, stubJS)))
			rows := tables["diff-table"]
			if len(rows) < 2 {
				t.Fatalf("no benchstat table: %v", rows)
			}
			nrows := 0
			for _, r := range rows[1:] {
				if len(r) != 7 {
					t.Fatalf("row %q: %d cells, want 7", r, len(r))
				}
				// DiffText's row layout, filled with the page's cells.
				line := strings.TrimRight(fmtDiffLine(r), " ") + "\n"
				if !strings.Contains(text.String(), line) {
					t.Errorf("DiffText has no line %q", line)
				}
				nrows++
			}
			if rows[len(rows)-1][0] != "whole step" {
				t.Errorf("last row %q, want the whole step", rows[len(rows)-1])
			}
			// Every row of DiffText's table is in the page.
			medians := text.String()[strings.Index(text.String(), "Medians per"):strings.Index(text.String(), "Means per")]
			if got := strings.Count(medians, "(p="); got != nrows {
				t.Errorf("DiffText has %d rows, the page %d", got, nrows)
			}
			counts := tables["diff-counts"]
			if len(counts) != 7 || counts[0][1] != c.Base.Label || counts[0][2] != c.New.Label {
				t.Errorf("counts table %q", counts)
			}
		})
	}
}

func fmtDiffLine(r []string) string {
	var b bytes.Buffer
	ew := &errWriter{w: &b}
	ew.printf("%-*s  %9s %-6s  %9s %-6s %9s %s", 12, r[0], r[1], r[2], r[3], r[4], r[5], r[6])
	return b.String()
}

// TestDiffHTMLContent checks the parts of the page of a comparison with kernel changes,
// NCCL kernels and warnings.
func TestDiffHTMLContent(t *testing.T) {
	c := untrustedComparison(t)
	page := string(renderDiff(t, c, stubJS))
	tables := pageTables(page)
	for _, id := range []string{"sides", "diff-table", "diff-counts", "diff-nccl", "diff-appeared", "diff-vanished", "diff-variants"} {
		if len(tables[id]) < 2 {
			t.Errorf("table %s: %q", id, tables[id])
		}
	}
	if got := tables["diff-nccl"]; len(got) != 3 || got[1][0] != payload || got[2][4] != payload {
		t.Errorf("NCCL table %q", got)
	}
	if got := tables["diff-appeared"]; !slices.ContainsFunc(got, func(r []string) bool { return len(r) == 5 && r[3] == payload && r[4] == payload }) ||
		!slices.ContainsFunc(got, func(r []string) bool { return len(r) == 5 && r[4] == untrustedKernel }) {
		t.Errorf("appeared table %q does not name the new kernels", got)
	}
	if got := tables["diff-vanished"]; !slices.ContainsFunc(got, func(r []string) bool { return len(r) == 5 && r[3] == "flash_fwd_splitkv_kernel" }) {
		t.Errorf("vanished table %q lacks flash_fwd_splitkv_kernel", got)
	}
	if got := tables["diff-variants"]; len(got) != 2 || !strings.Contains(got[1][4], "tilesize64x128x64") || !strings.Contains(got[1][5], "tilesize128x128x64") {
		t.Errorf("variants table %q", got)
	}
	for _, want := range []string{"Note: " + html.EscapeString(diffCaveat(c)), `id="warnings"`, `<p class="lead">Decode step: `,
		`<dt>Phase compared</dt><dd>decode</dd>`, `<td class="num better">-`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	ws := diffWarnings(c)
	if len(ws) == 0 || strings.Count(page, "<li>") < len(ws) {
		t.Errorf("warnings %q not all on the page", ws)
	}

	// The captures have no kernel changes and no NCCL kernels: the page says so.
	page = string(renderDiff(t, captureComparison(t), stubJS))
	if !strings.Contains(page, "No kernel family appeared, vanished or changed variant") || strings.Contains(page, `id="diff-nccl"`) {
		t.Error("captures' page: kernel changes or NCCL section wrong")
	}
}

// TestDiffHTMLUntrusted checks that labels, paths, kernel names and NCCL fields that hold
// markup stay text: in HTML, in the charts' JSON, and in the legend and titles.
func TestDiffHTMLUntrusted(t *testing.T) {
	page := string(renderDiff(t, untrustedComparison(t), DefaultHTMLOptions()))
	outside := strings.Replace(page, echartsMinJS, "", 1)
	for _, bad := range []string{"<img", "</script><img", "<!--", "onerror=alert(1)>"} {
		if strings.Contains(outside, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	charts := jsonBlock.FindAllStringSubmatch(page, -1)
	if got, want := len(scriptOpen.FindAllString(page, -1)), 2+len(charts); got != want {
		t.Errorf("%d <script> elements, want %d", got, want)
	}
	if got, want := strings.Count(strings.ToLower(page), "</script"), 2+len(charts); got != want {
		t.Errorf("%d </script, want %d", got, want)
	}
	var ids []string
	for _, m := range charts {
		ids = append(ids, m[1])
	}
	if got := strings.Join(ids, " "); got != "diff-cats diff-steps" {
		t.Errorf("charts %q, want diff-cats diff-steps", got)
	}
	// Escaped in the title, heading, facts, sides table, benchstat and counts headers,
	// NCCL table, kernel tables and warnings.
	if want := `&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;`; strings.Count(page, want) < 10 {
		t.Errorf("the escaped payload is in the page %d times, want at least 10", strings.Count(page, want))
	}
	for _, want := range []string{
		`<td class="name family">&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</td>`,
		`<td class="name names">evil&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;_kernel</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the kernel family or name %q is not in the page as text", want)
		}
	}
	if want := `\u003c/script\u003e\u003cimg src=x onerror=alert(1)\u003e`; !strings.Contains(page, want) {
		t.Errorf("chart JSON does not hold %q", want)
	}
	for _, m := range charts {
		var opt struct {
			Title  struct{ Text string } `json:"title"`
			Series []struct{ Name string }
		}
		if err := json.Unmarshal([]byte(m[2]), &opt); err != nil {
			t.Fatalf("chart %s: option is not JSON: %v", m[1], err)
		}
		if !strings.Contains(opt.Title.Text, payload) || len(opt.Series) == 0 || opt.Series[0].Name != payload {
			t.Errorf("chart %s: title %q, first series %q: the label does not come back intact", m[1], opt.Title.Text, opt.Series)
		}
	}
}

// TestDiffHTMLLoadsNothing: no reference to load anything, no http outside ECharts, and
// ECharts inlined once.
func TestDiffHTMLLoadsNothing(t *testing.T) {
	for name, c := range map[string]*compare.Comparison{"captures": captureComparison(t), "untrusted": untrustedComparison(t)} {
		page := string(renderDiff(t, c, DefaultHTMLOptions()))
		if m := loadRefs.FindAllString(page, 5); m != nil {
			t.Errorf("%s: page references something to load: %q", name, m)
		}
		outside := strings.Replace(page, echartsMinJS, "", 1)
		if len(outside) != len(page)-len(echartsMinJS) || strings.Count(page, echartsMinJS) != 1 {
			t.Fatalf("%s: the ECharts source is not inlined verbatim, once", name)
		}
		for _, tag := range []string{"<link", "<iframe", "<img", "<object", "<embed"} {
			if strings.Contains(strings.ToLower(outside), tag) {
				t.Errorf("%s: page holds %s", name, tag)
			}
		}
		if i := strings.Index(strings.ToLower(outside), "http"); i >= 0 {
			t.Errorf("%s: page holds %q outside ECharts", name, outside[max(0, i-40):min(len(outside), i+40)])
		}
	}
}

// chartOption decodes the option of chart id.
func chartOption(t *testing.T, page, id string, v any) {
	t.Helper()
	for _, m := range jsonBlock.FindAllStringSubmatch(page, -1) {
		if m[1] == id {
			if err := json.Unmarshal([]byte(m[2]), v); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no chart %s", id)
}

type seriesJSON struct {
	Name       string
	XAxisIndex int `json:"xAxisIndex"`
	Data       []json.RawMessage
}

// TestDiffHTMLCharts checks the charts' data: one bar per shown category and side plus
// the whole step, labels on the new side's bars, and every step of both sides; above
// 2,000 steps buckets of the same size on both sides, said in the title.
func TestDiffHTMLCharts(t *testing.T) {
	c := captureComparison(t)
	page := string(renderDiff(t, c, stubJS))
	var cats struct {
		XAxis  []struct{ Data []string } `json:"xAxis"`
		Series []seriesJSON
	}
	chartOption(t, page, "diff-cats", &cats)
	shown := shownRows(c)
	if len(cats.Series) != 4 || len(cats.XAxis) != 2 || len(cats.XAxis[0].Data) != len(shown)-1 || cats.XAxis[1].Data[0] != "whole step" {
		t.Fatalf("diff-cats: axes %v, %d series", cats.XAxis, len(cats.Series))
	}
	for i, s := range cats.Series {
		want := len(shown) - 1
		if i >= 2 {
			want = 1
		}
		if len(s.Data) != want {
			t.Errorf("diff-cats series %d (%s): %d bars, want %d", i, s.Name, len(s.Data), want)
		}
	}
	if !strings.Contains(string(cats.Series[3].Data[0]), `"formatter":"-82.03%"`) {
		t.Errorf("the whole step's new bar is not labelled with its change: %s", cats.Series[3].Data[0])
	}

	var steps struct {
		Title  struct{ Text string } `json:"title"`
		Series []seriesJSON
	}
	chartOption(t, page, "diff-steps", &steps)
	if len(steps.Series) != 2 || len(steps.Series[0].Data) != c.Base.Steps || len(steps.Series[1].Data) != c.New.Steps {
		t.Errorf("diff-steps: %d series, want 2 of %d and %d points", len(steps.Series), c.Base.Steps, c.New.Steps)
	}

	big := string(renderDiff(t, synthComparison(5000, 3000), stubJS))
	chartOption(t, big, "diff-steps", &steps)
	if want := "(buckets of 5 steps: median, shortest and longest)"; !strings.Contains(steps.Title.Text, want) {
		t.Errorf("bucketed title %q lacks %q", steps.Title.Text, want)
	}
	want := map[string]int{"base median": 1000, "base shortest": 1000, "base longest": 1000, "new median": 600, "new shortest": 600, "new longest": 600}
	if len(steps.Series) != len(want) {
		t.Errorf("bucketed diff-steps: %d series, want %d", len(steps.Series), len(want))
	}
	for _, s := range steps.Series {
		if len(s.Data) != want[s.Name] {
			t.Errorf("bucketed series %q: %d points, want %d", s.Name, len(s.Data), want[s.Name])
		}
	}
	t.Logf("captures: %d bytes with stub ECharts; 5000 vs 3000 steps: %d bytes", len(page), len(big))
}

// TestDiffHTMLEdges: equal labels, a side without steps of the phase, several runs per
// side, and a writer that fails.
func TestDiffHTMLEdges(t *testing.T) {
	a, b := synthReport(6, 1), synthReport(6, 1)
	same := compare.Compare(compare.Side{Label: "x", Reports: []*findings.Report{findings.Of(a)}},
		compare.Side{Label: "x", Reports: []*findings.Report{findings.Of(b)}}, breakdown.Decode, compare.Options{})
	page := string(renderDiff(t, same, stubJS))
	if !strings.Contains(page, `"name":"base x"`) || !strings.Contains(page, `"name":"new x"`) {
		t.Error("equal labels are not told apart in the charts")
	}

	// Prefill only on the new side: no decode steps there.
	p := synthReport(6, 1)
	for i := range p.Devices[0].Steps {
		p.Devices[0].Steps[i].Phase = breakdown.Prefill
	}
	empty := compare.Compare(compare.Side{Label: "a", Reports: []*findings.Report{findings.Of(a)}},
		compare.Side{Label: "b", Reports: []*findings.Report{findings.Of(p)}}, breakdown.Decode, compare.Options{})
	page = string(renderDiff(t, empty, stubJS))
	var steps struct{ Series []seriesJSON }
	chartOption(t, page, "diff-steps", &steps)
	if len(steps.Series) != 1 || steps.Series[0].Name != "a" {
		t.Errorf("one side without steps: series %v", steps.Series)
	}
	if !strings.Contains(page, "not comparable") || !strings.Contains(page, "b has no decode steps") {
		t.Error("the page does not say there is nothing to compare")
	}

	runs := compare.Compare(compare.Side{Label: "a", Reports: []*findings.Report{findings.Of(a), findings.Of(synthReport(4, 2))}},
		compare.Side{Label: "b", Reports: []*findings.Report{findings.Of(b)}}, breakdown.Decode, compare.Options{PerRun: true, MinChange: 0.01})
	page = string(renderDiff(t, runs, stubJS))
	chartOption(t, page, "diff-steps", &steps)
	if len(steps.Series[0].Data) != 5+3 { // the run of two devices: one point per aligned step
		t.Errorf("two runs (one of two devices): %d base points, want 8", len(steps.Series[0].Data))
	}
	for _, want := range []string{"aligned steps (each the step on the slowest rank); runs one after another", "run (each run&#39;s mean and median per step are its samples)",
		"cannot test: one sample per run, 2 on a and 1 on b"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	err := DiffHTML(&failWriter{n: 4000}, same, stubJS)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("err = %v, want the writer's error", err)
	}
	if err := DiffHTML(&bytes.Buffer{}, same, HTMLOptions{EChartsJS: "</script>"}); err == nil {
		t.Error("EChartsJS with </script: no error")
	}
	var buf bytes.Buffer
	if err := DiffHTML(&buf, same, HTMLOptions{}); err != nil || !strings.Contains(buf.String(), "<table") {
		t.Errorf("no ECharts: err %v", err)
	}
}

// TestDiffHTMLSize measures the page of the captures' comparison and of a long run.
func TestDiffHTMLSize(t *testing.T) {
	n := len(renderDiff(t, captureComparison(t), DefaultHTMLOptions()))
	big := len(renderDiff(t, synthComparison(20000, 20000), DefaultHTMLOptions()))
	t.Logf("captures: %d bytes; 20000 vs 20000 steps: %d bytes (ECharts %d)", n, big, len(echartsMinJS))
	if n > 2<<20 || big > 3<<20 {
		t.Errorf("pages of %d and %d bytes, want under 2 and 3 MB", n, big)
	}
}

// capturePair compares two captures of testdata/traces with diff's default options.
func capturePair(t *testing.T, base, new string) *compare.Comparison {
	t.Helper()
	dir := filepath.Join("..", "testdata", "traces")
	side := func(name string) compare.Side {
		r := traceReport(t, filepath.Join(dir, name+".sqlite.gz"), breakdown.Options{})
		return compare.Side{Label: name, Reports: []*findings.Report{findings.Of(r)}}
	}
	return compare.Compare(side(base), side(new), breakdown.Decode, compare.Options{MinChange: 0.01})
}

// TestDiffHTMLWhatChanged: the page's What changed section on the real pairs. 2 GPUs,
// eager -> graphs: the story table has allreduce with rank 0 under it, and the ranks table
// each rank's wait and transfer before and after. Eager -> graph-level capture: the
// categories are in the not-comparable table with the reason, and no table shows -100%.
func TestDiffHTMLWhatChanged(t *testing.T) {
	tp2 := capturePair(t, "tp2-moe-eager", "tp2-moe-graph")
	tables := pageTables(string(renderDiff(t, tp2, stubJS)))
	story := tables["diff-story"]
	i := slices.IndexFunc(story, func(r []string) bool { return len(r) == 8 && r[0] == "allreduce" && r[1] == "all" })
	if i < 0 || i+1 >= len(story) || story[i+1][1] != "0" || !strings.HasPrefix(story[i+1][4], "-9.") || !strings.HasSuffix(story[i+1][4], "ms") ||
		!strings.HasPrefix(story[i+1][7], "(p=0.0") {
		t.Errorf("story table has no allreduce row with rank 0's tested drop under it: %q", story)
	}
	ranks := tables["diff-ranks"]
	if len(ranks) != 3 || ranks[1][0] != "0" || !strings.HasPrefix(ranks[1][1], "10.") || !strings.HasSuffix(ranks[1][2], "µs") || ranks[2][5] != "106 of 108" {
		t.Errorf("ranks table %q; want rank 0 waiting ~10ms before, µs after, rank 1 last at 106 of 108", ranks)
	}
	if _, ok := tables["diff-not-comparable"]; ok {
		t.Error("a not-comparable table on a comparable pair")
	}

	gl := capturePair(t, "hf-qwen3moe-eager", "hf-qwen3moe-compile-graphlevel")
	page := string(renderDiff(t, gl, stubJS))
	tables = pageTables(page)
	nc := tables["diff-not-comparable"]
	if len(nc) != 2 || !strings.HasPrefix(nc[1][0], "gemm, attention") || !strings.Contains(nc[1][1], "--cuda-graph-trace=node") {
		t.Errorf("not-comparable table %q", nc)
	}
	for _, id := range []string{"diff-story", "diff-table", "diff-means"} {
		for _, r := range tables[id] {
			for _, cell := range r {
				if strings.Contains(cell, "-100") {
					t.Errorf("%s: a -100%% cell in %q", id, r)
				}
			}
		}
	}
	if w, st := strings.Index(page, `id="warnings"`), strings.Index(page, `id="what-changed"`); w < 0 || st < 0 || w > st {
		t.Errorf("warnings at %d, what changed at %d: want the warnings first", w, st)
	}
}
