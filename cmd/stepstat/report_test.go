package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys/nsystest"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// captureDir holds the real H200 captures (*.sqlite.gz, see testdata/traces/README.md).
var captureDir = func() string {
	d, err := filepath.Abs(filepath.Join("..", "..", "testdata", "traces"))
	if err != nil {
		panic(err)
	}
	return d
}()

// inCaptureDir makes a fresh temporary directory the working directory and decompresses
// the named captures into it as NAME.sqlite, so that the goldens hold short, stable paths.
func inCaptureDir(t *testing.T, names ...string) {
	t.Helper()
	t.Chdir(t.TempDir())
	for _, name := range names {
		nsystest.Gunzip(t, filepath.Join(captureDir, name+".sqlite.gz"), name+".sqlite")
	}
}

// stepstat runs the command in-process and returns its exit status, stdout and stderr.
func stepstat(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestReportGolden checks report's output on the demo capture (dense eager decode without
// NVTX: steps from the D2H read-backs) in every format and with the analysis flags.
func TestReportGolden(t *testing.T) {
	const trace = "dense-eager.sqlite"
	for _, tc := range []struct {
		scenario string
		args     []string
		code     int
	}{
		{"report-dense-eager", []string{"report", trace}, 0},
		{"report-dense-eager-json", []string{"report", "--format", "json", trace}, 0},
		{"report-dense-eager-csv", []string{"report", "-f", "csv", trace}, 0},
		{"report-steps-whole", []string{"report", "--steps", "whole", "--top", "3", trace}, 0},
		{"report-phase-prefill", []string{"report", "--phase", "prefill", "--top", "3", trace}, 0},
		{"report-phase-all", []string{"report", "--phase", "all", "--top", "0", trace}, 0},
		{"report-skip-2", []string{"report", "--skip", "2", "--top", "0", trace}, 0},
		{"report-skip-2-csv", []string{"report", "--skip", "2", "-f", "csv", trace}, 0},
		{"report-device-5", []string{"report", "--device", "5", trace}, 1},
		{"report-steps-bogus", []string{"report", "--steps", "bogus", trace}, 2},
		{"report-steps-bad-regexp", []string{"report", "--steps", "nvtx:(", trace}, 2},
		{"report-steps-nvtx-none", []string{"report", "--steps", "nvtx", trace}, 1},
		{"report-steps-graph-none", []string{"report", "--steps", "graph", trace}, 1},
		{"report-phase-bogus", []string{"report", "--phase", "warmup", trace}, 2},
		{"report-skip-negative", []string{"report", "--skip", "-1", trace}, 2},
		{"report-unknown-format", []string{"report", "--format", "xml", trace}, 2},
		{"report-missing", []string{"report", "missing.sqlite"}, 1},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			inCaptureDir(t, "dense-eager")
			if code := golden(t, tc.scenario, tc.args...); code != tc.code {
				t.Errorf("exit status %d, want %d", code, tc.code)
			}
			code, stdout, stderr := stepstat(tc.args...)
			switch {
			case code == 0 && stderr != "":
				t.Errorf("stderr is not empty: %s", stderr)
			case code != 0 && stdout != "":
				t.Errorf("exit status %d with output on stdout:\n%s", code, stdout)
			case code != 0 && !strings.HasPrefix(stderr, "stepstat"):
				t.Errorf("exit status %d, stderr %q", code, stderr)
			}
		})
	}
}

// TestReportGoldenNVTX checks the text report of NVTX steps and of a CUDA graph capture.
func TestReportGoldenNVTX(t *testing.T) {
	for _, tc := range []struct {
		scenario, capture string
		args              []string
	}{
		{"report-moe-eager-nvtx", "moe-eager-nvtx", nil},
		{"report-moe-eager-nvtx-category", "moe-eager-nvtx", []string{"--nvtx-category", "moe_route=moe_routing"}},
		{"report-dense-graph", "dense-graph", nil},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			inCaptureDir(t, tc.capture)
			args := append(append([]string{"report", "--top", "5"}, tc.args...), tc.capture+".sqlite")
			if code := golden(t, tc.scenario, args...); code != 0 {
				t.Errorf("exit status %d, want 0", code)
			}
		})
	}
}

