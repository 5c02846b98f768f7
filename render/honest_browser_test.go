package render

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// honestView asks a page, with every <details> opened, for what a chart or table can get
// wrong: where each bar starts against its value axis's origin (per stack, the lowest bar
// of each category), the filled width of each stacked mean-step bar of the answer, the
// header words wider than their column, the body cells other than names that wrap, each
// chart's legend (its type, its box against the chart and the plot, the items it drew),
// each timeline's lanes without data, and the outlier marks of step charts and tables.
const honestView = `(() => {
  document.querySelectorAll("details").forEach(d => { d.open = true; });
  window.dispatchEvent(new Event("resize"));
  const out = {width: window.innerWidth, docWidth: document.documentElement.scrollWidth, bars: [], mix: [], narrow: [], wraps: [], legends: [], emptyLanes: [], pins: {}, outlierRows: document.querySelectorAll("tr.outlier").length, outlierLabels: {},
    shares: [], overlaps: [], titles: [], spans: [], constRows: [], captions: [], captionsSeen: 0, freeBreaks: []};
  const boxOf = el => { el.updateTransform && el.updateTransform(); const r = el.getBoundingRect().clone(); const m = el.getComputedTransform ? el.getComputedTransform() : el.transform; if (m) r.applyTransform(m); return r; };
  for (const el of document.querySelectorAll("div.chart")) {
    const c = echarts.getInstanceByDom(el);
    if (!c) continue;
    c.resize();
    const model = c.getModel();
    const stacks = {};
    model.eachSeries(s => {
      if (s.subType !== "bar" || !s.coordinateSystem || !s.coordinateSystem.getBaseAxis) return;
      const cs = s.coordinateSystem, base = cs.getBaseAxis(), val = cs.getOtherAxis(base);
      const origin = val.toGlobalCoord(val.dataToCoord(val.scale.getExtent()[0]));
      const data = s.getData(), dim = data.mapDimension(val.dim);
      const pins = (s.option.markPoint && s.option.markPoint.data) || [];
      if (pins.length) out.pins[el.id] = (out.pins[el.id] || 0) + pins.length;
      data.each(k => {
        const l = data.getItemLayout(k), v = data.get(dim, k);
        if (!l || !(v > 0)) return;
        const at = base.dim === "y" ? l.x : l.y;
        const key = (s.get("stack") || s.name) + "/" + (s.get("xAxisIndex") || 0) + "/" + k;
        if (!(key in stacks)) stacks[key] = {chart: el.id, series: s.name, item: k, base: at, origin: origin, axis: val.type};
      });
    });
    Object.values(stacks).forEach(b => out.bars.push(b));
    // Value labels drawn (not hidden), their boxes; a share chart's bars, value and length.
    const labels = [];
    model.eachSeries(s => {
      const data = s.getData();
      data.each(k => {
        const g = data.getItemGraphicEl(k), t = g && g.getTextContent && g.getTextContent();
        if (t && !t.ignore && !t.invisible && t.style && t.style.text) labels.push({text: String(t.style.text), r: boxOf(t)});
        if (/^share-/.test(el.id) && s.subType === "bar") {
          const l = data.getItemLayout(k), v = data.get(data.mapDimension("x"), k);
          if (l && v > 0) out.shares.push({chart: el.id, axis: s.coordinateSystem.getBaseAxis().dim === "y" ? s.coordinateSystem.getOtherAxis(s.coordinateSystem.getBaseAxis()).type : "?", value: v, length: Math.abs(l.width)});
        }
      });
    });
    for (let a = 0; a < labels.length; a++) for (let b = a + 1; b < labels.length; b++) {
      const p = labels[a].r, q = labels[b].r;
      const w = Math.min(p.x + p.width, q.x + q.width) - Math.max(p.x, q.x), h = Math.min(p.y + p.height, q.y + q.height) - Math.max(p.y, q.y);
      if (w > 1 && h > 1) out.overlaps.push(el.id + ": " + JSON.stringify(labels[a].text) + " over " + JSON.stringify(labels[b].text));
    }
    // The title and subtitle: within the chart, above its legend and plots.
    const title = model.getComponent("title");
    if (title && title.get("show") !== false) {
      const r = boxOf(c.getViewOfComponentModel(title).group);
      let below = 1e9;
      const lg = model.getComponent("legend");
      if (lg && lg.get("show") !== false) { const lr = boxOf(c.getViewOfComponentModel(lg).group); if (lr.height > 0) below = Math.min(below, lr.y); }
      model.eachComponent("grid", g => { if (g.coordinateSystem) below = Math.min(below, g.coordinateSystem.getRect().y); });
      out.titles.push({chart: el.id, right: r.x + r.width, bottom: r.y + r.height, width: c.getWidth(), below: below, subtext: String(title.get("subtext") || "")});
    }
    if (el.getAttribute("data-kind") === "timeline") {
      const ext = model.getComponent("xAxis").axis.scale.getExtent();
      out.spans.push({chart: el.id, min: ext[0], max: ext[1]});
    }
    if (/^heat-/.test(el.id)) {
      model.eachSeries(s => {
        const data = s.getData(), rows = {};
        data.each(k => { const v = s.option.data[k].value || s.option.data[k]; (rows[v[1]] = rows[v[1]] || []).push({k: k, v: v[2], rel: v[3]}); });
        Object.entries(rows).forEach(([row, cells]) => {
          if (cells.length > 1 && cells.every(x => x.v === cells[0].v)) {
            const fill = String((data.getItemVisual(cells[0].k, "style") || {}).fill || data.getItemVisual(cells[0].k, "color") || "");
            out.constRows.push({chart: el.id, row: Number(row), rel: cells[0].rel, fill: fill});
          }
        });
      });
    }
    const legend = model.getComponent("legend");
    if (legend && legend.get("show") !== false) {
      const view = c.getViewOfComponentModel(legend);
      const g = view.group;
      g.updateTransform();
      const r = g.getBoundingRect().clone();
      if (g.transform) r.applyTransform(g.transform);
      const grid = model.getComponent("grid");
      const plotTop = grid && grid.coordinateSystem ? grid.coordinateSystem.getRect().y : 1e9;
      out.legends.push({chart: el.id, type: legend.get("type") || "plain", items: legend.getData().length,
        drawn: view.getContentGroup ? view.getContentGroup().childCount() : -1,
        right: r.x + r.width, bottom: r.y + r.height, width: c.getWidth(), plotTop: plotTop});
    }
    if (el.getAttribute("data-kind") === "timeline") {
      const o = c.getOption(), lanes = o.yAxis[0].data.length, used = new Set();
      o.series.forEach(s => s.data.forEach(d => {
        const v = d.value || d;
        if (s.name === "idle") { for (let i = v[0]; i <= v[3]; i++) used.add(i); } else used.add(v[0]);
      }));
      for (let i = 0; i < lanes; i++) if (!used.has(i)) out.emptyLanes.push(el.id + " " + o.yAxis[0].data[i]);
    }
    if (/^steps-/.test(el.id)) {
      const o = c.getOption();
      out.outlierLabels[el.id] = (o.xAxis[0].data || []).filter(d => d && d.textStyle && d.textStyle.color === "#c62828").map(d => d.value);
    }
  }
  for (const row of document.querySelectorAll("#mix .mix-row")) {
    const bar = row.querySelector(".mix-bar");
    let filled = 0;
    bar.querySelectorAll("span").forEach(s => { filled += s.getBoundingClientRect().width; });
    out.mix.push({label: row.querySelector(".mix-label").textContent, filled: filled, full: bar.clientWidth});
  }
  const ctx = document.createElement("canvas").getContext("2d");
  for (const th of document.querySelectorAll("th")) {
    if (!th.offsetParent) continue;
    const cs = getComputedStyle(th);
    ctx.font = cs.fontWeight + " " + cs.fontSize + " " + cs.fontFamily;
    const upright = cs.writingMode.startsWith("vertical"); // its words run along its height
    const room = upright ? th.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom) : th.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    for (const w of th.textContent.split(/\s+/)) {
      if (w && ctx.measureText(w).width > room + 0.5) out.narrow.push(th.closest("table").id + ": " + JSON.stringify(w) + " " + Math.round(ctx.measureText(w).width) + " > " + Math.round(room) + " px");
    }
  }
  // Captions: as wide as their text or as the page, not as a narrow table.
  for (const p of document.querySelectorAll(".table-wrap > p.caption, caption")) {
    if (!p.offsetParent) continue;
    out.captionsSeen++;
    const cs = getComputedStyle(p);
    ctx.font = cs.fontWeight + " " + cs.fontSize + " " + cs.fontFamily;
    const text = ctx.measureText(p.textContent).width, room = p.closest(".table-wrap").parentElement.clientWidth;
    if (p.clientWidth + 1 < Math.min(text, room)) out.captions.push(JSON.stringify(p.textContent.slice(0, 40)) + " " + p.clientWidth + " px of " + Math.round(Math.min(text, room)));
  }
  // Prose cells break between words, not inside one.
  for (const td of document.querySelectorAll("td.free")) {
    if (!td.offsetParent) continue;
    const cs = getComputedStyle(td);
    ctx.font = cs.fontWeight + " " + cs.fontSize + " " + cs.fontFamily;
    const room = td.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    for (const w of td.textContent.split(/[\s\u200b]+/)) {
      if (w && ctx.measureText(w).width > room + 0.5) { out.freeBreaks.push((td.closest("table").id || "table") + ": " + JSON.stringify(w) + " in " + Math.round(room) + " px"); break; }
    }
  }
  for (const td of document.querySelectorAll("td")) {
    if (!td.offsetParent || td.classList.contains("name") || td.classList.contains("free") || td.hasAttribute("colspan") || !td.textContent.trim()) continue;
    const rg = document.createRange();
    rg.selectNodeContents(td);
    const tops = new Set([...rg.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
    if (tops.size > 1) out.wraps.push((td.closest("table").id || "table") + ": " + JSON.stringify(td.textContent) + " on " + tops.size + " lines");
  }
  return out;
})()`

