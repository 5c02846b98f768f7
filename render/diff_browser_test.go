package render

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/stepstat/stepstat/breakdown"
)

// TestDiffHTMLInBrowser opens diff pages in headless Chromium, with the flags and checks of
// TestHTMLInBrowser: the real ECharts and no network; every chart initialised with
// non-empty series and drawn on its canvas; no console errors or warnings; no request but
// the file itself; and, for the page whose labels and kernel names hold markup, no dialog
// and no element made from data, also with every tooltip shown. It saves screenshots of
// the charts and of the whole page as html-diff-NAME-charts.png and -page.png in the
// artifact folder.
func TestDiffHTMLInBrowser(t *testing.T) {
	exe := findBrowser(t)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
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
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	dir := artifactDir(t)

	charts := []string{"diff-cats", "diff-steps"}
	for _, tc := range []struct {
		name string
		c    func(t *testing.T) *breakdown.Comparison
		tips bool // show every tooltip and look for injected markup
		full bool // screenshot the whole page too
	}{
		{"dense", func(t *testing.T) *breakdown.Comparison { return captureComparison(t) }, true, true},
		{"untrusted", func(t *testing.T) *breakdown.Comparison { return untrustedComparison(t) }, true, true},
		{"bucketed-5000", func(t *testing.T) *breakdown.Comparison { return synthComparison(5000, 3000) }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "diff-"+tc.name+".html")
			if err := os.WriteFile(file, renderDiff(t, tc.c(t), DefaultHTMLOptions()), 0o666); err != nil {
				t.Fatal(err)
			}
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
			go func() {
				for range chromedp.Events(tabCtx, page.JavascriptDialogOpening) {
					chromedp.Call(tabCtx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
				}
			}()
			if _, err := chromedp.Call(tabCtx, network.Enable, network.EnableParams{}); err != nil {
				t.Fatal(err)
			}
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
				t.Logf("chart %-10s %4dx%-4d %d series, %5d points, %4.1f%% of the canvas drawn", s.ID, s.Width, s.Height, s.Series, s.Points, 100*s.Inked)
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
			shots := []struct {
				what string
				act  chromedp.Action[[]byte]
			}{{"charts", chromedp.Screenshot(chromedp.CSS("#diff .charts"))}}
			if tc.full {
				shots = append(shots, struct {
					what string
					act  chromedp.Action[[]byte]
				}{"page", chromedp.FullScreenshot(100)})
			}
			for _, s := range shots {
				shot, err := chromedp.Run(tabCtx, s.act)
				if err != nil {
					t.Fatalf("screenshot: %v", err)
				}
				png := filepath.Join(dir, "html-diff-"+tc.name+"-"+s.what+".png")
				if err := os.WriteFile(png, shot, 0o666); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot: %s", png)
			}
			if tc.tips {
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
		})
	}
	t.Logf("browser test took %v", time.Since(start).Round(time.Millisecond))
}