// reportJSON runs report --format json and decodes the result generically (numbers kept
// as json.Number so that integers can be told from floats).
func reportJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := stepstat(append([]string{"report", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("stepstat report %s: exit status %d: %s", strings.Join(args, " "), code, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding the JSON: %v", err)
	}
	return v
}

// jpath walks a decoded JSON value: keys for objects, indices for arrays.
func jpath(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object", path[:i])
			}
			if v, ok = m[p]; !ok {
				t.Fatalf("%v: no field %q", path[:i], p)
			}
		case int:
			a, ok := v.([]any)
			if !ok || p >= len(a) {
				t.Fatalf("%v: not an array with index %d", path[:i], p)
			}
			v = a[p]
		}
	}
	return v
}

// jnum returns a JSON number as a float64.
func jnum(t *testing.T, v any) float64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	f, err := n.Float64()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestReportNVTXCategory checks --nvtx-category on the MoE capture with NVTX. Without it,
// context classification finds the router (softmax, top-k, sorts, ...) of each of the 4
// layers: 48 moe_routing kernels a decode step (the index_select right before each layer's
// first expert GEMM is expert work, as before every other expert of the loop), and the 64
// expert GEMMs leave gemm (13 left). With it, the 13 kernels of each layer's moe_route range
// (the router GEMM and 12 torch ops) are moe_routing by the user's rule (52 a step, rule
// nvtx-category), the router GEMMs leave gemm (9 left), and context adds the router kernel
// a layer that runs after the range (56).
func TestReportNVTXCategory(t *testing.T) {
	inCaptureDir(t, "moe-eager-nvtx")
	const trace = "moe-eager-nvtx.sqlite"
	for _, tc := range []struct {
		args                []string
		routing, gemm, nvtx float64
	}{
		{nil, 48, 13, 0},
		{[]string{"--nvtx-category", "moe_route=moe_routing"}, 56, 9, 52},
		{[]string{"--nvtx-category", "^moe_route$=moe_routing", "--nvtx-category", "moe=moe_expert"}, 56, 9, 52},
	} {
		v := reportJSON(t, append(slices.Clone(tc.args), trace)...)
		what := fmt.Sprint(tc.args)
		if got := jpath(t, v, "devices", 0, "step_method"); got != "nvtx" {
			t.Errorf("%s: step method %v", what, got)
		}
		dec := jpath(t, v, "devices", 0, "decode", "categories")
		if got := jnum(t, jpath(t, dec, "moe_routing", "kernels_per_step")); got != tc.routing {
			t.Errorf("%s: moe_routing kernels per decode step %v, want %v", what, got, tc.routing)
		}
		if got := jnum(t, jpath(t, dec, "gemm", "kernels_per_step")); got != tc.gemm {
			t.Errorf("%s: gemm kernels per decode step %v, want %v", what, got, tc.gemm)
		}
		steps := jpath(t, v, "devices", 0, "steps").([]any)
		for i := 1; i < len(steps); i++ { // decode steps (the prefill's top-T adds sorts)
			if got := jnum(t, jpath(t, steps[i], "categories", "moe_routing", "kernels")); got != tc.routing {
				t.Errorf("%s: step %d: %v moe_routing kernels, want %v", what, i, got, tc.routing)
			}
		}
		var routed float64
		for _, k := range jpath(t, v, "kernels").([]any) {
			if jpath(t, k, "category") != "moe_routing" {
				continue
			}
			switch r := jpath(t, k, "rule"); r {
			case "nvtx-category":
				routed += jnum(t, jpath(t, k, "count"))
			default:
				if rs, _ := r.(string); strings.HasPrefix(rs, "context: ") {
					continue
				}
				t.Errorf("%s: kernel %v: rule %v, want nvtx-category or context", what, jpath(t, k, "name"), r)
			}
		}
		if want := tc.nvtx * 13; routed != want { // 1 prefill + 12 decode steps
			t.Errorf("%s: %v kernels routed by the NVTX rule in the kernel list, want %v", what, routed, want)
		}
	}
	for _, bad := range []string{"moe_route", "=moe_routing", "moe_route=idle", "moe_route=bogus", "(=gemm"} {
		code, stdout, stderr := stepstat("report", "--nvtx-category", bad, trace)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "--nvtx-category") {
			t.Errorf("--nvtx-category %q: exit status %d, stderr %q", bad, code, stderr)
		}
	}
}

