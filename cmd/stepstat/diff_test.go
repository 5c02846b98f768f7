package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestDiffGolden compares eager with CUDA-graph decode of the same workload (the project's
// captures) and a capture with itself, in text and JSON.
func TestDiffGolden(t *testing.T) {
	inCaptureDir(t, "dense-eager", "dense-graph", "moe-eager-nvtx", "moe-graph")
	for _, tc := range []struct {
		scenario string
		args     []string
	}{
		{"diff-eager-graph", []string{"diff", "eager=dense-eager.sqlite", "graph=dense-graph.sqlite"}},
		{"diff-eager-graph-json", []string{"diff", "-f", "json", "eager=dense-eager.sqlite", "graph=dense-graph.sqlite"}},
		{"diff-moe-eager-graph", []string{"diff", "eager=moe-eager-nvtx.sqlite", "graph=moe-graph.sqlite"}},
		{"diff-no-change", []string{"diff", "dense-eager.sqlite", "dense-eager.sqlite"}},
		{"diff-no-change-json", []string{"diff", "--format", "json", "dense-eager.sqlite", "dense-eager.sqlite"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			if code := golden(t, tc.scenario, tc.args...); code != 0 {
				t.Errorf("exit %d", code)
			}
		})
	}
}

// TestDiffEagerVsGraph checks what the comparison must show: CUDA graphs cut the decode
// step time by a large, significant amount, host launches per step fall from hundreds to a
// handful, and kernels per step stay the same.
func TestDiffEagerVsGraph(t *testing.T) {
	inCaptureDir(t, "moe-eager-nvtx", "moe-graph")
	code, stdout, stderr := stepstat("diff", "-f", "json", "moe-eager-nvtx.sqlite", "moe-graph.sqlite")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var d struct {
		Base, New struct {
			LaunchesPerStep float64 `json:"launches_per_step"`
			KernelsPerStep  float64 `json:"kernels_per_step"`
			DecodeSteps     int     `json:"decode_steps"`
		}
		Step struct {
			DeltaPct    *float64 `json:"delta_pct"`
			PValue      float64  `json:"p_value"`
			Significant bool     `json:"significant"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	if d.Step.DeltaPct == nil || *d.Step.DeltaPct > -40 || !d.Step.Significant || d.Step.PValue > 0.001 {
		t.Errorf("step: delta %v%%, p=%v, significant %v; want a large, significant drop", d.Step.DeltaPct, d.Step.PValue, d.Step.Significant)
	}
	if d.Base.LaunchesPerStep < 100 || d.New.LaunchesPerStep > 5 {
		t.Errorf("host launches per step %v -> %v; want hundreds -> a handful", d.Base.LaunchesPerStep, d.New.LaunchesPerStep)
	}
	if d.Base.KernelsPerStep != d.New.KernelsPerStep {
		t.Errorf("kernels per step %v -> %v; want equal", d.Base.KernelsPerStep, d.New.KernelsPerStep)
	}
	if d.Base.DecodeSteps != 12 || d.New.DecodeSteps != 12 {
		t.Errorf("decode steps %d, %d; want 12 each", d.Base.DecodeSteps, d.New.DecodeSteps)
	}
}

// TestDiffSelf checks that a capture compared with itself has no significant row: every
// row ~ with p = 1.
func TestDiffSelf(t *testing.T) {
	inCaptureDir(t, "moe-eager-nvtx")
	code, stdout, stderr := stepstat("diff", "-f", "json", "moe-eager-nvtx.sqlite", "moe-eager-nvtx.sqlite")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var d struct {
		Step       map[string]any            `json:"step"`
		Categories map[string]map[string]any `json:"categories"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]any{"whole step": d.Step}
	for k, v := range d.Categories {
		rows[k] = v
	}
	for name, r := range rows {
		if r["significant"] != false || r["p_value"] != 1.0 || r["mean_significant"] != false || r["mean_p_value"] != 1.0 ||
			r["mean_change_ns"] != 0.0 || r["comparable"] != true {
			t.Errorf("%s: significant %v/%v, p %v/%v, mean change %v, comparable %v; want ~ with p = 1 in both views, no change",
				name, r["significant"], r["mean_significant"], r["p_value"], r["mean_p_value"], r["mean_change_ns"], r["comparable"])
		}
	}
	_, text, _ := stepstat("diff", "moe-eager-nvtx.sqlite", "moe-eager-nvtx.sqlite")
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "(p=") && !(strings.Contains(line, " ~ ") && strings.Contains(line, "(p=1.000 ")) {
			t.Errorf("row not ~ with p=1: %q", line)
		}
	}
}

