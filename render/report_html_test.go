package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
	"github.com/stepstat/stepstat/nsys/nsystest/captures"
)

// The -update flag rewrites the goldens. Another test file of the package may define it
// too (as a package variable, which is initialised before this init runs).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the goldens in testdata/golden")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// stubJS stands for ECharts in goldens, so that they stay small and readable.
var stubJS = HTMLOptions{EChartsJS: "/*echarts*/"}

const payload = `</script><img src=x onerror=alert(1)>`

// checkGolden compares got with testdata/golden/name, or rewrites it with -update. On a
// mismatch it writes name.got-html beside it (gitignored: *.got-*).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("..", "testdata", "golden", name)
	gotFile := strings.TrimSuffix(file, ".html") + ".got-html"
	want, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if bytes.Equal(want, got) {
		os.Remove(gotFile)
		return
	}
	if updating() {
		if err := os.WriteFile(file, got, 0o666); err != nil {
			t.Fatal(err)
		}
		os.Remove(gotFile)
		t.Logf("updated %s", file)
		return
	}
	if err := os.WriteFile(gotFile, got, 0o666); err != nil {
		t.Error(err)
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	line := 0
	for line < len(wl) && line < len(gl) && wl[line] == gl[line] {
		line++
	}
	first := func(ls []string) string {
		if line < len(ls) {
			return ls[line]
		}
		return "(end of file)"
	}
	t.Errorf("%s differs (got written to %s; run 'go test -update' to accept); first difference at line %d:\nwant: %.300s\ngot:  %.300s",
		file, gotFile, line+1, first(wl), first(gl))
}