// TestReportRules checks --rules: a rules file's rules come before the built-in ones, name
// their FILE:LINE, and a bad file is an error that names the bad lines.
func TestReportRules(t *testing.T) {
	inCaptureDir(t, "dense-eager")
	writeRules := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The embedding and mask-row lookups (2 per decode step) as routing, for the test.
	writeRules("rules.txt", "# test rules\n\nmoe_routing  indexSelectSmallIndex<\n")
	if code := golden(t, "report-rules", "report", "--rules", "rules.txt", "--top", "12", "dense-eager.sqlite"); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	v := reportJSON(t, "--rules", "rules.txt", "dense-eager.sqlite")
	dec := jpath(t, v, "devices", 0, "decode", "categories")
	if got := jnum(t, jpath(t, dec, "moe_routing", "kernels_per_step")); got != 2 {
		t.Errorf("moe_routing kernels per decode step %v, want 2", got)
	}
	if got := jnum(t, jpath(t, dec, "elementwise", "kernels_per_step")); got != 34 {
		t.Errorf("elementwise kernels per decode step %v, want 34", got)
	}
	var found bool
	for _, k := range jpath(t, v, "kernels").([]any) {
		if strings.Contains(jpath(t, k, "name").(string), "indexSelectSmallIndex<") {
			found = true
			if c, r := jpath(t, k, "category"), jpath(t, k, "rule"); c != "moe_routing" || r != "rules.txt:3" {
				t.Errorf("indexSelectSmallIndex: category %v rule %v, want moe_routing rules.txt:3", c, r)
			}
		}
	}
	if !found {
		t.Error("no indexSelectSmallIndex kernel in the kernel list")
	}

	writeRules("bad.txt", "bogus foo\nmoe_routing (\nidle x\ngemm\n")
	code, stdout, stderr := stepstat("report", "--rules", "bad.txt", "dense-eager.sqlite")
	if code != 1 || stdout != "" {
		t.Errorf("bad rules: exit status %d, stdout %q", code, stdout)
	}
	for _, want := range []string{"bad.txt:1:", "bad.txt:2:", "bad.txt:3:", "bad.txt:4:"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("bad rules: stderr %q does not name %s", stderr, want)
		}
	}
	code, _, stderr = stepstat("report", "--rules", "missing.txt", "dense-eager.sqlite")
	if code != 1 || !strings.Contains(stderr, "missing.txt") {
		t.Errorf("missing rules file: exit status %d, stderr %q", code, stderr)
	}
}

// TestReportJSONContract checks the JSON of report against contract v1 in
// docs/product.md: every field is present with its JSON type, each step's categories hold
// every category id (zeros included), idle has gaps, and the numbers add up.
func TestReportJSONContract(t *testing.T) {
	for _, capture := range []string{"dense-eager", "dense-graph-nvtx"} {
		t.Run(capture, func(t *testing.T) {
			inCaptureDir(t, capture)
			v := reportJSON(t, capture+".sqlite")
			checkJSONContract(t, v)
			if got := jpath(t, v, "source", "path"); got != capture+".sqlite" {
				t.Errorf("source.path %v", got)
			}
		})
	}
	// A report with warnings and a whole-trace step.
	t.Run("whole", func(t *testing.T) {
		inCaptureDir(t, "dense-eager")
		v := reportJSON(t, "--steps", "whole", "dense-eager.sqlite")
		checkJSONContract(t, v)
		if w := jpath(t, v, "warnings").([]any); len(w) == 0 {
			t.Error("no warnings")
		}
		if got := jpath(t, v, "devices", 0, "step_method"); got != "whole" {
			t.Errorf("step_method %v", got)
		}
	})
}