// TestDiffPublicPair runs the public before/after pair of a 2-GPU training script.
func TestDiffPublicPair(t *testing.T) {
	before := nsystest.PublicTrace(t, "nsys-ai__mfu_2gpu_before.sqlite")
	after := nsystest.PublicTrace(t, "nsys-ai__mfu_2gpu_after.sqlite")
	for _, f := range []string{"text", "json", "html"} {
		code, stdout, stderr := stepstat("diff", "-f", f, "-o", filepath.Join(t.TempDir(), "d."+f), before, after)
		if code != 0 {
			t.Errorf("%s: exit %d: %s %s", f, code, stdout, stderr)
		}
	}
}

// TestDiffUsage: the speed-of-light flags are usage errors on diff (it compares steps, not
// a floor), and --unit run with one file per side warns that it cannot test.
func TestDiffUsage(t *testing.T) {
	inCaptureDir(t, "dense-eager", "dense-graph")
	for _, f := range [][]string{{"--sol-step", "1ms"}, {"--sol-bytes", "1GB"}, {"--bandwidth", "4800"}, {"--batch", "4"}} {
		args := append(append([]string{"diff"}, f...), "dense-eager.sqlite", "dense-graph.sqlite")
		if code, _, e := solRun(t, args...); code != 2 || !strings.Contains(e, f[0]+" applies to report only") {
			t.Errorf("diff %s: exit %d, stderr %q", f[0], code, e)
		}
	}
	code, out, _ := solRun(t, "diff", "--unit", "run", "dense-eager.sqlite", "dense-graph.sqlite")
	if code != 0 || !strings.Contains(out, "\n\nCannot test: one sample per run, 1 on dense-eager and 1 on dense-graph") {
		t.Errorf("--unit run, one file per side: exit %d, no warning in:\n%s", code, out)
	}
	for _, bad := range []string{"--min-change=-1%", "--min-change=fast", "--min-change=-2us"} {
		if code, _, e := solRun(t, "diff", bad, "dense-eager.sqlite", "dense-graph.sqlite"); code != 2 || !strings.Contains(e, "--min-change") {
			t.Errorf("diff %s: exit %d, stderr %q", bad, code, e)
		}
	}
}

