package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/stepstat/stepstat/nsys/nsystest"
)

// Hostile inputs, round two (issue 17): crafted files built here, checked for a correct
// answer or one clear line, and, for the memory and time cases, run as a subprocess whose
// peak RSS and wall time are bounded (generously: the bounds catch the quadratic growth
// the cases once had, not a slow machine).

// stepGen describes a generated capture: devices GPUs, each with its own process and
// launching thread, steps NVTX decode_step ranges per thread and kernels launches per step.
type stepGen struct {
	devices, steps, kernels int
	nvtx                    func(dev, step int, start, end int64) string // a row of the nvtx section; nil: the plain range
	extraNVTX               string
}

func (g stepGen) archive() *txtar.Archive {
	var kernels, rt, ranges strings.Builder
	corr := 0
	for d := range g.devices {
		pid := int64(281476654432256) + int64(d)<<24
		tid := pid + 100
		for s := range g.steps {
			t0 := int64(1_000_000 + s*100_000)
			row := fmt.Sprintf("%d\t%d\t59\t\"decode_step %d\"\tNULL\t%d\t0\n", t0, t0+90_000, s, tid)
			if g.nvtx != nil {
				row = g.nvtx(d, s, t0, t0+90_000)
			}
			ranges.WriteString(row)
			for k := range g.kernels {
				corr++
				ls := t0 + 100 + int64(k)*50
				fmt.Fprintf(&rt, "%d\t%d\t%d\t%d\t10\n", ls, ls+20, tid, corr)
				ks := t0 + 5_000 + int64(k)*1_000
				fmt.Fprintf(&kernels, "%d\t%d\t%d\t7\t%d\t%d\t%d\n", ks, ks+800, d, corr, 1+k%2, pid)
			}
		}
	}
	ranges.WriteString(g.extraNVTX)
	return &txtar.Archive{Files: []txtar.File{
		{Name: "strings", Data: []byte("1\tnvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT\n2\tflash_fwd_splitkv_kernel\n10\tcudaLaunchKernel_v7000\n")},
		{Name: "kernels", Data: []byte(kernels.String())},
		{Name: "runtime", Data: []byte(rt.String())},
		{Name: "nvtx", Data: []byte(ranges.String())},
	}}
}