// checkJSONContract checks one decoded report against contract v1.
func checkJSONContract(t *testing.T, v map[string]any) {
	t.Helper()
	isInt := func(x any) bool {
		n, ok := x.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(string(n), 10, 64)
		return err == nil
	}
	isNum := func(x any) bool { _, ok := x.(json.Number); return ok }
	isStr := func(x any) bool { _, ok := x.(string); return ok }
	isArr := func(x any) bool { _, ok := x.([]any); return ok }
	isObj := func(x any) bool { _, ok := x.(map[string]any); return ok }
	field := func(where string, obj any, name string, ok func(any) bool, typ string) any {
		t.Helper()
		m, isMap := obj.(map[string]any)
		if !isMap {
			t.Errorf("%s: not an object", where)
			return nil
		}
		x, present := m[name]
		if !present {
			t.Errorf("%s: no field %q", where, name)
			return nil
		}
		if !ok(x) {
			t.Errorf("%s.%s = %v (%T), want %s", where, name, x, x, typ)
			return nil
		}
		return x
	}
	oneOf := func(where string, x any, allowed ...string) {
		t.Helper()
		if s, _ := x.(string); !slices.Contains(allowed, s) {
			t.Errorf("%s = %v, want one of %v", where, x, allowed)
		}
	}
	var ids []string
	for _, c := range kernelclass.Order {
		ids = append(ids, c.String())
	}
	if len(ids) != 12 { // product.md's 11 and untraced_graph, added since
		t.Errorf("%d category ids, want the 12 of product.md", len(ids))
	}

	if s := field("report", v, "schema", isStr, "string"); s != "stepstat.report.v1" {
		t.Errorf("schema %v", s)
	}
	src := field("report", v, "source", isObj, "object")
	for _, f := range []string{"path", "nsys_version", "export_schema"} {
		field("source", src, f, isStr, "string")
	}
	devs, _ := field("report", v, "devices", isArr, "array").([]any)
	if len(devs) == 0 {
		t.Error("no devices")
	}
	for di, d := range devs {
		w := fmt.Sprintf("devices[%d]", di)
		field(w, d, "device", isInt, "integer")
		field(w, d, "gpu", isStr, "string")
		oneOf(w+".step_method", field(w, d, "step_method", isStr, "string"), "nvtx", "graph", "sync", "periodic", "whole")
		steps, _ := field(w, d, "steps", isArr, "array").([]any)
		if len(steps) == 0 {
			t.Errorf("%s: no steps", w)
		}
		for si, s := range steps {
			ws := fmt.Sprintf("%s.steps[%d]", w, si)
			field(ws, s, "index", isInt, "integer")
			oneOf(ws+".phase", field(ws, s, "phase", isStr, "string"), "prefill", "decode", "unknown")
			start := field(ws, s, "start_ns", isInt, "integer")
			end := field(ws, s, "end_ns", isInt, "integer")
			field(ws, s, "launches", isInt, "integer")
			cats := field(ws, s, "categories", isObj, "object")
			if cm, ok := cats.(map[string]any); ok && len(cm) != len(ids) {
				t.Errorf("%s.categories has %d ids, want %d", ws, len(cm), len(ids))
			}
			var sum int64
			for _, id := range ids {
				wc := ws + ".categories." + id
				c := field(ws+".categories", cats, id, isObj, "object")
				if ns := field(wc, c, "ns", isInt, "integer"); ns != nil {
					n, _ := ns.(json.Number).Int64()
					sum += n
				}
				field(wc, c, "kernels", isInt, "integer")
				if id == "idle" {
					field(wc, c, "gaps", isInt, "integer")
				}
			}
			if start != nil && end != nil {
				s0, _ := start.(json.Number).Int64()
				e0, _ := end.(json.Number).Int64()
				if sum != e0-s0 {
					t.Errorf("%s: categories sum to %d ns, end-start is %d", ws, sum, e0-s0)
				}
			}
		}
		dec := field(w, d, "decode", isObj, "object")
		field(w+".decode", dec, "steps", isInt, "integer")
		field(w+".decode", dec, "median_ns", isInt, "integer")
		field(w+".decode", dec, "p90_ns", isInt, "integer")
		dcats := field(w+".decode", dec, "categories", isObj, "object")
		for _, id := range ids {
			wc := w + ".decode.categories." + id
			c := field(w+".decode.categories", dcats, id, isObj, "object")
			field(wc, c, "median_ns", isInt, "integer")
			field(wc, c, "share", isNum, "number")
			field(wc, c, "kernels_per_step", isNum, "number")
		}
	}
	kernels, _ := field("report", v, "kernels", isArr, "array").([]any)
	if len(kernels) == 0 {
		t.Error("no kernels")
	}
	for i, k := range kernels {
		w := fmt.Sprintf("kernels[%d]", i)
		field(w, k, "name", isStr, "string")
		oneOf(w+".category", field(w, k, "category", isStr, "string"), ids...)
		field(w, k, "count", isInt, "integer")
		field(w, k, "total_ns", isInt, "integer")
	}
	ws, _ := field("report", v, "warnings", isArr, "array").([]any)
	for i, x := range ws {
		if !isStr(x) {
			t.Errorf("warnings[%d] = %v, want a string", i, x)
		}
	}
}

