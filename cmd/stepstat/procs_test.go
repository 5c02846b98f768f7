package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys/nsystest"
	"github.com/stepstat/stepstat/render/schema"
)

// sharedCapture writes a capture of two real programs on one GPU: the rows of capture b
// added to capture a's as another process (pid 424242) on a's device 0, its GPU work
// starting with a's (nsystest.ShareDevice). It returns its path and those of a and b.
func sharedCapture(t *testing.T, a, b string) (string, string, string) {
	t.Helper()
	dir := t.TempDir()
	pa := nsystest.GunzipInto(t, nsystest.CapturePath(a), dir)
	pb := nsystest.GunzipInto(t, nsystest.CapturePath(b), dir)
	return nsystest.ShareDevice(t, pa, pb, dir, nsystest.Sharer{PID: 424242, Device: 0}), pa, pb
}

func reportOf(t *testing.T, f string) schema.ReportJSON {
	t.Helper()
	code, out, errOut := stepstat("report", "-f", "json", f)
	if code != 0 {
		t.Fatalf("report %s: exit %d: %s", f, code, errOut)
	}
	var rep schema.ReportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// stepShape is what a step is apart from its place on the clock and its process.
func stepShape(s schema.StepJSON) string {
	cats, _ := json.Marshal(s.Categories)
	return fmt.Sprintf("%d %s %d %d %s %s", s.Index, s.Phase, s.EndNS-s.StartNS, s.Launches, s.CutBy, cats)
}

// TestTwoProcessesOneDevice: two servers sharing a GPU. The rows of two real captures
// put on one device as two processes (their work interleaved in time) must give two
// loops, one per pid, each the very steps its capture gives alone: same count, phases,
// wall times, launches, cuts and categories, so that no step holds kernels of the other
// process. Before, both were one timeline (dense-graph beside moe-graph: one loop whose
// steps held kernels of both). The text and HTML name each loop by its pid.
func TestTwoProcessesOneDevice(t *testing.T) {
	for _, pair := range [][2]string{
		{"dense-graph", "moe-graph"},                 // graph replays beside graph replays (sync and graph-launch cuts)
		{"dense-eager-nvtx", "moe-graph-nvtx-serve"}, // NVTX step ranges on both
		{"serve-cb", "hf-moe-eager"},                 // a serving loop beside an eager generate() loop
		{"engine-nvtx-vllm", "engine-bench"},         // vLLM's NVTX beside an engine without it
	} {
		t.Run(pair[0]+"+"+pair[1], func(t *testing.T) {
			f, pa, pb := sharedCapture(t, pair[0], pair[1])
			rep := reportOf(t, f)
			if len(rep.Devices) != 2 {
				t.Fatalf("%d device reports, want one loop per process (2)", len(rep.Devices))
			}
			alone := []schema.ReportJSON{reportOf(t, pa), reportOf(t, pb)}
			pids := map[int64]bool{}
			for i, d := range rep.Devices {
				if d.Device != 0 || d.Processes != 2 {
					t.Errorf("loop %d: device %d, %d processes; want device 0, 2", i, d.Device, d.Processes)
				}
				pids[d.PID] = true
				want := alone[i].Devices[0]
				if (i == 1) != (d.PID == 424242) {
					t.Errorf("loop %d has pid %d", i, d.PID)
				}
				if len(d.Steps) != len(want.Steps) || d.Decode.Steps != want.Decode.Steps || d.Decode.MedianNS != want.Decode.MedianNS {
					t.Errorf("pid %d: %d steps (%d decode, median %d ns); alone: %d (%d, %d ns)", d.PID, len(d.Steps), d.Decode.Steps,
						d.Decode.MedianNS, len(want.Steps), want.Decode.Steps, want.Decode.MedianNS)
					continue
				}
				for k := range d.Steps {
					if d.Steps[k].PID != d.PID {
						t.Errorf("pid %d: step %d has pid %d", d.PID, k, d.Steps[k].PID)
					}
					if g, w := stepShape(d.Steps[k]), stepShape(want.Steps[k]); g != w {
						t.Errorf("pid %d: step %d:\n got %s\nwant %s (alone)", d.PID, k, g, w)
						break
					}
				}
			}
			if len(pids) != 2 {
				t.Errorf("pids %v, want two", pids)
			}
			_, text, _ := stepstat("report", f)
			text = strings.Join(strings.Fields(text), " ") // lines wrapped at the width
			html := filepath.Join(t.TempDir(), "r.html")
			if code, _, errOut := stepstat("report", "--html", html, f); code != 0 {
				t.Fatalf("report --html: %s", errOut)
			}
			page := readFile(t, html)
			for pid := range pids {
				name := fmt.Sprintf("Device 0 pid %d", pid)
				if !strings.Contains(text, name+" (NVIDIA H200): ") || !strings.Contains(page, name) {
					t.Errorf("text or HTML does not name the loop %q", name)
				}
			}
			if !strings.Contains(text, "1 device, 2 processes on device 0: one loop each") {
				t.Errorf("text header does not say the device is shared:\n%s", text)
			}
			if rep.Ranks != nil {
				t.Errorf("a rank view of two processes on one GPU")
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
