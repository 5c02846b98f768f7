package render

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// findBrowser returns a Chromium or Chrome on PATH. Without one the browser test is
// skipped, except under CI=true, where it fails: CI installs Debian's chromium (.ci/run).
// In -short mode (make check, the edit loop) the browser tests skip: make test runs them.
func findBrowser(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("a browser test: -short leaves it to make test")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium, chromium-browser or google-chrome on PATH; CI=true needs one (apt-get install chromium)")
	}
	t.Skip("no chromium, chromium-browser or google-chrome on PATH: install one (apt-get install chromium)")
	return ""
}

// artifactDir is where the screenshots go: $STEPSTAT_ARTIFACTS, else out/ at the top of
// the repository (gitignored).
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("STEPSTAT_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "out")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chartState is what the page says about one chart element.
type chartState struct {
	ID       string  `json:"id"`
	Instance bool    `json:"instance"` // echarts.getInstanceByDom found a chart
	Series   int     `json:"series"`
	Empty    []int   `json:"empty"`  // indices of series without data
	Points   int     `json:"points"` // data items over every series
	Width    int     `json:"width"`
	Height   int     `json:"height"`
	Inked    float64 `json:"inked"` // fraction of the canvas's pixels that are drawn
}

// checkCharts asks ECharts about every chart of the page, after two animation frames.
const checkCharts = `new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {
  const out = [];
  for (const el of document.querySelectorAll("div.chart")) {
    const c = echarts.getInstanceByDom(el);
    const r = {id: el.id, instance: !!c, series: 0, empty: [], points: 0, width: el.clientWidth, height: el.clientHeight, inked: 0};
    if (c) {
      (c.getOption().series || []).forEach((s, i) => {
        const n = (s.data || []).length;
        r.series++;
        r.points += n;
        if (n === 0) r.empty.push(i);
      });
      const cv = el.querySelector("canvas");
      if (cv && cv.width && cv.height) {
        const px = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
        let n = 0;
        for (let i = 3; i < px.length; i += 4) if (px[i] !== 0) n++;
        r.inked = n / (cv.width * cv.height);
      }
    }
    out.push(r);
  }
  done(out);
})))`

// showTips opens the tooltip of the first item of every series of every chart, so that
// tooltip formatters run (and data would be turned into markup there, if it could).
const showTips = `(() => {
  let n = 0;
  for (const el of document.querySelectorAll("div.chart")) {
    const c = echarts.getInstanceByDom(el);
    (c.getOption().series || []).forEach((s, i) => { c.dispatchAction({type: "showTip", seriesIndex: i, dataIndex: 0}); n++; });
  }
  return n;
})()`

// browserPage is what the browser saw of one page.
type browserPage struct {
	mu       sync.Mutex
	console  []string // errors and warnings: console API, exceptions, browser log
	requests []string // URLs the page asked for, other than the file itself
	dialogs  []string
}

func (p *browserPage) add(list *[]string, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*list = append(*list, s)
}

// TestHTMLInBrowser opens reports in headless Chromium with the real ECharts and no
// network, and checks that every chart was initialised with data and drew on its canvas,
// that the console has no errors or warnings, that the page asked for nothing but its own
// file, and, for the page full of markup in kernel and GPU names, that no dialog opened
// and no element was made from data, also with every tooltip shown. It saves a full-page
// screenshot of each page in the artifact folder.
func TestHTMLInBrowser(t *testing.T) {
	start := time.Now()
	browserCtx := startBrowser(t)
	dir := artifactDir(t)

	type pageCase struct {
		name   string
		report func(t *testing.T) *breakdown.Report
		charts []string // chart ids, in page order
		tips   bool     // show every tooltip and look for injected markup
		full   bool     // screenshot the whole page (slow on a small machine), not only the charts
	}
	cases := []pageCase{
		{"dense-eager", func(t *testing.T) *breakdown.Report { return demoReport(t) }, []string{"timeline-median", "timeline-slowest", "steps-0", "share-0", "gaps-0", "heat-0"}, true, true},
		{"untrusted", func(t *testing.T) *breakdown.Report { return untrustedReport(t) },
			[]string{"timeline-median", "ranks", "rankcat", "steps-0", "share-0", "gaps-0", "heat-0", "steps-1", "share-1", "gaps-1", "heat-1"}, true, false},
		{"bucketed-20000", func(t *testing.T) *breakdown.Report { return synthReport(20000, 1) },
			[]string{"steps-0", "share-0", "gaps-0", "heat-0"}, false, false},
	}
	if _, err := nsystest.CorpusDir(); err == nil {
		public := nsystest.PublicTrace(t, "nsys-ai__mfu_2gpu_before.sqlite")
		cases = append(cases, pageCase{"two-devices", func(t *testing.T) *breakdown.Report { return traceReport(t, public, breakdown.Options{}) },
			[]string{"timeline-median", "timeline-slowest", "ranks", "rankcat", "rankwait", "steps-0", "share-0", "gaps-0", "heat-0", "steps-1", "share-1", "gaps-1", "heat-1"}, false, true})
	} else {
		t.Logf("two-device check skipped: %v", err)
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), tc.name+".html")
			if err := os.WriteFile(file, render(t, tc.report(t), DefaultHTMLOptions()), 0o666); err != nil {
				t.Fatal(err)
			}
			var shots []pageShot // before any tooltip: the first device's charts, the comparison, the page
			shots = append(shots, pageShot{"charts", chromedp.Screenshot(chromedp.CSS("#device-0 .charts"))})
			if slices.Contains(tc.charts, "ranks") {
				shots = append(shots, pageShot{"compare", chromedp.Screenshot(chromedp.CSS("#compare .charts"))})
			}
			if tc.full {
				shots = append(shots, pageShot{"page", chromedp.FullScreenshot(100)})
			}
			checkPage(t, browserCtx, file, tc.charts, tc.tips, shots, filepath.Join(dir, "html-"+tc.name))
		})
	}
	t.Logf("browser test took %v", time.Since(start).Round(time.Millisecond))
}