// TestDiffTP2Story: the 2-GPU eager -> CUDA graphs pair in text and JSON. What changed has
// the all-reduce with rank 0's drop under it, with its test; the wait/transfer comparison
// names each rank; JSON carries the mean change, interval and p-value per category and rank.
func TestDiffTP2Story(t *testing.T) {
	inCaptureDir(t, "tp2-moe-eager", "tp2-moe-graph")
	code, text, stderr := stepstat("diff", "eager=tp2-moe-eager.sqlite", "graph=tp2-moe-graph.sqlite")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	story := text[strings.Index(text, "What changed"):strings.Index(text, "Medians per")]
	lines := strings.Split(story, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "  allreduce ") })
	if i < 0 || i+1 >= len(lines) || !regexp.MustCompile(`^    rank 0 +9\.\d+ms -> \d+\.\d+µs +-9\.\d+ms/step ± \S+ +-9\d\.\d\d%  \(p=0\.0\d\d n=12\)$`).MatchString(lines[i+1]) {
		t.Errorf("what changed has no allreduce line with rank 0's drop under it:\n%s", story)
	}
	if !strings.Contains(story, "why: the median says ~") || !strings.Contains(story, "(all on rank 0)") {
		t.Errorf("no reason why the median disagrees:\n%s", story)
	}
	for _, want := range []string{"wait/step", "transfer/step", "straggler: rank 1 (last at 106 of 108"} {
		if !strings.Contains(story, want) {
			t.Errorf("what changed lacks %q:\n%s", want, story)
		}
	}
	if !regexp.MustCompile(`\n +0 +10\.\d\dms -> \d+\.\d+µs`).MatchString(story) {
		t.Errorf("rank 0's wait per step is not ~10ms before, µs after:\n%s", story)
	}
	_, js, _ := stepstat("diff", "-f", "json", "tp2-moe-eager.sqlite", "tp2-moe-graph.sqlite")
	var d struct {
		Categories map[string]struct {
			MeanChange int64    `json:"mean_change_ns"`
			Lo         *int64   `json:"mean_change_lo_ns"`
			Hi         *int64   `json:"mean_change_hi_ns"`
			P          *float64 `json:"mean_p_value"`
			Comparable bool     `json:"comparable"`
		}
		Ranks []struct {
			Categories map[string]struct {
				MeanChange  int64    `json:"mean_change_ns"`
				P           *float64 `json:"mean_p_value"`
				Significant bool     `json:"mean_significant"`
			}
			BaseWait     int64 `json:"base_wait_ns"`
			NewWait      int64 `json:"new_wait_ns"`
			BaseTransfer int64 `json:"base_transfer_ns"`
		}
		WhatChanged []struct {
			Name  string
			Ranks []int
		} `json:"what_changed"`
		Straggler struct{ Base, New *struct{ Device int } }
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatal(err)
	}
	ar := d.Categories["allreduce"]
	if ar.MeanChange > -4e6 || ar.Lo == nil || ar.Hi == nil || *ar.Hi >= 0 || ar.P == nil || *ar.P >= 0.05 || !ar.Comparable {
		t.Errorf("JSON pooled allreduce: %+v", ar)
	}
	if len(d.Ranks) != 2 {
		t.Fatalf("JSON: %d ranks", len(d.Ranks))
	}
	r0 := d.Ranks[0].Categories["allreduce"]
	if r0.MeanChange > -9e6 || r0.P == nil || !r0.Significant || d.Ranks[0].BaseWait < 9e6 || d.Ranks[0].NewWait > 1e6 || d.Ranks[0].BaseTransfer == 0 {
		t.Errorf("JSON rank 0: allreduce %+v, wait %d -> %d", r0, d.Ranks[0].BaseWait, d.Ranks[0].NewWait)
	}
	j := slices.IndexFunc(d.WhatChanged, func(x struct {
		Name  string
		Ranks []int
	}) bool {
		return x.Name == "allreduce"
	})
	if j < 0 || !slices.Contains(d.WhatChanged[j].Ranks, 0) || d.Straggler.Base == nil || d.Straggler.Base.Device != 1 {
		t.Errorf("JSON what_changed %+v, straggler %+v", d.WhatChanged, d.Straggler)
	}
}

// TestDiffGraphLevel: eager against a capture traced at graph level: no -100% row
// anywhere, the categories are not comparable with the reason, and the capture's warning
// is at the top, before what changed.
func TestDiffGraphLevel(t *testing.T) {
	inCaptureDir(t, "hf-qwen3moe-eager", "hf-qwen3moe-compile-graphlevel")
	for _, f := range []string{"text", "json"} {
		code, out, stderr := stepstat("diff", "-f", f, "hf-qwen3moe-eager.sqlite", "hf-qwen3moe-compile-graphlevel.sqlite")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if strings.Contains(out, "-100") {
			t.Errorf("%s: a -100%% change:\n%s", f, out)
		}
	}
	_, text, _ := stepstat("diff", "hf-qwen3moe-eager.sqlite", "hf-qwen3moe-compile-graphlevel.sqlite")
	ft := flat(text)
	nc, warn, story := strings.Index(ft, "Not comparable"), strings.Index(ft, "traced at graph level (nsys' default"), strings.Index(ft, "What changed")
	if nc < 0 || warn < 0 || story < 0 || !(nc < story && warn < story) {
		t.Errorf("not comparable at %d, graph-level warning at %d, what changed at %d; want both before what changed:\n%s", nc, warn, story, text)
	}
	if !regexp.MustCompile(`\ngemm +124\.\dµs ± \d+% +0ns ± 0% +n/c \(not comparable n=15\)`).MatchString(text) {
		t.Errorf("the gemm median row is not marked not comparable:\n%s", text)
	}
}