// reportJSON runs report --format json on path and returns the decoded report and stderr.
func reportJSON17(t *testing.T, args ...string) (map[string]any, string) {
	t.Helper()
	code, stdout, stderr := runCLI(append([]string{"report", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("stepstat report %q: exit %d, stderr %q", args, code, firstN(stderr, 300))
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	return rep, stderr
}

func warningsOf(rep map[string]any) []string {
	var ws []string
	for _, w := range rep["warnings"].([]any) {
		ws = append(ws, w.(string))
	}
	return ws
}

func stepCounts(rep map[string]any) []int {
	var n []int
	for _, d := range rep["devices"].([]any) {
		n = append(n, len(d.(map[string]any)["steps"].([]any)))
	}
	return n
}

// TestBadNVTXRangeKeepsSteps (issue 17, item 3): one decode_step range with no end, or
// ending before it starts, in the middle of a 2-GPU trace of 25 steps per device, is
// dropped with one warning naming NVTX_EVENTS; it does not swallow the steps after it.
func TestBadNVTXRangeKeepsSteps(t *testing.T) {
	for _, tc := range []struct{ name, end, want string }{
		{"end NULL", "NULL", "never closed though a later range of the same name follows"},
		{"end before start", "500000", "ending before they start"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			inTempDir(t)
			g := stepGen{devices: 2, steps: 25, kernels: 4}
			g.nvtx = func(dev, step int, start, end int64) string {
				e := fmt.Sprint(end)
				if dev == 0 && step == 12 {
					e = tc.end
				}
				tid := int64(281476654432256) + int64(dev)<<24 + 100
				return fmt.Sprintf("%d\t%s\t59\t\"decode_step %d\"\tNULL\t%d\t0\n", start, e, step, tid)
			}
			nsystest.Write(t, g.archive(), "in.sqlite")
			rep, _ := reportJSON17(t, "--phase", "all", "in.sqlite")
			// Device 0 loses the bad range's step (its kernels join the step before).
			if got := stepCounts(rep); len(got) != 2 || got[0] != 24 || got[1] != 25 {
				t.Errorf("steps per device %v, want [24 25]", got)
			}
			n := 0
			for _, w := range warningsOf(rep) {
				if strings.Contains(w, "NVTX_EVENTS") {
					n++
					if !strings.Contains(w, "dropped 1 of 50 NVTX rows") || !strings.Contains(w, tc.want) {
						t.Errorf("warning %q, want it to say 1 of 50 rows dropped, %s", w, tc.want)
					}
				}
			}
			if n != 1 {
				t.Errorf("%d warnings name NVTX_EVENTS, want 1: %q", n, warningsOf(rep))
			}
		})
	}
}

// TestBadKernelTimestamps (issue 17, item 6): a kernel start of NULL, text, blob or 0, or
// an end of 1e300 or inf, drops the row with one warning naming the kernel table; the GPU
// span does not start at 0, and no kernel of seconds appears.
func TestBadKernelTimestamps(t *testing.T) {
	for _, tc := range []struct{ name, set string }{
		{"start NULL", "start = NULL"},
		{"start text", "start = 'soon'"},
		{"start blob", "start = x'0102'"},
		{"start 0", "start = 0"},
		{"end 1e300", "end = 1e300"},
		{"end inf", "end = 9e999"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			inTempDir(t)
			g := stepGen{devices: 1, steps: 10, kernels: 4}
			ar := g.archive()
			// Re-create the kernel table untyped, so that any value goes in; a trigger
			// spoils the fifth row once it is in.
			ar.Files = append(ar.Files,
				txtar.File{Name: "drop", Data: []byte("CUPTI_ACTIVITY_KIND_KERNEL\n")},
				txtar.File{Name: "sql", Data: []byte(`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, shortName);
CREATE TRIGGER spoil AFTER INSERT ON CUPTI_ACTIVITY_KIND_KERNEL WHEN NEW.rowid = 5 BEGIN UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET ` + tc.set + ` WHERE rowid = 5; END;`)})
			nsystest.Write(t, ar, "in.sqlite")
			rep, _ := reportJSON17(t, "--phase", "all", "in.sqlite")
			var ws []string
			for _, w := range warningsOf(rep) {
				if strings.Contains(w, "CUPTI_ACTIVITY_KIND_KERNEL") {
					ws = append(ws, w)
				}
			}
			if len(ws) != 1 || !strings.HasPrefix(ws[0], "dropped 1 of 40 kernel rows of CUPTI_ACTIVITY_KIND_KERNEL") {
				t.Errorf("kernel-table warnings %q, want one saying 1 of 40 rows dropped", ws)
			}
			for _, k := range rep["kernels"].([]any) {
				k := k.(map[string]any)
				if ns := k["total_ns"].(float64); ns > 20*800 {
					t.Errorf("kernel %v totals %v ns: a bad row was read as a long kernel", k["name"], ns)
				}
			}
			for _, d := range rep["devices"].([]any) {
				for _, s := range d.(map[string]any)["steps"].([]any) {
					s := s.(map[string]any)
					if s["start_ns"].(float64) < 1_000_000 || s["end_ns"].(float64)-s["start_ns"].(float64) > 1e6 {
						t.Errorf("step %v..%v: a bad row moved the step bounds", s["start_ns"], s["end_ns"])
					}
				}
			}
		})
	}
}

// TestSharedCorrelationIDs (issue 17, item 6): every correlationId equal links every
// kernel to every call; the calls are dropped with one warning, and the steps are not one
// per kernel.
func TestSharedCorrelationIDs(t *testing.T) {
	inTempDir(t)
	g := stepGen{devices: 1, steps: 10, kernels: 4}
	ar := g.archive()
	for i, f := range ar.Files {
		if f.Name == "kernels" || f.Name == "runtime" {
			var b strings.Builder
			for _, line := range strings.Split(strings.TrimSpace(string(f.Data)), "\n") {
				fs := strings.Split(line, "\t")
				fs[map[string]int{"kernels": 4, "runtime": 3}[f.Name]] = "1"
				b.WriteString(strings.Join(fs, "\t") + "\n")
			}
			ar.Files[i].Data = []byte(b.String())
		}
	}
	nsystest.Write(t, ar, "in.sqlite")
	rep, _ := reportJSON17(t, "--phase", "all", "in.sqlite")
	// Without links the NVTX ranges own no kernels; the kernel sequence (two names
	// alternating) then gives 20 steps. Not one per kernel, and said.
	if got := stepCounts(rep); len(got) != 1 || got[0] > 20 {
		t.Errorf("steps %v, want at most 20", got)
	}
	found := false
	for _, w := range warningsOf(rep) {
		found = found || strings.Contains(w, "dropped 40 of 40 CUDA API rows of CUPTI_ACTIVITY_KIND_RUNTIME") && strings.Contains(w, "sharing 1 correlation ids")
	}
	if !found {
		t.Errorf("no warning about the shared correlation ids: %q", warningsOf(rep))
	}
}

// subprocess runs stepstat args in a child process (this test binary, re-entered through
// TestMainHelper) and returns its exit status, stderr, peak RSS in MB and wall time.
func subprocess(t *testing.T, args ...string) (int, string, float64, time.Duration) {
	t.Helper()
	cmd := helperCmd(args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	rss := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024 // KB on Linux
	return code, stderr.String(), rss, wall
}

// helperCmd is stepstat args as a child process: this test binary, re-entered through
// TestMainHelper.
func helperCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainHelper$")
	cmd.Env = append(os.Environ(), "STEPSTAT_HELPER_ARGS="+strings.Join(args, "\x1f"))
	return cmd
}

// TestMainHelper is stepstat's main when re-entered by subprocess.
func TestMainHelper(t *testing.T) {
	a := os.Getenv("STEPSTAT_HELPER_ARGS")
	if a == "" {
		t.Skip("only run by subprocess")
	}
	os.Exit(run(strings.Split(a, "\x1f"), strings.NewReader(""), os.Stdout, os.Stderr))
}

// TestDeviceCountBounded (issue 17, item 1): memory grew with the square of the device
// count. 10,000 device ids is past the documented limit (nsys.MaxDevices): one line, exit
// 1; 1,024 devices, the limit, run in bounded memory.
func TestDeviceCountBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two exports of thousands of rows")
	}
	inTempDir(t)
	many := func(n int, path string) {
		var kernels strings.Builder
		for d := range n {
			for s := range 2 {
				t0 := int64(1_000_000 + s*100_000)
				fmt.Fprintf(&kernels, "%d\t%d\t%d\t7\t%d\t1\n", t0+int64(d), t0+int64(d)+500, d, d*2+s+1)
			}
		}
		nsystest.Write(t, &txtar.Archive{Files: []txtar.File{
			{Name: "strings", Data: []byte("1\tncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)\n")},
			{Name: "kernels", Data: []byte(kernels.String())},
		}}, path)
	}
	many(10_000, "many.sqlite")
	if d := os.Getenv("STEPSTAT_KEEP"); d != "" {
		exec.Command("cp", "many.sqlite", d).Run()
	}
	code, stderr, rss, wall := subprocess(t, "report", "--format", "json", "-o", "out.json", "many.sqlite")
	t.Logf("10,000 devices: exit %d, %.0f MB, %v", code, rss, wall)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "stepstat: many.sqlite: GPU activity on 10000 devices (ids 0 to 9999), more than the 1024 stepstat analyses") {
		t.Errorf("exit %d, stderr %q; want 1 and one line naming the limit", code, firstN(stderr, 300))
	}
	if rss > 200 {
		t.Errorf("peak RSS %.0f MB, want < 200", rss)
	}
	many(1024, "limit.sqlite")
	code, stderr, rss, wall = subprocess(t, "report", "--format", "json", "-o", "out.json", "limit.sqlite")
	t.Logf("1,024 devices: exit %d, %.0f MB, %v", code, rss, wall)
	if code != 0 {
		t.Errorf("exit %d, stderr %q", code, firstN(stderr, 300))
	}
	if rss > 200 {
		t.Errorf("peak RSS %.0f MB, want < 200", rss)
	}
}

