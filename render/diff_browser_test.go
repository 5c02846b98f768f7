package render

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stepstat/stepstat/breakdown/compare"
)

// TestDiffHTMLInBrowser opens diff pages in headless Chromium, with the flags and checks of
// TestHTMLInBrowser: the real ECharts and no network; every chart initialised with
// non-empty series and drawn on its canvas; no console errors or warnings; no request but
// the file itself; and, for the page whose labels and kernel names hold markup, no dialog
// and no element made from data, also with every tooltip shown. It saves screenshots of
// the charts and of the whole page as html-diff-NAME-charts.png and -page.png in the
// artifact folder.
func TestDiffHTMLInBrowser(t *testing.T) {
	start := time.Now()
	browserCtx := startBrowser(t)
	dir := artifactDir(t)

	charts := []string{"diff-cats", "diff-steps"}
	for _, tc := range []struct {
		name string
		c    func(t *testing.T) *compare.Comparison
		tips bool // show every tooltip and look for injected markup
		full bool // screenshot the whole page too
	}{
		{"dense", func(t *testing.T) *compare.Comparison { return captureComparison(t) }, true, true},
		{"untrusted", func(t *testing.T) *compare.Comparison { return untrustedComparison(t) }, true, true},
		{"bucketed-5000", func(t *testing.T) *compare.Comparison { return synthComparison(5000, 3000) }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "diff-"+tc.name+".html")
			if err := os.WriteFile(file, renderDiff(t, tc.c(t), DefaultHTMLOptions()), 0o666); err != nil {
				t.Fatal(err)
			}
			shots := []pageShot{{"charts", chromedp.Screenshot(chromedp.CSS("#diff .charts"))}}
			if tc.full {
				shots = append(shots, pageShot{"page", chromedp.FullScreenshot(100)})
			}
			checkPage(t, browserCtx, file, charts, tc.tips, shots, filepath.Join(dir, "html-diff-"+tc.name))
		})
	}
	t.Logf("browser test took %v", time.Since(start).Round(time.Millisecond))
}