// TestDiffRuns: the same workload captured 4 times per side. --unit run with 2 runs a
// side says first that it cannot test and gives no verdict, and its caveat does not send
// the user to --unit run; with 4 a side the step and idle changes are significant
// (p = 2/70 = 0.029).
func TestDiffRuns(t *testing.T) {
	var names []string
	for _, m := range []string{"eager", "graph"} {
		for i := 1; i <= 4; i++ {
			names = append(names, fmt.Sprintf("runs/dense-%s-r%d", m, i))
		}
	}
	inCaptureDirMk(t, names...)
	side := func(m string, n int) string {
		var fs []string
		for i := 1; i <= n; i++ {
			fs = append(fs, fmt.Sprintf("runs/dense-%s-r%d.sqlite", m, i))
		}
		return m + "=" + strings.Join(fs, ",")
	}
	code, two, stderr := stepstat("diff", "--unit", "run", side("eager", 2), side("graph", 2))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The answer (each side's step, the verdict), the header, then the notice.
	first := strings.SplitN(two, "\n\n", 4)
	if len(first) < 4 || !strings.HasPrefix(first[2], "Cannot test: one sample per run, 2 on eager and 2 on graph") {
		t.Errorf("2 runs a side: the first paragraph after the header is not the cannot-test notice:\n%s", two)
	}
	if strings.Contains(two, "(p=") || strings.Contains(two, "use --unit run") {
		t.Errorf("2 runs a side: a p-value or a recommendation of --unit run:\n%s", two)
	}
	if !regexp.MustCompile(`\n  idle +\S+ms -> \S+µs +-2\.\d+ms/step  -9\d\.\d\d%  \(no test: n=2\)`).MatchString(two) {
		t.Errorf("2 runs a side: the idle change is not shown without a verdict:\n%s", two)
	}
	_, four, _ := stepstat("diff", "--unit", "run", side("eager", 4), side("graph", 4))
	if strings.Contains(four, "Cannot test") || !regexp.MustCompile(`\n  whole step +2\.\d+ms -> 4\d\d\.\dµs +-1\.\d+ms/step ± \S+ +-8\d\.\d\d%  \(p=0\.029 n=4\)`).MatchString(four) ||
		!regexp.MustCompile(`\n  idle .* -9\d\.\d\d%  \(p=0\.029 n=4\)`).MatchString(four) {
		t.Errorf("4 runs a side: no verdict on the step and idle:\n%s", four)
	}
}

// inCaptureDirMk is inCaptureDir for names in subfolders of the captures (runs/...).
func inCaptureDirMk(t *testing.T, names ...string) {
	t.Helper()
	t.Chdir(t.TempDir())
	for _, name := range names {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		nsystest.Gunzip(t, filepath.Join(captureDir, name+".sqlite.gz"), name+".sqlite")
	}
}

// TestDiffFailOnRegression: diff --fail-on-regression exits 3 when the new side is
// significantly slower (graph -> eager, on 1 and 2 GPUs), with the output written and one
// line on stderr naming the change; 0 for the reverse, for no change, and without the flag;
// beyond --min-change only. Usage mistakes still exit 2.
func TestDiffFailOnRegression(t *testing.T) {
	inCaptureDir(t, "dense-eager", "dense-graph", "tp2-moe-eager", "tp2-moe-graph")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--fail-on-regression", "graph=dense-graph.sqlite", "eager=dense-eager.sqlite"}, 3},
		{[]string{"--fail-on-regression", "-f", "json", "tp2-moe-graph.sqlite", "tp2-moe-eager.sqlite"}, 3},
		{[]string{"--fail-on-regression", "eager=dense-eager.sqlite", "graph=dense-graph.sqlite"}, 0},
		{[]string{"--fail-on-regression", "tp2-moe-eager.sqlite", "tp2-moe-graph.sqlite"}, 0},
		{[]string{"--fail-on-regression", "a=dense-graph.sqlite", "b=dense-graph.sqlite"}, 0},
		{[]string{"graph=dense-graph.sqlite", "eager=dense-eager.sqlite"}, 0},
		{[]string{"--fail-on-regression", "--min-change", "1000%", "graph=dense-graph.sqlite", "eager=dense-eager.sqlite"}, 0},
		{[]string{"--fail-on-regression", "dense-graph.sqlite"}, 2},
		// A gate that cannot decide fails with its own code (4), not 0: two runs a side
		// per run (+2022%: the test needs 4), and prefill's one step a side.
		{[]string{"--fail-on-regression", "--unit", "run", "graph=dense-graph.sqlite,dense-graph.sqlite", "eager=dense-eager.sqlite,dense-eager.sqlite"}, 4},
		{[]string{"--fail-on-regression", "--phase", "prefill", "graph=dense-graph.sqlite", "eager=dense-eager.sqlite"}, 4},
		{[]string{"--unit", "run", "graph=dense-graph.sqlite,dense-graph.sqlite", "eager=dense-eager.sqlite,dense-eager.sqlite"}, 0},
	} {
		code, out, errOut := solRun(t, append([]string{"diff"}, tc.args...)...)
		if code != tc.code {
			t.Errorf("diff %q: exit %d, want %d; stderr %q", tc.args, code, tc.code, errOut)
			continue
		}
		if code == 3 {
			if out == "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "stepstat diff: regression: mean decode step ") {
				t.Errorf("diff %q: stdout %d bytes, stderr %q; want the output and one regression line", tc.args, len(out), errOut)
			}
		}
		if code == 4 && (out == "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "stepstat diff: cannot decide whether the new side is slower: ")) {
			t.Errorf("diff %q: stdout %d bytes, stderr %q; want the output and one line saying why it cannot decide", tc.args, len(out), errOut)
		}
		if code == 0 && errOut != "" {
			t.Errorf("diff %q: exit 0 with stderr %q", tc.args, errOut)
		}
	}
}