type honestBar struct {
	Chart, Series, Axis string
	Item                int
	Base, Origin        float64
}

type honestPage struct {
	Width, DocWidth int
	Bars            []honestBar
	Mix             []struct {
		Label        string
		Filled, Full float64
	}
	Narrow  []string
	Wraps   []string
	Legends []struct {
		Chart, Type                   string
		Items, Drawn                  int
		Right, Bottom, Width, PlotTop float64
	}
	EmptyLanes    []string
	Pins          map[string]int
	OutlierRows   int
	OutlierLabels map[string][]string
	Shares        []struct {
		Chart, Axis   string
		Value, Length float64
	}
	Overlaps []string
	Titles   []struct {
		Chart, Subtext              string
		Right, Bottom, Width, Below float64
	}
	Spans []struct {
		Chart    string
		Min, Max float64
	}
	ConstRows []struct {
		Chart string
		Row   int
		Rel   float64
		Fill  string
	}
	Captions     []string
	CaptionsSeen int
	FreeBreaks   []string
}

// TestChartsHonest opens real reports and diffs in headless Chromium at 1400 and 1000 px
// and checks that the charts and tables do not mislead or break: every bar (the lowest of
// each stack) starts at its value axis's origin, log axes included (the share chart drew
// its bars from 1%: the smallest category got the longest bar); the stacked mean-step bars
// of a diff's or a multi-GPU report's answer are on one time scale (their filled widths in
// the ratio of their means); no table column is narrower than a word of its header, and no
// cell but a name wraps; every legend is a plain one that drew all its items within the
// chart, above the plot (the timeline's paginated legend clipped at 1000 px); no timeline
// lane is empty; and the outlier step of slow-step is marked in its step chart (a pin and
// a red label) and its step table.
func TestChartsHonest(t *testing.T) {
	browserCtx := startBrowser(t)
	dir := filepath.Join("..", "testdata", "traces")
	load := func(name string) *breakdown.Report {
		r := traceReport(t, filepath.Join(dir, name+".sqlite.gz"), breakdown.Options{})
		r.Path = name + ".sqlite"
		return r
	}
	eager, graph, slow, nvtx := load("tp2-moe-eager"), load("tp2-moe-graph"), load("slow-step"), load("tp2-moe-eager-nvtx")
	if len(slow.Devices[0].Summary.Outliers.Steps) != 1 {
		t.Fatalf("slow-step: %d outlier steps, want 1", len(slow.Devices[0].Summary.Outliers.Steps))
	}
	c := compare.Compare(compare.Side{Label: "eager", Reports: []*findings.Report{findings.Of(eager)}},
		compare.Side{Label: "graph", Reports: []*findings.Report{findings.Of(graph)}}, breakdown.Decode, compare.Options{})
	tmp := t.TempDir()
	pages := []struct {
		name  string
		html  []byte
		means []float64 // of the answer's mix rows, in order: one time scale
	}{
		{"report-tp2", render(t, eager, DefaultHTMLOptions()), []float64{float64(eager.Devices[0].Summary.Mean), float64(eager.Devices[1].Summary.Mean)}},
		{"report-slow", render(t, slow, DefaultHTMLOptions()), nil},
		{"report-tp2-nvtx", render(t, nvtx, DefaultHTMLOptions()), nil}, // ten categories and NVTX labels in the step table
		{"diff-tp2", renderDiff(t, c, DefaultHTMLOptions()), []float64{float64(c.Base.MeanStep), float64(c.New.MeanStep)}},
		{"diff-dense", renderDiff(t, captureComparison(t), DefaultHTMLOptions()), nil},
	}
	sawLog, sawConst := false, false
	for _, p := range pages {
		file := filepath.Join(tmp, p.name+".html")
		if err := os.WriteFile(file, p.html, 0o666); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int64{1400, 1000} {
			t.Run(fmt.Sprintf("%s-%d", p.name, width), func(t *testing.T) {
				tabCtx, cancel := chromedp.NewContext(browserCtx)
				defer cancel()
				if err := chromedp.Do(tabCtx, chromedp.EmulateViewport(width, 900), chromedp.Navigate("file://"+filepath.ToSlash(file))); err != nil {
					t.Fatal(err)
				}
				raw, err := chromedp.Run(tabCtx, chromedp.Evaluate[[]byte](honestView))
				if err != nil {
					t.Fatal(err)
				}
				var v honestPage
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatal(err)
				}
				if len(v.Bars) == 0 {
					t.Fatal("no bars measured")
				}
				if v.DocWidth > v.Width {
					t.Errorf("the page is %d px wide in a %d px window", v.DocWidth, v.Width)
				}
				for _, b := range v.Bars {
					sawLog = sawLog || b.Axis == "log"
					if math.Abs(b.Base-b.Origin) > 1 {
						t.Errorf("%s %s bar %d starts at %.0f px, its %s axis's origin is at %.0f px", b.Chart, b.Series, b.Item, b.Base, b.Axis, b.Origin)
					}
				}
				if p.means != nil {
					if len(v.Mix) != len(p.means) {
						t.Fatalf("%d mean-step bars, want %d", len(v.Mix), len(p.means))
					}
					longest := slicesMax(p.means)
					for i, m := range v.Mix {
						want := m.Full * p.means[i] / longest
						if math.Abs(m.Filled-want) > math.Max(3, 0.02*m.Full) {
							t.Errorf("%s: filled %.0f of %.0f px, want %.0f (its mean over the longest, one time scale)", m.Label, m.Filled, m.Full, want)
						}
					}
				}
				for _, n := range v.Narrow {
					t.Errorf("column narrower than its header word: %s", n)
				}
				for _, w := range v.Wraps {
					t.Errorf("cell wraps: %s", w)
				}
				for _, l := range v.Legends {
					if l.Type == "scroll" || l.Drawn != l.Items || l.Right > l.Width+1 || l.Bottom > l.PlotTop+1 {
						t.Errorf("%s legend: %s, %d of %d items drawn, ends at %.0f px of %.0f, bottom %.0f, plot from %.0f", l.Chart, l.Type, l.Drawn, l.Items, l.Right, l.Width, l.Bottom, l.PlotTop)
					}
				}
				for _, e := range v.EmptyLanes {
					t.Errorf("empty timeline lane: %s", e)
				}
				// Shares on a linear axis: each bar's length in proportion to its share.
				k := map[string]float64{} // px per percent, per chart
				for _, sh := range v.Shares {
					if sh.Axis != "value" {
						t.Errorf("%s: shares on a %s axis, want a linear (value) one", sh.Chart, sh.Axis)
					}
					if k[sh.Chart] == 0 {
						k[sh.Chart] = sh.Length / sh.Value
					}
					if want := k[sh.Chart] * sh.Value; math.Abs(sh.Length-want) > math.Max(1.5, 0.01*want) {
						t.Errorf("%s: a %.2f%% share drawn %.0f px long, want %.0f (linear)", sh.Chart, sh.Value, sh.Length, want)
					}
				}
				if len(v.Shares) == 0 && p.name != "diff-tp2" && p.name != "diff-dense" {
					t.Error("no share bar measured")
				}
				for _, o := range v.Overlaps {
					t.Errorf("value labels overlap: %s", o)
				}
				for _, ti := range v.Titles {
					if ti.Right > ti.Width+1 || ti.Bottom > ti.Below+1 {
						t.Errorf("%s: title and subtitle end at %.0f px of %.0f and at %.0f px, under what is below it (%.0f): clipped or overlapping (%q)", ti.Chart, ti.Right, ti.Width, ti.Bottom, ti.Below, ti.Subtext)
					}
				}
				if len(v.Spans) > 1 {
					for _, sp := range v.Spans[1:] {
						if sp.Min != v.Spans[0].Min || sp.Max != v.Spans[0].Max {
							t.Errorf("timelines on different x ranges: %s %.0f-%.0f µs, %s %.0f-%.0f µs", v.Spans[0].Chart, v.Spans[0].Min, v.Spans[0].Max, sp.Chart, sp.Min, sp.Max)
						}
					}
				}
				for _, cr := range v.ConstRows {
					sawConst = true
					if cr.Rel != 0 || cr.Fill == heatDarkest {
						t.Errorf("%s: constant row %d drawn at %.2f of the scale (%s); want the lightest", cr.Chart, cr.Row, cr.Rel, cr.Fill)
					}
				}
				for _, c := range v.Captions {
					t.Errorf("caption squeezed: %s", c)
				}
				if v.CaptionsSeen == 0 {
					t.Error("no table caption measured")
				}
				for _, f := range v.FreeBreaks {
					t.Errorf("a word broken inside: %s", f)
				}
				if p.name == "report-slow" {
					step := strconv.Itoa(slow.Devices[0].Summary.Outliers.Steps[0])
					if v.Pins["steps-0"] != 1 || len(v.OutlierLabels["steps-0"]) != 1 || v.OutlierLabels["steps-0"][0] != step || v.OutlierRows != 1 {
						t.Errorf("outlier step %s: %d pins, labels %q, %d table rows marked; want 1, [%s], 1", step, v.Pins["steps-0"], v.OutlierLabels["steps-0"], v.OutlierRows, step)
					}
				}
			})
		}
	}
	if !sawLog {
		t.Error("no bar on a log axis measured (the per-device chart has them)")
	}
	if !sawConst {
		t.Error("no constant heat map row measured (tp2-moe-graph's memory row is one)")
	}
}

// heatDarkest is the heat map's colour at the top of its scale.
const heatDarkest = "#08306b"

func slicesMax(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}