// TestNestedNVTXBounded (issue 17, items 4 and 5): deeply nested NVTX ranges took time
// quadratic in the depth, and --nvtx-category with nested matching ranges memory of
// depth x launches. 100,000 nested ranges on one thread, every launch inside all of them.
func TestNestedNVTXBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an export of 100,000 ranges")
	}
	dir := inTempDir(t)
	if d := os.Getenv("STEPSTAT_KEEP"); d != "" {
		defer exec.Command("cp", dir+"/nested.sqlite", d).Run()
	}
	const depth = 100_000
	g := stepGen{devices: 1, steps: 20, kernels: 50}
	var b strings.Builder
	tid := int64(281476654432256) + 100
	for i := range depth {
		fmt.Fprintf(&b, "%d\t%d\t59\t\"layer\"\tNULL\t%d\t0\n", 500_000+i, 10_000_000-i, tid)
	}
	g.extraNVTX = b.String()
	nsystest.Write(t, g.archive(), "nested.sqlite")
	for _, args := range [][]string{
		{"report", "-o", "out.txt", "nested.sqlite"},
		{"report", "--nvtx-category", "layer=moe_expert", "--format", "json", "-o", "out.json", "nested.sqlite"},
	} {
		code, stderr, rss, wall := subprocess(t, args...)
		t.Logf("%q: exit %d, %.0f MB, %v", args, code, rss, wall)
		if code != 0 {
			t.Errorf("%q: exit %d, stderr %q", args, code, firstN(stderr, 300))
		}
		if rss > 200 {
			t.Errorf("%q: peak RSS %.0f MB, want < 200", args, rss)
		}
		if wall > 20*time.Second { // 2 s on a free core; the bound catches quadratic time (15 s at 100k)
			t.Errorf("%q: took %v", args, wall)
		}
	}
}