// TestTokensUsage: --tokens takes one positive count on report and BASE,NEW on diff (one
// file a side); anything else is a usage mistake (exit 2) naming the flag.
func TestTokensUsage(t *testing.T) {
	inCaptureDir(t, "serve-assisted", "dense-eager")
	for _, args := range [][]string{
		{"report", "--tokens", "-1", "serve-assisted.sqlite"},
		{"diff", "--tokens", "60", "serve-assisted.sqlite", "dense-eager.sqlite"},
		{"diff", "--tokens", "60,x", "serve-assisted.sqlite", "dense-eager.sqlite"},
		{"diff", "--tokens", "60,0", "serve-assisted.sqlite", "dense-eager.sqlite"},
		{"diff", "--tokens", "60,40", "serve-assisted.sqlite,dense-eager.sqlite", "dense-eager.sqlite"},
	} {
		if code, _, e := solRun(t, args...); code != 2 || !strings.Contains(e, "--tokens") {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming --tokens", args, code, e)
		}
	}
	code, out, e := solRun(t, "report", "--tokens", "40", "serve-assisted.sqlite")
	out = strings.ReplaceAll(out, "\n  ", " ") // the answer wraps to the terminal (100 columns here)
	if code != 0 || !strings.HasPrefix(out, "Steps are speculative rounds: time per round is not time per token (") || !strings.Contains(out, "/token (40 tokens, --tokens)") {
		t.Errorf("report --tokens 40: exit %d, stderr %q, output:\n%.600s", code, e, out)
	}
}