// startBrowser starts headless Chromium with networking disabled (no proxy that works, no
// name resolution); the browser is closed when the test ends.
func startBrowser(t *testing.T) context.Context {
	exe := findBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("proxy-server", "127.0.0.1:9"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return browserCtx
}

// A pageShot is a screenshot to save: the part of the page, and its name.
type pageShot struct {
	what string
	act  chromedp.Action[[]byte]
}

// checkPage opens file in a new tab and checks it: the chart ids in page order are
// charts, every chart has an ECharts instance with data and drew on its canvas; it saves
// the screenshots as PREFIX-WHAT.png; with tips, it shows every tooltip and checks that no
// element was made from data; and the console has no errors or warnings, the page asked
// for nothing but itself, and no dialog opened.
func checkPage(t *testing.T, browserCtx context.Context, file string, charts []string, tips bool, shots []pageShot, prefix string) {
	t.Helper()
	url := "file://" + filepath.ToSlash(file)
	seen := &browserPage{}
	tabCtx, cancelTab := chromedp.NewContext(browserCtx, chromedp.WithListener(func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				seen.add(&seen.console, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			seen.add(&seen.console, "exception: "+(&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error())
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				seen.add(&seen.console, fmt.Sprintf("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			if ev.Request.URL != url {
				seen.add(&seen.requests, ev.Request.URL)
			}
		case *page.EventJavascriptDialogOpening:
			seen.add(&seen.dialogs, string(ev.Type)+": "+ev.Message)
		}
	}))
	defer cancelTab()
	// The first Call starts the tab (chromedp attaches its target then); only after it may
	// another goroutine use the context: Events called at the same time as the first Call
	// both initialise the target, a data race (go test -race, issue 25).
	if _, err := chromedp.Call(tabCtx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	// Close any dialog, so that a script that opens one cannot stall the test. No dialog
	// can open before the page is loaded, below.
	go func() {
		for range chromedp.Events(tabCtx, page.JavascriptDialogOpening) {
			chromedp.Call(tabCtx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	if err := chromedp.Do(tabCtx, chromedp.EmulateViewport(1400, 1000), chromedp.Navigate(url)); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	raw, err := chromedp.Run(tabCtx, chromedp.Evaluate[[]byte](checkCharts, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("asking the page about its charts: %v", err)
	}
	var states []chartState
	if err := json.Unmarshal(raw, &states); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	var ids []string
	for _, s := range states {
		ids = append(ids, s.ID)
		t.Logf("chart %-8s %4dx%-4d %d series, %5d points, %4.1f%% of the canvas drawn", s.ID, s.Width, s.Height, s.Series, s.Points, 100*s.Inked)
		switch {
		case !s.Instance:
			t.Errorf("chart %s: no ECharts instance", s.ID)
		case s.Series == 0 || len(s.Empty) > 0:
			t.Errorf("chart %s: %d series, these without data: %v", s.ID, s.Series, s.Empty)
		case s.Width < 300 || s.Height < 200:
			t.Errorf("chart %s: %dx%d pixels", s.ID, s.Width, s.Height)
		case s.Inked < 0.02:
			t.Errorf("chart %s: only %.2f%% of the canvas is drawn", s.ID, 100*s.Inked)
		}
	}
	if got, want := strings.Join(ids, " "), strings.Join(charts, " "); got != want {
		t.Errorf("charts %q, want %q", got, want)
	}
	for _, sh := range shots {
		shot, err := chromedp.Run(tabCtx, sh.act)
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		png := prefix + "-" + sh.what + ".png"
		if err := os.WriteFile(png, shot, 0o666); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", png)
	}
	if tips {
		n, err := chromedp.Run(tabCtx, chromedp.Evaluate[int](showTips))
		if err != nil {
			t.Fatalf("showing tooltips: %v", err)
		}
		injected, err := chromedp.Run(tabCtx, chromedp.Evaluate[int](`document.querySelectorAll("img, iframe, object, embed").length + document.scripts.length - 2 - document.querySelectorAll('script[type="application/json"]').length`))
		if err != nil {
			t.Fatal(err)
		}
		if injected != 0 {
			t.Errorf("after showing %d tooltips, the page has %d elements made from data (img, iframe, object, embed or script)", n, injected)
		}
	}

	seen.mu.Lock()
	defer seen.mu.Unlock()
	for _, m := range seen.console {
		t.Errorf("console: %s", m)
	}
	for _, u := range seen.requests {
		t.Errorf("the page asked for %s", u)
	}
	for _, d := range seen.dialogs {
		t.Errorf("a dialog opened: %s", d)
	}
}

// decodeView measures, in the page, the stacked bars of the per-step chart steps-<dev> (the
// pixel height of each bar and the grid's height) and, on every chart, each category axis:
// how many values it has and how many labels ECharts lays out at the page's width.
const decodeView = `(() => {
  const out = {bars: [], grid: 0, axes: []};
  for (const el of document.querySelectorAll("div.chart")) {
    const c = echarts.getInstanceByDom(el);
    for (const kind of ["xAxis", "yAxis"]) {
      c.getModel().eachComponent(kind, m => {
        const a = m.axis;
        if (a.type !== "category") return;
        out.axes.push({chart: el.id, axis: kind, values: a.scale.count(), shown: a.getViewLabels().length});
      });
    }
  }
  const el = document.getElementById("steps-" + DEV);
  const c = echarts.getInstanceByDom(el);
  const o = c.getOption();
  out.grid = c.getModel().getComponent("grid", 0).coordinateSystem.getRect().height;
  const val = d => (d !== null && typeof d === "object") ? Number(d.value) : Number(d);
  o.xAxis[0].data.forEach((x, i) => {
    let total = 0;
    for (const s of o.series) if (s.type === "bar") total += val(s.data[i]);
    const y0 = c.convertToPixel({gridIndex: 0}, [i, 0])[1];
    const y1 = c.convertToPixel({gridIndex: 0}, [i, total])[1];
    out.bars.push({label: String(val(x)), height: y0 - y1});
  });
  return out;
})()`

// TestHTMLDecodeVisible opens the reports of captures with a long prefill (8 to 13 times
// the median decode step: the captures' prompts are short) at 1400 px and checks that every decode step's bar in
// the per-step chart is drawn at a readable height (at least a fifth of the chart's grid
// and 40 px: the prefill has a chart of its own scale), and that no category axis of any
// chart drops a label.
func TestHTMLDecodeVisible(t *testing.T) {
	browserCtx := startBrowser(t)
	for _, tc := range []struct {
		name        string
		longPrefill bool // else only the labels are checked
	}{{"hf-glm5-compile", true}, {"hf-qwen3moe-compile", true}, {"tp2-moe-graph-nvtx", true}, {"dense-graph", true},
		{"hf-qwen3moe-tp2", false}, {"moe-eager-nvtx", false}} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			r := traceReport(t, filepath.Join("..", "testdata", "traces", name+".sqlite.gz"), breakdown.Options{})
			file := filepath.Join(t.TempDir(), name+".html")
			if err := os.WriteFile(file, render(t, r, DefaultHTMLOptions()), 0o666); err != nil {
				t.Fatal(err)
			}
			tabCtx, cancel := chromedp.NewContext(browserCtx)
			defer cancel()
			if err := chromedp.Do(tabCtx, chromedp.EmulateViewport(1400, 1000), chromedp.Navigate("file://"+filepath.ToSlash(file))); err != nil {
				t.Fatal(err)
			}
			for _, d := range r.Devices {
				var pre, dec time.Duration // the longest prefill and the median decode step
				var decode []string
				for i := range d.Steps {
					s := &d.Steps[i]
					switch s.Phase {
					case breakdown.Prefill:
						pre = max(pre, s.Wall())
					case breakdown.Decode:
						decode = append(decode, fmt.Sprint(s.Index))
					}
				}
				dec = d.Summary.Median
				if tc.longPrefill && (pre < 8*dec || len(decode) < 5) {
					t.Fatalf("device %d: prefill %v, median decode %v, %d decode steps: not a capture with a long prefill", d.Device, pre, dec, len(decode))
				}
				var view struct {
					Bars []struct {
						Label  string  `json:"label"`
						Height float64 `json:"height"`
					} `json:"bars"`
					Grid float64 `json:"grid"`
					Axes []struct {
						Chart  string `json:"chart"`
						Axis   string `json:"axis"`
						Values int    `json:"values"`
						Shown  int    `json:"shown"`
					} `json:"axes"`
				}
				raw, err := chromedp.Run(tabCtx, chromedp.Evaluate[[]byte](strings.Replace(decodeView, "DEV", fmt.Sprint(d.Device), 1)))
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(raw, &view); err != nil {
					t.Fatal(err)
				}
				height := map[string]float64{}
				for _, b := range view.Bars {
					height[b.Label] = b.Height
				}
				for _, s := range decode {
					if !tc.longPrefill {
						break
					}
					h, ok := height[s]
					if !ok || h < view.Grid/5 || h < 40 {
						t.Errorf("device %d: decode step %s's bar is %.1f px high in a %.0f px grid (prefill %v, median decode %v)", d.Device, s, h, view.Grid, pre, dec)
					}
				}
				t.Logf("device %d: %d bars, grid %.0f px, prefill %v, median decode %v", d.Device, len(view.Bars), view.Grid, pre, dec)
				for _, a := range view.Axes {
					if a.Shown < a.Values {
						t.Errorf("chart %s, %s: %d of %d category labels shown at 1400 px", a.Chart, a.Axis, a.Shown, a.Values)
					}
				}
				if len(view.Axes) == 0 {
					t.Error("no category axis found")
				}
			}
		})
	}
}
