package render

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// screenshotDir holds the README's screenshots, rewritten by `go test -update` (make
// golden) from the real captures below; they are never compared (Chromium's fonts vary).
var screenshotDir = filepath.Join("..", "testdata", "screenshots")

// firstScreen measures a page at the viewport's width: where the headline and the
// findings end, every element that is wider than the page or scrolls sideways, and the
// document's own width.
const firstScreen = `(() => {
  const bottom = sel => { const e = document.querySelector(sel); return e ? e.getBoundingClientRect().bottom + window.scrollY : -1; };
  const out = {width: window.innerWidth, docWidth: document.documentElement.scrollWidth,
    headline: bottom("#answer ul.headline"), limiter: bottom("#answer p.limiter"), findings: bottom("#findings"),
    findingItems: document.querySelectorAll("#findings li").length, wide: []};
  for (const el of document.querySelectorAll("body *")) {
    const cs = getComputedStyle(el);
    if (cs.display === "none") continue;
    const r = el.getBoundingClientRect();
    const what = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.split(" ")[0] : "");
    if (el.scrollWidth > el.clientWidth + 1 && cs.overflowX !== "visible" && cs.overflowX !== "hidden" && cs.overflowX !== "clip")
      out.wide.push(what + " scrolls: " + el.scrollWidth + " > " + el.clientWidth);
    else if (r.right > window.innerWidth + 1 && r.width > 0)
      out.wide.push(what + " ends at " + Math.round(r.right) + " px");
  }
  return out;
})()`

// timelineView asks the page about a step-timeline chart: the items of each series and
// the rectangles drawn.
const timelineView = `(() => {
  const c = echarts.getInstanceByDom(document.getElementById(__ID__));
  const o = c.getOption();
  const out = {series: [], drawn: 0};
  o.series.forEach((s, i) => out.series.push({name: s.name, items: c.getModel().getSeriesByIndex(i).getData().count()}));
  c.getZr().storage.getDisplayList(true).forEach(el => { if (el.type === "rect") out.drawn++; });
  return out;
})()`

// tipText shows the tooltip of item k of series s of chart ID and returns the tooltip's
// text and the number of elements inside it.
const tipText = `(() => {
  try {
    const el = document.getElementById(__ID__);
    const c = echarts.getInstanceByDom(el);
    c.dispatchAction({type: "showTip", seriesIndex: __S__, dataIndex: __K__});
    const tips = [...el.querySelectorAll("div")].filter(d => d.style.position === "absolute" && d.style.display !== "none" && d.textContent);
    const tip = tips[tips.length - 1];
    return {text: tip ? tip.textContent : "", elements: tip ? tip.querySelectorAll("*:not(span):not(b):not(br):not(div)").length : -1};
  } catch (e) { return {text: "error: " + e, elements: -1}; }
})()`

type firstScreenView struct {
	Width        int      `json:"width"`
	DocWidth     int      `json:"docWidth"`
	Headline     float64  `json:"headline"`
	Limiter      float64  `json:"limiter"`
	Findings     float64  `json:"findings"`
	FindingItems int      `json:"findingItems"`
	Wide         []string `json:"wide"`
}