// TestDiffCaptureOptions: hf-qwen3moe-compile and hf-qwen3moe-compile-graphlevel are one
// workload captured with --cuda-graph-trace=node and =graph. diff names the differing
// nsys option (META_DATA_CAPTURE PROCESS_0:CUDA_GRAPH_TRACE_OPTIONS:MODE Node -> Graph) in
// its warnings and in JSON's capture_changes, as a comparability warning; a capture against
// itself has none.
func TestDiffCaptureOptions(t *testing.T) {
	inCaptureDir(t, "hf-qwen3moe-compile", "hf-qwen3moe-compile-graphlevel")
	code, text, stderr := stepstat("diff", "node=hf-qwen3moe-compile.sqlite", "graph=hf-qwen3moe-compile-graphlevel.sqlite")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	warn := regexp.MustCompile(`Warnings \(the captures' own, then the comparison's\): .*different nsys options \(META_DATA_CAPTURE, node -> graph\): PROCESS_0:CUDA_GRAPH_TRACE_OPTIONS:MODE Node -> Graph;`)
	if !warn.MatchString(flat(text)) {
		t.Errorf("the differing capture option is not a warning:\n%s", text)
	}
	code, js, stderr := stepstat("diff", "-f", "json", "node=hf-qwen3moe-compile.sqlite", "graph=hf-qwen3moe-compile-graphlevel.sqlite")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	var d struct {
		Capture []struct {
			Name      string
			Base, New *string
		} `json:"capture_changes"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Capture) != 1 || d.Capture[0].Name != "PROCESS_0:CUDA_GRAPH_TRACE_OPTIONS:MODE" || d.Capture[0].Base == nil || *d.Capture[0].Base != "Node" ||
		d.Capture[0].New == nil || *d.Capture[0].New != "Graph" {
		t.Errorf("capture_changes %+v; want the graph trace mode, Node -> Graph", d.Capture)
	}
	if !slices.ContainsFunc(d.Warnings, func(w string) bool { return strings.Contains(w, "different nsys options") }) {
		t.Errorf("JSON warnings %q do not name the capture difference", d.Warnings)
	}
	if _, self, _ := stepstat("diff", "hf-qwen3moe-compile.sqlite", "hf-qwen3moe-compile.sqlite"); strings.Contains(self, "nsys options") {
		t.Errorf("a capture against itself has a capture-option warning:\n%s", self)
	}
}

// TestDiffRanksAsRuns: the two processes of tp2-moe-eager, split into one file each (as
// nsys profile -o rank_%q{RANK} under torchrun writes them), given as repeated runs
// (base=r0,r1) are ranks of one run: diff warns, naming both files and how to give them
// (r0+r1 or their folder); joined by + they are one run, without the warning.
func TestDiffRanksAsRuns(t *testing.T) {
	inCaptureDir(t, "tp2-moe-eager")
	tr, err := nsys.Open(context.Background(), "tp2-moe-eager.sqlite", nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var pids [2]int64 // the process of each device
	for _, k := range tr.Kernels {
		if s := tr.Sites[k.Site]; s.Device < 2 {
			pids[s.Device] = (tr.Procs[s.Proc] >> 24) & 0xFFFFFF
		}
	}
	tr.Release()
	if pids[0] == 0 || pids[0] == pids[1] {
		t.Fatalf("tp2-moe-eager: pids %v; want one process per device", pids)
	}
	parts := nsystest.Split(t, "tp2-moe-eager.sqlite", ".", []nsystest.Part{
		{PID: pids[0], Env: "RANK=0;LOCAL_RANK=0"},
		{PID: pids[1], Env: "RANK=1;LOCAL_RANK=1"},
	})
	r0, r1 := filepath.Base(parts[0]), filepath.Base(parts[1])
	code, text, stderr := stepstat("diff", "a="+r0+","+r1, "b="+r0+","+r1)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := fmt.Sprintf("a: %s and %s ran at the same time (RANK 0 and 1): they look like ranks of one run, not repeated runs", r0, r1)
	if !strings.Contains(strings.Join(strings.Fields(text), " "), want) || !strings.Contains(text, "a="+r0+"+"+r1) {
		t.Errorf("no ranks-as-runs warning (%q):\n%s", want, text)
	}
	code, joined, stderr := stepstat("diff", "a="+r0+"+"+r1, "b="+r0+"+"+r1)
	if code != 0 {
		t.Fatalf("joined: exit %d: %s", code, stderr)
	}
	if strings.Contains(joined, "ranks of one run") {
		t.Errorf("one run of two files warned about as ranks given as runs:\n%s", joined)
	}
	// Without RANK in the environment (nsys around the whole torchrun, split later): the
	// same program at the same time on different devices.
	bare := nsystest.Split(t, "tp2-moe-eager.sqlite", t.TempDir(), []nsystest.Part{{PID: pids[0]}, {PID: pids[1]}})
	_, text, _ = stepstat("diff", "a="+bare[0]+","+bare[1], "b="+bare[0])
	if !strings.Contains(strings.Join(strings.Fields(text), " "), "ran at the same time (different devices): they look like ranks of one run") {
		t.Errorf("no ranks-as-runs warning without RANK:\n%s", text)
	}
}