func render(t testing.TB, r *breakdown.Report, opt HTMLOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, findings.Of(r), opt); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// traceReport decompresses a capture of testdata/traces (or opens an export) and
// summarises it as `stepstat report` does by default.
func traceReport(t testing.TB, path string, opt breakdown.Options) *breakdown.Report {
	t.Helper()
	r, err := breakdown.Summarize(captures.Open(t, path), opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func demoReport(t testing.TB) *breakdown.Report {
	return traceReport(t, filepath.Join("..", "testdata", "traces", "dense-eager.sqlite.gz"), breakdown.Options{})
}

// untrustedReport builds testdata/html/untrusted.txtar, whose kernel names, NVTX text and
// GPU names hold HTML and script, and summarises it; the path and a warning hold the
// payload too.
func untrustedReport(t testing.TB) *breakdown.Report {
	t.Helper()
	ar := nsystest.Parse(t, filepath.Join("..", "testdata", "html", "untrusted.txtar"))
	path := filepath.Join(t.TempDir(), "<img src=x onerror=alert(1)>.sqlite")
	nsystest.Write(t, ar, path)
	r := traceReport(t, path, breakdown.Options{Steps: breakdown.StepMethod{Method: breakdown.MethodNVTX, NVTX: regexp.MustCompile("decode_step")}})
	r.Path = "traces/" + payload + ".sqlite"
	r.Warnings = append(r.Warnings, errors.New("warning: "+payload))
	return r
}

// synthReport builds a report of n steps on each of ndev devices, without a trace:
// step 0 is a prefill step, attention grows with the step index (as with the KV cache),
// and the other categories vary a little.
func synthReport(n, ndev int) *breakdown.Report {
	r := &breakdown.Report{Path: "synthetic.sqlite", Meta: nsys.Meta{NsysVersion: "2025.3.2.0", SchemaVersion: "3.20.3"}}
	const us = time.Microsecond
	for dev := range ndev {
		d := breakdown.DeviceReport{Device: nsys.DeviceID(dev), GPU: "NVIDIA H200", Method: breakdown.MethodGraph,
			MethodDetail: fmt.Sprintf("%d CUDA graph launches", n)}
		at := nsys.Time(1_000_000_000)
		for i := range n {
			s := breakdown.Step{Index: i, Phase: breakdown.Decode, Start: at}
			wiggle := time.Duration((i*7919+dev*104729)%101) * 100 * time.Nanosecond
			s.Exclusive[kernelclass.GEMM] = 320*us + wiggle
			s.Exclusive[kernelclass.Attention] = 30*us + time.Duration(i%4096)*5*time.Nanosecond
			s.Exclusive[kernelclass.Elementwise] = 210*us + wiggle/2
			s.Exclusive[kernelclass.Sampling] = 40 * us
			s.Exclusive[kernelclass.Memory] = 2 * us
			s.Exclusive[kernelclass.Idle] = 90*us + 2*wiggle
			if ndev > 1 {
				s.Exclusive[kernelclass.AllReduce] = 150*us + time.Duration(dev)*20*us + wiggle
			}
			if i == 0 {
				s.Phase = breakdown.Prefill
				s.Label = "prefill"
				for c := range s.Exclusive {
					s.Exclusive[c] *= 8
				}
			}
			var wall time.Duration
			for c, x := range s.Exclusive {
				wall += x
				s.Busy[c] = x
				if x > 0 && kernelclass.Category(c) != kernelclass.Idle {
					s.Kernels[c] = 1 + int(x/(10*us))
				}
			}
			s.End = s.Start + nsys.Time(wall)
			s.Launches = 1
			idle := s.Exclusive[kernelclass.Idle]
			s.Gaps = breakdown.Gaps{Count: 12, Total: idle,
				Sizes:  [breakdown.NumGapSizes]int{9, 2, 1, 0},
				SizeNS: [breakdown.NumGapSizes]time.Duration{idle / 10, idle / 5, idle - idle/10 - idle/5, 0},
				Host:   [breakdown.NumHostActivities]time.Duration{idle / 20, idle / 4, idle / 2, idle - idle/20 - idle/4 - idle/2}}
			s.Gaps.API[breakdown.APISynchronizing] = idle / 20
			s.Gaps.API[breakdown.APICopying] = idle / 4
			s.Gaps.API[breakdown.APILaunching] = idle / 2
			s.Gaps.API[breakdown.APINone] = idle - idle/20 - idle/4 - idle/2
			d.Steps = append(d.Steps, s)
			at = s.End + nsys.Time(5*us)
		}
		d.Summary = synthSummary(d.Steps)
		r.Devices = append(r.Devices, d)
	}
	r.Kernels = []breakdown.KernelStat{
		{Name: "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT", Category: kernelclass.GEMM, Rule: "nvjet", Count: 77 * n, Total: time.Duration(n) * 320 * us},
		{Name: "void at::native::elementwise_kernel<(int)128, (int)4>(int, T3)", Category: kernelclass.Elementwise, Rule: "elementwise", Count: 224 * n, Total: time.Duration(n) * 210 * us},
		{Name: "flash_fwd_splitkv_kernel", Category: kernelclass.Attention, Rule: "flash", Count: 4 * n, Total: time.Duration(n) * 35 * us},
	}
	return r
}

// synthSummary summarises the decode steps as breakdown does.
func synthSummary(steps []breakdown.Step) breakdown.Summary {
	sm, _ := breakdown.SummarizeSteps(steps, breakdown.DecodeSteps)
	return sm
}

func TestHTMLGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    func(t *testing.T) *breakdown.Report
	}{
		{"html-synthetic", func(t *testing.T) *breakdown.Report { return synthReport(6, 1) }},
		{"html-two-devices", func(t *testing.T) *breakdown.Report { return synthReport(4, 2) }},
		{"html-untrusted", func(t *testing.T) *breakdown.Report { return untrustedReport(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, tc.name+".html", render(t, tc.r(t), stubJS))
		})
	}
}

// TestHTMLDeterministic renders the demo capture twice, from two separate reads of the
// trace, with the real ECharts, and wants the same bytes.
func TestHTMLDeterministic(t *testing.T) {
	ra, rb := demoReport(t), demoReport(t)
	ra.Path, rb.Path = "dense-eager.sqlite", "dense-eager.sqlite" // each read had its own temporary folder
	a := render(t, ra, DefaultHTMLOptions())
	b := render(t, rb, DefaultHTMLOptions())
	if !bytes.Equal(a, b) {
		t.Fatal("two renderings of the same capture differ")
	}
	big := synthReport(5000, 2)
	if !bytes.Equal(render(t, big, stubJS), render(t, big, stubJS)) {
		t.Fatal("two renderings of the same bucketed report differ")
	}
}

