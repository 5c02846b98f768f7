package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys/nsystest"
)

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"34.2GB", 34_200_000_000},
		{"34.2gb", 34_200_000_000},
		{"16GiB", 16 << 30},
		{"16 GiB", 16 << 30},
		{"512MB", 512_000_000},
		{"1.5TiB", 3 << 39},
		{"2T", 2_000_000_000_000},
		{"64k", 64_000},
		{"34200000000", 34_200_000_000},
		{"100B", 100},
	} {
		got, err := parseBytes(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "GB", "-1GB", "0", "3XB", "1e400GB", "NaNGB", "0.1B"} {
		if n, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d, want an error", in, n)
		}
	}
}

// solTrace unpacks the project's H200 capture (testdata/traces/dense-eager.sqlite.gz)
// into a temporary folder.
func solTrace(t *testing.T) string {
	t.Helper()
	path := nsystest.GunzipInto(t, nsystest.CapturePath("dense-eager"), t.TempDir())
	return path
}

func solRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, strings.NewReader(""), &o, &e)
	return code, o.String(), e.String()
}

// solJSONOf runs report --format json and returns device 0's "sol" and decode median.
func solJSONOf(t *testing.T, args ...string) (sol map[string]any, median float64) {
	t.Helper()
	code, out, errOut := solRun(t, append([]string{"report", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v struct {
		Devices []struct {
			SOL    map[string]any `json:"sol"`
			Decode struct {
				MedianNS float64 `json:"median_ns"`
			} `json:"decode"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	return v.Devices[0].SOL, v.Devices[0].Decode.MedianNS
}

func TestSOLFlags(t *testing.T) {
	path := solTrace(t)

	// The GPU is an H200: 34.2 GB / 4.8 TB/s = 7.125 ms.
	sol, med := solJSONOf(t, "--sol-bytes", "34.2GB", "--batch", "64", path)
	if sol == nil || med <= 0 {
		t.Fatalf("sol %v, median %v", sol, med)
	}
	if sol["floor_ns"] != 7_125_000.0 || sol["bytes"] != 34.2e9 || sol["bandwidth_bytes_per_s"] != 4.8e12 ||
		sol["source"] != "H200 datasheet HBM3e bandwidth" || sol["measured_ns"] != med || sol["batch"] != 64.0 {
		t.Errorf("sol %v", sol)
	}
	near := func(what string, got any, want, tol float64) {
		t.Helper()
		if g, _ := got.(float64); math.Abs(g-want) > tol {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("ratio", sol["ratio"], med/7.125e6, 1e-6)
	near("efficiency", sol["efficiency"], 7.125e6/med, 1e-6)
	near("tokens_per_s", sol["tokens_per_s"], 1e9/med, 1e-3)
	near("total_tokens_per_s", sol["total_tokens_per_s"], 64e9/med, 1e-3)

	// --bandwidth in GB/s: 16 GiB / 3350 GB/s.
	sol, _ = solJSONOf(t, "--sol-bytes", "16GiB", "--bandwidth", "3350", path)
	if want := math.Round(float64(16<<30) / 3.35e12 * 1e9); sol["floor_ns"] != want || sol["source"] != "--bandwidth" || sol["bandwidth_bytes_per_s"] != 3.35e12 {
		t.Errorf("--bandwidth 3350: sol %v, want floor %v", sol, want)
	}
	sol, _ = solJSONOf(t, "--sol-step", "1.5ms", path)
	if sol["floor_ns"] != 1.5e6 || sol["source"] != "--sol-step" || sol["bytes"] != 0.0 || sol["total_tokens_per_s"] != 0.0 {
		t.Errorf("--sol-step: sol %v", sol)
	}
	if sol, _ = solJSONOf(t, path); sol != nil {
		t.Errorf("sol without a floor: %v", sol)
	}

	// The text names the assumption.
	code, out, errOut := solRun(t, "report", "--top", "0", "--sol-bytes", "34.2GB", "--batch", "64", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(flat(out), "Speed of light: floor 7.125ms = 34.2 GB / 4.8 TB/s (H200 datasheet HBM3e bandwidth); measured median decode step ") ||
		!strings.Contains(flat(out)+" ", " tokens/s total at batch 64 ") {
		t.Errorf("text lacks the speed-of-light line:\n%s", out)
	}
}

func TestSOLUsage(t *testing.T) {
	// The fixture's device has no name: no datasheet bandwidth.
	dir := t.TempDir()
	path := filepath.Join(dir, "unnamed.sqlite")
	nsystest.Write(t, nsystest.Parse(t, filepath.Join("..", "..", "testdata", "nsys", "multi-process.txtar")), path)

	code, _, errOut := solRun(t, "report", "--sol-bytes", "1GB", path)
	if code != 2 || !strings.Contains(errOut, "stepstat report: --sol-bytes: memory bandwidth unknown: device 0 (name not in the export) is not in the datasheet table") ||
		!strings.Contains(errOut, "give --bandwidth GB/s") || !strings.Contains(errOut, "usage: stepstat report") {
		t.Errorf("unknown GPU: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := solRun(t, "diff", "--sol-bytes", "1GB", path, path); code != 2 || !strings.Contains(errOut, "usage: stepstat diff") {
		t.Errorf("diff, unknown GPU: exit %d, stderr %q", code, errOut)
	}
	if code, out, errOut := solRun(t, "report", "--sol-bytes", "1GB", "--bandwidth", "1000", path); code != 0 ||
		!strings.Contains(out, "floor 1.000ms = 1 GB / 1 TB/s (--bandwidth)") {
		t.Errorf("--bandwidth given: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--sol-bytes", "3XB"}, "--sol-bytes: want a positive byte count"},
		{[]string{"--sol-bytes", "1GB", "--sol-step", "1ms"}, "give --sol-step or --sol-bytes, not both"},
		{[]string{"--bandwidth", "4800"}, "--bandwidth needs --sol-bytes"},
		{[]string{"--sol-bytes", "1GB", "--bandwidth", "-5"}, "--bandwidth must not be negative"},
		{[]string{"--sol-bytes", "1GB", "--bandwidth", "NaN"}, "--bandwidth: must be a finite number"},
		{[]string{"--batch", "8"}, "--batch needs --sol-step or --sol-bytes"},
		{[]string{"--sol-step", "1ms", "--batch", "-1"}, "--batch must not be negative"},
		{[]string{"--sol-step", "-1ms"}, "--sol-step must not be negative"},
	} {
		code, _, errOut := solRun(t, append(append([]string{"report"}, c.args...), path)...)
		if code != 2 || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.msg)
		}
	}
}