// TestReportPublicTraces runs report over every public trace: each gives a report, or (the
// five exports without GPU activity) exit status 1 and one line saying so. Nothing panics
// and nothing is left half-written.
func TestReportPublicTraces(t *testing.T) {
	files := nsystest.PublicTraces(t)
	if len(files) != 27 {
		t.Errorf("%d public traces, want 27", len(files))
	}
	var noGPU int
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".sqlite"), func(t *testing.T) {
			for _, format := range []string{"text", "json", "csv"} {
				code, stdout, stderr := stepstat("report", "--format", format, path)
				switch {
				case code == 0:
					if stdout == "" {
						t.Errorf("%s: empty report", format)
					}
				case code == 1 && stdout == "" && strings.HasPrefix(stderr, "stepstat: "+path+": no GPU activity (no kernel, memcpy, memset or CUDA graph rows)\n  "):
					if format == "text" {
						noGPU++
					}
				default:
					t.Errorf("%s: exit status %d, stderr %q", format, code, stderr)
				}
			}
		})
	}
	if len(files) == 27 && noGPU != 5 {
		t.Errorf("%d traces without GPU activity, want 5", noGPU)
	}
}

// TestClassifyContext checks that classify shows what context classification decided: on
// transformers' generate() over Qwen3-MoE (no NVTX, two syncs per token), gatherTopK has a
// moe_routing row with the router's context rule, and the expert GEMMs a moe_expert row;
// classify's rows are the report's kernel table; --by-name lists every name once, by its
// name rule only.
func TestClassifyContext(t *testing.T) {
	inCaptureDir(t, "hf-qwen3moe-eager")
	const trace = "hf-qwen3moe-eager.sqlite"
	rows := func(args ...string) []any {
		t.Helper()
		code, stdout, stderr := stepstat(append([]string{"classify", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("classify %v: exit %d, %s", args, code, stderr)
		}
		var v map[string]any
		dec := json.NewDecoder(strings.NewReader(stdout))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v["kernels"].([]any)
	}
	has := func(ks []any, nameSub, cat, rulePrefix string) bool {
		for _, k := range ks {
			m := k.(map[string]any)
			if strings.Contains(m["name"].(string), nameSub) && m["category"] == cat && strings.HasPrefix(m["rule"].(string), rulePrefix) {
				return true
			}
		}
		return false
	}
	ctx := rows(trace)
	if !has(ctx, "gatherTopK", "moe_routing", "context: MoE router") {
		t.Errorf("no moe_routing row for gatherTopK with the router's context rule")
	}
	if !has(ctx, "nvjet", "moe_expert", "context: MoE expert") {
		t.Errorf("no moe_expert row for the expert GEMMs")
	}
	// classify lists the report's own kernel table: the same rows, category by category.
	code, stdout, stderr := stepstat("report", "--format", "json", trace)
	if code != 0 {
		t.Fatalf("report: exit %d, %s", code, stderr)
	}
	var rep map[string]any
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	if err := dec.Decode(&rep); err != nil {
		t.Fatal(err)
	}
	key := func(k any) string {
		m := k.(map[string]any)
		return fmt.Sprint(m["name"], "|", m["category"], "|", m["count"])
	}
	want := map[string]bool{}
	for _, k := range rep["kernels"].([]any) {
		want[key(k)] = true
	}
	for _, k := range ctx {
		if !want[key(k)] {
			t.Errorf("classify row %.80s not in the report's kernel table", key(k))
		}
	}
	if len(ctx) != len(want) {
		t.Errorf("classify lists %d rows, the report %d", len(ctx), len(want))
	}
	byName := rows("--by-name", trace)
	names := map[string]bool{}
	for _, k := range byName {
		m := k.(map[string]any)
		if strings.HasPrefix(m["rule"].(string), "context") {
			t.Errorf("--by-name: a context row %v", m["name"])
		}
		if names[m["name"].(string)] {
			t.Errorf("--by-name: %.60q listed twice", m["name"])
		}
		names[m["name"].(string)] = true
	}
	if has(byName, "gatherTopK", "moe_routing", "") {
		t.Errorf("--by-name: gatherTopK in moe_routing; its name says sampling")
	}
}

// TestReportUsage: usage errors for what would be ignored or meaningless (a negative
// --top, an unknown --phase), and a hint for a gzip'd export.
func TestReportUsage(t *testing.T) {
	inCaptureDir(t, "dense-eager")
	if code, _, e := solRun(t, "report", "--top", "-3", "dense-eager.sqlite"); code != 2 || !strings.Contains(e, "--top must not be negative") {
		t.Errorf("--top -3: exit %d, stderr %q", code, e)
	}
	if code, _, e := solRun(t, "report", "--phase", "steady", "dense-eager.sqlite"); code != 2 ||
		!strings.Contains(e, `--phase: unknown phase "steady" (want decode, prefill, mixed or all)`) {
		t.Errorf("--phase steady: exit %d, stderr %q", code, e)
	}
	gz := filepath.Join(captureDir, "dense-eager.sqlite.gz")
	if _, err := os.Stat(gz); err != nil {
		t.Fatal(err)
	}
	if code, _, e := solRun(t, "report", gz); code != 1 || !strings.Contains(e, `is gzip-compressed`) || !strings.Contains(e, "gunzip -k dense-eager.sqlite.gz") {
		t.Errorf("gzip'd export: exit %d, stderr %q", code, e)
	}
}

// TestReportOneFindingPerRule: on the 2-GPU captures each rule of the JSON plan's groups
// is listed once in the text answer, naming its ranks, with every rank's number on its
// per-rank line; minor ones on the minor line; the JSON keeps each device's findings.
func TestReportOneFindingPerRule(t *testing.T) {
	names := []string{"tp2-moe-eager", "tp2-moe-graph", "hf-qwen3moe-tp2"}
	inCaptureDir(t, names...)
	for _, n := range names {
		code, text, e := solRun(t, "report", n+".sqlite")
		text = strings.ReplaceAll(text, "\n       ", " ") // the answer's lines wrap at 100 columns here
		code2, js, _ := solRun(t, "report", "-f", "json", n+".sqlite")
		if code != 0 || code2 != 0 {
			t.Fatalf("%s: exit %d/%d: %s", n, code, code2, e)
		}
		var v struct {
			Devices []struct {
				Device   int
				Findings []struct{ ID string }
			}
			Plan struct {
				Groups []struct {
					ID      string
					Kind    string
					Minor   bool
					Devices []int
				}
			}
		}
		if err := json.Unmarshal([]byte(js), &v); err != nil {
			t.Fatal(err)
		}
		perDevice := 0
		for _, d := range v.Devices {
			perDevice += len(d.Findings)
		}
		grouped := 0
		for _, g := range v.Plan.Groups {
			grouped += len(g.Devices)
			switch {
			case g.Kind == "warning":
				continue
			case g.Minor:
				if !strings.Contains(text, "minor (under 2% of the step): ") || !strings.Contains(text, " "+g.ID+" ") {
					t.Errorf("%s: minor %s not on the minor line", n, g.ID)
				}
				continue
			}
			if c := strings.Count(text, ". "+g.ID+" ["); c != 1 {
				t.Errorf("%s: %s listed %d times", n, g.ID, c)
			}
			ranks := "rank "
			if len(g.Devices) > 1 {
				ranks = "ranks "
				for _, d := range g.Devices {
					if !strings.Contains(text, fmt.Sprintf("rank %d ", d)) {
						t.Errorf("%s: %s: no per-rank number for rank %d", n, g.ID, d)
					}
				}
			}
			if !strings.Contains(text, ". "+g.ID+" [") || !strings.Contains(text, "] on "+ranks) {
				t.Errorf("%s: %s does not name its ranks", n, g.ID)
			}
		}
		if grouped != perDevice {
			t.Errorf("%s: the groups hold %d findings, the devices %d", n, grouped, perDevice)
		}
	}
}