var (
	// scriptOpen matches the start of every <script> element.
	scriptOpen = regexp.MustCompile(`(?i)<script[\s>]`)
	// jsonBlock matches the option of each chart.
	jsonBlock = regexp.MustCompile(`<script type="application/json" id="([a-z0-9-]+)-option">([^<]*)</script>`)
)

// TestHTMLUntrusted renders text that holds markup and script (kernel names, NVTX labels,
// GPU names, the path, a warning) and checks that it stays text.
func TestHTMLUntrusted(t *testing.T) {
	r := untrustedReport(t)
	page := string(render(t, r, DefaultHTMLOptions()))
	// ECharts itself holds "<img" (its save-as-image fallback); look at the rest.
	outside := strings.Replace(page, echartsMinJS, "", 1)

	// Nothing the data holds became markup: no <img, no extra script element, no comment.
	for _, bad := range []string{"<img", "</script><img", "<!--", "onerror=alert(1)>"} {
		if strings.Contains(outside, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	charts := jsonBlock.FindAllStringSubmatch(page, -1)
	// <script>ECharts</script>, <script>bootstrap</script> and one data block per chart.
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
	if want := "timeline-median ranks rankcat steps-0 share-0 gaps-0 heat-0 steps-1 share-1 gaps-1 heat-1"; strings.Join(ids, " ") != want {
		t.Errorf("charts %q, want %q", strings.Join(ids, " "), want)
	}

	// The text is there, escaped: in HTML text and in the charts' JSON.
	if want := `&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;`; strings.Count(page, want) < 6 {
		t.Errorf("the escaped payload %q is in the page %d times, want it in path, warning, GPU, labels, kernels", want, strings.Count(page, want))
	}
	if want := `\u003c/script\u003e\u003cimg src=x onerror=alert(1)\u003e`; !strings.Contains(page, want) {
		t.Errorf("chart JSON does not hold %q", want)
	}
	// The JSON blocks are valid, and the GPU names come back intact: go-echarts' "__f__"
	// marker is not stripped from data.
	var titles []string
	for _, m := range charts {
		var opt struct {
			Title struct{ Text string } `json:"title"`
		}
		if err := json.Unmarshal([]byte(m[2]), &opt); err != nil {
			t.Fatalf("chart %s: option is not JSON: %v", m[1], err)
		}
		titles = append(titles, opt.Title.Text)
	}
	all := strings.Join(titles, "\n")
	for _, want := range []string{"NVIDIA H200 " + payload, `NVIDIA H200 __f__"x`} {
		if !strings.Contains(all, want) {
			t.Errorf("chart titles do not hold %q:\n%s", want, all)
		}
	}
	if !strings.Contains(page, `__f__&#34;q&#34;__f__`) {
		t.Errorf("kernel name with __f__ markers is not in the page as text")
	}
}

// TestScriptJSON checks the escaping of chart data on its own.
func TestScriptJSON(t *testing.T) {
	got, err := scriptJSON(map[string]any{"s": "</script><!-- & \u2028\u2029 __f__\" '"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"s":"\u003c/script\u003e\u003c!-- \u0026 \u2028\u2029 __f__\" '"}`
	if string(got) != want {
		t.Errorf("scriptJSON = %s, want %s", got, want)
	}
}

// loadRefs matches what makes a browser fetch something: a src, href, action, poster,
// data or srcset attribute, a CSS url() or @import, with a scheme or protocol-relative
// address. The ECharts source holds a few "http://" strings (its license URL in a comment,
// XML namespace names such as http://www.w3.org/2000/svg); those load nothing and are
// not matched.
var loadRefs = regexp.MustCompile(`(?i)(\b(src|href|action|poster|data|srcset)\s*=\s*["']?\s*([a-z][a-z0-9+.-]*:|//))|url\(\s*["']?\s*([a-z][a-z0-9+.-]*:|//)|@import`)

// TestHTMLLoadsNothing checks that the page with the real ECharts references nothing to
// load: no match of loadRefs anywhere, and outside the inlined ECharts source no <link>,
// <iframe>, <img>, <object> or <embed> and no "http" at all. (ECharts holds an "<img" in a
// string: its save-as-image fallback for old browsers, which shows the chart's own data URL.)
func TestHTMLLoadsNothing(t *testing.T) {
	for name, r := range map[string]*breakdown.Report{"demo": demoReport(t), "two-devices": synthReport(30, 2)} {
		page := string(render(t, r, DefaultHTMLOptions()))
		if m := loadRefs.FindAllString(page, 5); m != nil {
			t.Errorf("%s: page references something to load: %q", name, m)
		}
		outside := strings.Replace(page, echartsMinJS, "", 1)
		if len(outside) != len(page)-len(echartsMinJS) {
			t.Fatalf("%s: the ECharts source is not inlined verbatim", name)
		}
		for _, tag := range []string{"<link", "<iframe", "<img", "<object", "<embed"} {
			if strings.Contains(strings.ToLower(outside), tag) {
				t.Errorf("%s: page holds %s", name, tag)
			}
		}
		if i := strings.Index(strings.ToLower(outside), "http"); i >= 0 {
			t.Errorf("%s: page holds %q outside ECharts", name, outside[max(0, i-40):min(len(outside), i+40)])
		}
		if strings.Count(page, echartsMinJS) != 1 {
			t.Errorf("%s: ECharts is not inlined exactly once", name)
		}
	}
}

// TestEmbeddedECharts checks the vendored asset: the expected version, and nothing that
// would break the <script> element it is inlined into, or look like go-echarts' function
// marker.
func TestEmbeddedECharts(t *testing.T) {
	js := DefaultHTMLOptions().EChartsJS
	if len(js) < 500_000 {
		t.Fatalf("embedded ECharts is %d bytes; want the full echarts.min.js", len(js))
	}
	if !strings.Contains(js, `version="`+echartsVersion+`"`) {
		t.Errorf("embedded ECharts is not version %s", echartsVersion)
	}
	if err := checkScriptText(js); err != nil {
		t.Error(err)
	}
	if strings.Contains(js, "__f__") {
		t.Error("embedded ECharts contains __f__")
	}
	for _, f := range []string{"LICENSE", "NOTICE"} {
		if _, err := os.Stat(filepath.Join("assets", f)); err != nil {
			t.Error(err)
		}
	}
}

func TestHTMLRejectsBadScript(t *testing.T) {
	for _, js := range []string{"a</script>b", "a</SCRIPT b", "<!-- x"} {
		if err := HTML(io.Discard, findings.Of(synthReport(3, 1)), HTMLOptions{EChartsJS: js}); err == nil {
			t.Errorf("EChartsJS %q: no error", js)
		}
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestHTMLWriteError(t *testing.T) {
	err := HTML(&failWriter{n: 4000}, findings.Of(synthReport(3, 1)), stubJS)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the writer's error", err)
	}
}

// TestHTMLSize measures the page of each capture and of a 20,000-step report, and checks
// how a long run is shown: bucketed charts that say so, and a step table with its two ends.
func TestHTMLSize(t *testing.T) {
	caps, err := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.sqlite.gz"))
	if err != nil || len(caps) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	for _, c := range caps {
		n := len(render(t, traceReport(t, c, breakdown.Options{}), DefaultHTMLOptions()))
		t.Logf("%s: %d bytes", filepath.Base(c), n)
		if n > 2<<20 {
			t.Errorf("%s: HTML is %d bytes, want under 2 MB", filepath.Base(c), n)
		}
	}

	r := synthReport(20000, 1)
	page := string(render(t, r, DefaultHTMLOptions()))
	t.Logf("20000 steps: %d bytes", len(page))
	if len(page) > 6<<20 {
		t.Errorf("20000 steps: HTML is %d bytes, want under 6 MB", len(page))
	}
	// Step 0 is a prefill step: it has a chart of its own scale, the other 19999 are bucketed.
	if want := "19999 steps in 1000 buckets of 20 (the last of 19)"; strings.Count(page, want) != 2 {
		t.Errorf("the steps and heat charts do not both say %q", want)
	}
	if !strings.Contains(page, "… 19800 steps not shown (steps 100 to 19899)") {
		t.Error("the step table does not say which steps it leaves out")
	}
	if n := strings.Count(page, `<tr class="decode">`) + strings.Count(page, `<tr class="prefill">`); n != 200 {
		t.Errorf("step table has %d step rows, want 200", n)
	}
	// The bucketed steps chart has one value per bucket and per category.
	for _, m := range jsonBlock.FindAllStringSubmatch(page, -1) {
		if m[1] != "steps-0" {
			continue
		}
		var opt struct {
			Series []struct {
				Name string
				Data []json.RawMessage
			}
		}
		if err := json.Unmarshal([]byte(m[2]), &opt); err != nil {
			t.Fatal(err)
		}
		for _, s := range opt.Series {
			if len(s.Data) != 1000 {
				t.Errorf("steps chart series %s has %d values, want 1000", s.Name, len(s.Data))
			}
		}
		if got := opt.Series[len(opt.Series)-1].Name; got != "longest step" {
			t.Errorf("last series %q, want the longest step per bucket", got)
		}
	}

	// Runs just over the limit: buckets of 3, the last one smaller where the steps do not divide.
	g := newStepGroups(2001)
	if g.k != 3 || g.count() != 667 || g.note() != "2001 steps in 667 buckets of 3" {
		t.Errorf("2001 steps: k=%d count=%d note %q", g.k, g.count(), g.note())
	}
	g = newStepGroups(2500)
	if g.note() != "2500 steps in 834 buckets of 3 (the last of 1)" {
		t.Errorf("2500 steps: note %q", g.note())
	}
	if g := newStepGroups(2000); g.bucketed() {
		t.Error("2000 steps are bucketed")
	}
}

// TestHTMLNoSteps renders devices without steps, and without summarised steps.
func TestHTMLNoSteps(t *testing.T) {
	r := synthReport(3, 2)
	r.Devices[0].Steps = nil
	r.Devices[0].Summary = breakdown.Summary{Phase: breakdown.Decode}
	r.Devices[1].Summary = breakdown.Summary{Phase: breakdown.Prefill}
	page := string(render(t, r, stubJS))
	for _, want := range []string{"No steps on this device", "No prefill steps to summarise", `id="steps-1"`, `id="heat-1"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{`id="steps-0"`, `id="share-1"`} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
}

// TestCategoryColors: every category of kernelclass has its own colour (a category added
// without one would draw in no colour and lose its swatch), and the style sheet has a
// swatch rule for each.
func TestCategoryColors(t *testing.T) {
	hex := regexp.MustCompile(`^#[0-9a-f]{6}$`)
	seen := map[string]kernelclass.Category{}
	for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
		col := categoryColors[c]
		if !hex.MatchString(col) {
			t.Errorf("category %s: colour %q, want #rrggbb", c, col)
			continue
		}
		if o, ok := seen[col]; ok {
			t.Errorf("categories %s and %s share the colour %s", o, c, col)
		}
		seen[col] = c
		if rule := fmt.Sprintf(".cat-%s::before { background: %s !important; }", c, col); !strings.Contains(string(categoryCSS()), rule) {
			t.Errorf("style sheet has no swatch for %s (%s)", c, rule)
		}
	}
	if len(kernelclass.Order) != int(kernelclass.NumCategories) {
		t.Errorf("kernelclass.Order lists %d categories of %d: the swatches follow Order", len(kernelclass.Order), kernelclass.NumCategories)
	}
}