// TestFirstScreen opens the report and the diff of the 2-GPU eager capture
// (tp2-moe-eager, and its diff against the CUDA-graph capture tp2-moe-graph) in headless
// Chromium at 1400 and 1000 px and checks what a person sees first: the headline, the
// limiter and every finding end within the first 900 px; no element is wider than the
// page or scrolls sideways; the step-timeline chart has one bar per activity of the kept
// step on every rank (and draws them), and its tooltip shows a kernel's name as text. With
// -update it rewrites the README's screenshots in testdata/screenshots.
func TestFirstScreen(t *testing.T) {
	browserCtx := startBrowser(t)
	dir := filepath.Join("..", "testdata", "traces")
	eager := traceReport(t, filepath.Join(dir, "tp2-moe-eager.sqlite.gz"), breakdown.Options{})
	graph := traceReport(t, filepath.Join(dir, "tp2-moe-graph.sqlite.gz"), breakdown.Options{})
	eager.Path, graph.Path = "tp2-moe-eager.sqlite", "tp2-moe-graph.sqlite" // each read had its own temporary folder
	fe, fg := findings.Of(eager), findings.Of(graph)
	c := compare.Compare(compare.Side{Label: "eager", Reports: []*findings.Report{fe}},
		compare.Side{Label: "cuda-graphs", Reports: []*findings.Report{fg}}, breakdown.Decode, compare.Options{})
	if len(eager.Devices) != 2 || len(eager.Timelines) == 0 {
		t.Fatalf("tp2-moe-eager: %d devices, %d step timelines", len(eager.Devices), len(eager.Timelines))
	}
	tmp := t.TempDir()
	report := filepath.Join(tmp, "report.html")
	diff := filepath.Join(tmp, "diff.html")
	if err := os.WriteFile(report, render(t, eager, DefaultHTMLOptions()), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(diff, renderDiff(t, c, DefaultHTMLOptions()), 0o666); err != nil {
		t.Fatal(err)
	}
	nFindings := 0 // one item per rule: listed findings and warnings (minor ones share a line)
	for _, g := range fe.Groups() {
		if !g.Top().Minor() {
			nFindings++
		}
	}
	art := artifactDir(t)
	for _, page := range []struct {
		name, file string
		findings   int // list items expected in #findings; -1: any
	}{{"report", report, nFindings}, {"diff", diff, -1}} {
		for _, width := range []int64{1400, 1000} {
			t.Run(fmt.Sprintf("%s-%d", page.name, width), func(t *testing.T) {
				tabCtx, cancel := chromedp.NewContext(browserCtx)
				defer cancel()
				if err := chromedp.Do(tabCtx, chromedp.EmulateViewport(width, 900), chromedp.Navigate("file://"+filepath.ToSlash(page.file))); err != nil {
					t.Fatal(err)
				}
				raw, err := chromedp.Run(tabCtx, chromedp.Evaluate[[]byte](firstScreen))
				if err != nil {
					t.Fatal(err)
				}
				var v firstScreenView
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatal(err)
				}
				t.Logf("%d px: headline ends at %.0f px, limiter at %.0f, findings (%d) at %.0f; document %d px wide", v.Width, v.Headline, v.Limiter, v.FindingItems, v.Findings, v.DocWidth)
				for name, y := range map[string]float64{"headline": v.Headline, "limiter": v.Limiter, "findings": v.Findings} {
					if y < 0 || y > 900 {
						t.Errorf("%s ends at %.0f px, want within the first 900 px", name, y)
					}
				}
				if page.findings >= 0 && v.FindingItems != page.findings {
					t.Errorf("%d findings on the page, the report has %d", v.FindingItems, page.findings)
				}
				if v.DocWidth > v.Width {
					t.Errorf("the page is %d px wide in a %d px window", v.DocWidth, v.Width)
				}
				for _, w := range v.Wide {
					t.Errorf("sideways: %s", w)
				}
				if page.name == "report" {
					checkTimeline(t, tabCtx, eager)
				}
				shot, err := chromedp.Run(tabCtx, chromedp.CaptureScreenshot())
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("firstscreen-%s-%d.png", page.name, width)
				if err := os.WriteFile(filepath.Join(art, name), shot, 0o666); err != nil {
					t.Fatal(err)
				}
				if updating() && width == 1400 {
					if err := os.MkdirAll(screenshotDir, 0o777); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(screenshotDir, page.name+"-tp2-moe-eager.png"), shot, 0o666); err != nil {
						t.Fatal(err)
					}
					if page.name == "report" { // the median step's timeline alone
						tl, err := chromedp.Run(tabCtx, chromedp.Screenshot(chromedp.CSS("#timeline figure.chart-box")))
						if err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(filepath.Join(screenshotDir, "timeline-tp2-moe-eager.png"), tl, 0o666); err != nil {
							t.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// checkTimeline checks the median step's timeline chart against the report's kept step:
// one item per activity (kernels and memory operations) of every rank in the category
// series, at least as many rectangles drawn, and a kernel's name in its tooltip.
func checkTimeline(t *testing.T, tabCtx context.Context, r *breakdown.Report) {
	t.Helper()
	st := &r.Timelines[0]
	want, kernels := 0, 0
	for _, l := range st.Lanes {
		want += len(l.Activities)
		for _, a := range l.Activities {
			if a.Kind == breakdown.ActivityKernel {
				kernels++
			}
		}
	}
	id := `"timeline-` + st.Which + `"`
	raw, err := chromedp.Run(tabCtx, chromedp.Evaluate[[]byte](strings.Replace(timelineView, "__ID__", id, 1)))
	if err != nil {
		t.Fatal(err)
	}
	var view struct {
		Series []struct {
			Name  string `json:"name"`
			Items int    `json:"items"`
		} `json:"series"`
		Drawn int `json:"drawn"`
	}
	if err := json.Unmarshal(raw, &view); err != nil {
		t.Fatal(err)
	}
	got, first := 0, -1
	for i, s := range view.Series {
		if s.Name == "idle" || strings.HasPrefix(s.Name, "host: ") {
			continue
		}
		if first < 0 {
			first = i
		}
		got += s.Items
	}
	t.Logf("timeline %s: %d activities (%d kernels) on %d ranks, %d bars in the category series, %d rectangles drawn", st.Which, want, kernels, len(st.Lanes), got, view.Drawn)
	if got != want || kernels == 0 {
		t.Errorf("timeline %s: %d bars, the step has %d activities (%d kernels)", st.Which, got, want, kernels)
	}
	if view.Drawn < want {
		t.Errorf("timeline %s: %d rectangles drawn for %d bars", st.Which, view.Drawn, want)
	}
	js := strings.NewReplacer("__ID__", id, "__S__", fmt.Sprint(first), "__K__", "0").Replace(tipText)
	raw, err = chromedp.Run(tabCtx, chromedp.Evaluate[[]byte](js))
	if err != nil {
		t.Fatal(err)
	}
	var tip struct {
		Text     string `json:"text"`
		Elements int    `json:"elements"`
	}
	if err := json.Unmarshal(raw, &tip); err != nil {
		t.Fatal(err)
	}
	// The first item of the first category series, in Order: its kernel name.
	var name string
	for _, l := range st.Lanes {
		for _, a := range l.Activities {
			if a.Category.String() == view.Series[first].Name {
				name = a.Name
				break
			}
		}
		if name != "" {
			break
		}
	}
	if !strings.Contains(tip.Text, name) || tip.Elements != 0 {
		t.Errorf("timeline tooltip %q (%d elements beyond text markup), want the kernel name %q as text", tip.Text, tip.Elements, name)
	}
}