// TestSmallHostileFlags (issue 17, items 8, 9, 10): a -wal file beside the trace is
// named in a warning; a rules file past the limit, out-of-range --device and --batch,
// NaN --alpha and --min-change, and diff sides naming no file fail with one line; a
// right-to-left override in a kernel name is escaped in the text report.
func TestSmallHostileFlags(t *testing.T) {
	inTempDir(t)
	buildFixture(t, "schema-meta-data-export", "in.sqlite")
	writeFile(t, "in.sqlite-wal", "\x37\x7f\x06\x82"+strings.Repeat("\x00", 60)) // a WAL header and a frame
	code, stdout, stderr := runCLI("report", "in.sqlite")
	if code != 0 || !strings.Contains(stdout, "in.sqlite-wal sits beside the trace") {
		t.Errorf("exit %d, stderr %q; the report does not warn about the WAL file", code, stderr)
	}
	writeFile(t, "big.rules", strings.Repeat("gemm ^x\n", 40_000))
	// A FIFO has no size to check: the limit holds on what is read from it.
	if err := syscall.Mkfifo("fifo.rules", 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		w, err := os.OpenFile("fifo.rules", os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		for range 1000 { // 8 MB, unless the reader stops first
			if _, err := w.Write([]byte(strings.Repeat("gemm ^x\n", 1000))); err != nil {
				return
			}
		}
	}()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report", "--rules", "big.rules", "in.sqlite"}, 1, "more than the 262144 bytes a rules file may have"},
		{[]string{"report", "--rules", "fifo.rules", "in.sqlite"}, 1, "more than the 262144 bytes a rules file may have"},
		{[]string{"report", "--device", "99999999999", "in.sqlite"}, 2, "--device 99999999999: CUDA device ids go up to 32767"},
		{[]string{"report", "--batch", "9223372036854775807", "--sol-step", "1ms", "in.sqlite"}, 2, "--batch 9223372036854775807"},
		{[]string{"diff", "--alpha", "NaN", "in.sqlite", "in.sqlite"}, 2, "--alpha and --confidence must be between 0 and 1"},
		{[]string{"diff", "--min-change", "NaN%", "in.sqlite", "in.sqlite"}, 2, "--min-change"},
		{[]string{"diff", ",", ","}, 2, `base side "," names no file`},
		{[]string{"diff", "a=", "b="}, 2, `base side "a=" names no file`},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(strings.SplitN(stderr, "\n", 2)[0], tc.want) {
			t.Errorf("stepstat %q: exit %d, stderr %q; want %d and %q", tc.args, code, firstN(stderr, 200), tc.code, tc.want)
		}
	}
	nsystest.Write(t, stepTrace("gemm_\u202etxet_nekorb\u2066", "\u202edecode", "NVIDIA H200"), "bidi.sqlite")
	code, stdout, _ = runCLI("report", "bidi.sqlite")
	if code != 0 || strings.ContainsAny(stdout, "\u202e\u2066") || !strings.Contains(stdout, `gemm_\u202etxet_nekorb\u2066`) {
		t.Errorf("exit %d; the text report does not escape the bidi controls:\n%s", code, firstN(stdout, 2000))
	}
}
