package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// splitRun writes the 2-GPU capture tp2-moe-eager as one file per process into a folder
// of dir (rank0.sqlite, rank1.sqlite: the second's session 1.5 s earlier, its clock 3.7 ms
// ahead) and returns the whole capture and the folder.
func splitRun(t *testing.T, dir string) (whole, folder string) {
	t.Helper()
	whole = filepath.Join(dir, "tp2-moe-eager.sqlite")
	nsystest.Gunzip(t, filepath.Join(captureDir, "tp2-moe-eager.sqlite.gz"), whole)
	tr, err := nsys.Open(context.Background(), whole, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var pids [2]int64
	for _, k := range tr.Kernels {
		s := tr.Sites[k.Site]
		pids[s.Device] = (tr.Procs[s.Proc] >> 24) & 0xFFFFFF
	}
	const shift, skew = int64(1500 * time.Millisecond), int64(3700 * time.Microsecond)
	parts := nsystest.Split(t, whole, t.TempDir(), []nsystest.Part{
		{PID: pids[0], Env: "RANK=0"},
		{PID: pids[1], Shift: shift, StartShift: -shift + skew, Env: "RANK=1"},
	})
	folder = filepath.Join(dir, "run")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if err := os.Rename(p, filepath.Join(folder, []string{"rank0.sqlite", "rank1.sqlite"}[i])); err != nil {
			t.Fatal(err)
		}
	}
	return whole, folder
}

// TestReportRunFolder reads a folder of one file per process as one run: its rank view is
// the whole capture's (the rank table's wait per step within the offset's uncertainty:
// the same text to four digits), the text states each file's offset, the JSON has the run
// and each device's source, and the same files given one by one (in another order: RANK
// decides) or joined by "+" in diff give the same report.
func TestReportRunFolder(t *testing.T) {
	dir := t.TempDir()
	whole, folder := splitRun(t, dir)
	code, one, stderr := runCLI("report", whole)
	if code != 0 {
		t.Fatalf("report whole: %d %s", code, stderr)
	}
	code, run, stderr := runCLI("report", folder)
	if code != 0 {
		t.Fatalf("report folder: %d %s", code, stderr)
	}
	for _, want := range []string{
		"Run: 2 files on one clock, rank1.sqlite's (the earliest session start)",
		"rank0.sqlite: device 0 = rank0.sqlite pid ",
		"RANK=0; offset +1.500s ± 1.000µs (session starts +1.496s, collectives +3.700ms, from 108 matched calls)",
		"rank1.sqlite: device 1 = rank1.sqlite pid ",
		"Straggler: rank 1 makes rank 0 wait 10.09ms/step",
	} {
		if !strings.Contains(flat(run), want) {
			t.Errorf("run report lacks %q:\n%s", want, run)
		}
	}
	// The rank table's columns that depend on the clock to more than a few ns per call.
	for _, line := range []string{"Step spread across ranks:", "Ranks: 2 devices"} {
		if lineWith(one, line) != lineWith(run, line) {
			t.Errorf("%q line: whole %q, run %q", line, lineWith(one, line), lineWith(run, line))
		}
	}
	code, byFiles, _ := runCLI("report", filepath.Join(folder, "rank1.sqlite"), filepath.Join(folder, "rank0.sqlite"))
	// The same words (wrapped where the longer name pushes them).
	if code != 0 || strings.ReplaceAll(bare(byFiles), bare(filepath.Join(folder, "rank1.sqlite")+"+"+filepath.Join(folder, "rank0.sqlite")), bare(folder)) != bare(run) {
		t.Errorf("the files one by one (RANK orders them) differ from the folder:\n%s", byFiles)
	}
	code, js, _ := runCLI("report", "-f", "json", folder)
	if code != 0 {
		t.Fatal(code)
	}
	var doc struct {
		Run *struct {
			Clock string `json:"clock"`
			Files []struct {
				Rank          *int  `json:"rank"`
				CorrectionNS  int64 `json:"correction_ns"`
				UncertaintyNS int64 `json:"uncertainty_ns"`
				Devices       []int `json:"devices"`
			} `json:"files"`
		} `json:"run"`
		Devices []struct {
			Source *struct {
				File  int    `json:"file"`
				Label string `json:"label"`
			} `json:"source"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Run == nil || doc.Run.Clock != "collectives" || len(doc.Run.Files) != 2 || doc.Run.Files[0].Rank == nil || *doc.Run.Files[0].Rank != 0 {
		t.Fatalf("run %+v", doc.Run)
	}
	if c := doc.Run.Files[0].CorrectionNS - 3700000; c > doc.Run.Files[0].UncertaintyNS || -c > doc.Run.Files[0].UncertaintyNS {
		t.Errorf("correction %d ± %d ns, want 3700000", doc.Run.Files[0].CorrectionNS, doc.Run.Files[0].UncertaintyNS)
	}
	if len(doc.Devices) != 2 || doc.Devices[1].Source == nil || doc.Devices[1].Source.File != 1 {
		t.Errorf("device sources %+v", doc.Devices)
	}
	// HTML: the run's table, and both files' ranks on the one-step time axis.
	page := filepath.Join(dir, "run.html")
	if code, _, stderr := runCLI("report", "-f", "html", "-o", page, folder); code != 0 {
		t.Fatalf("html: %d %s", code, stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="run"`, "rank1.sqlite (reference)", "Files of the run, on one clock", `"dev 0 host `, `"dev 1 host `, `id="timeline-median"`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("html lacks %q", want)
		}
	}
	code, diff, stderr := runCLI("diff", "split="+filepath.Join(folder, "rank0.sqlite")+"+"+filepath.Join(folder, "rank1.sqlite"), "whole="+whole)
	if l := lineWith(diff, "  whole step "); code != 0 || !strings.Contains(l, "+0ns/step") {
		t.Errorf("diff of the run and the whole capture: %d %s\n%s", code, stderr, diff)
	}
	// A folder per side, and repeated runs of folders (commas), as the help says.
	code, diff2, stderr := runCLI("diff", "split="+folder, "whole="+whole)
	if code != 0 || bare(diff2) != strings.ReplaceAll(bare(diff), bare(filepath.Join(folder, "rank0.sqlite")+"+"+filepath.Join(folder, "rank1.sqlite")), bare(folder)) {
		t.Errorf("diff with a folder side differs from the + side: %d %s\n%s", code, stderr, diff2)
	}
	if code, out, stderr := runCLI("diff", "a="+folder+","+folder, "b="+whole+","+whole); code != 0 || !strings.Contains(out, "a: ") {
		t.Errorf("diff of repeated folder runs: %d %s\n%s", code, stderr, out)
	}
}

func lineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestReportRunOneFileFolder: a folder of one file reports as the file, byte for byte.
func TestReportRunOneFileFolder(t *testing.T) {
	dir := t.TempDir()
	folder := filepath.Join(dir, "one")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(folder, "tp2-moe-graph.sqlite")
	nsystest.Gunzip(t, filepath.Join(captureDir, "tp2-moe-graph.sqlite.gz"), path)
	for _, f := range []string{"text", "json"} {
		c1, a, _ := runCLI("report", "-f", f, path)
		c2, b, _ := runCLI("report", "-f", f, folder)
		if c1 != 0 || c2 != 0 || a != b {
			t.Errorf("%s: folder of one file (%d) differs from the file (%d)", f, c2, c1)
		}
	}
	if code, _, stderr := runCLI("report", dir); code != 1 || !strings.Contains(stderr, dir+": is a directory, not an nsys SQLite export, and holds none") {
		t.Errorf("a folder without traces: %d %q", code, stderr)
	}
}

// TestReportNotOneRun: files of two runs are refused (exit 1) naming the file, and
// analysed each on its own with --apart.
func TestReportNotOneRun(t *testing.T) {
	dir := t.TempDir()
	_, folder := splitRun(t, dir)
	other := filepath.Join(dir, "graph.sqlite")
	nsystest.Gunzip(t, filepath.Join(captureDir, "tp2-moe-graph.sqlite.gz"), other)
	a := filepath.Join(folder, "rank0.sqlite")
	code, out, stderr := runCLI("report", a, other)
	if code != 1 || out != "" || !strings.HasPrefix(stderr, "stepstat: "+a+": not one run with "+other+": their GPU work does not overlap in time") ||
		!strings.Contains(stderr, "--apart analyses each on its own") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	code, out, stderr = runCLI("report", "--apart", a, other)
	if code != 0 || strings.Count(out, "analysed apart) ===") != 2 || strings.Contains(out, "Run: ") {
		t.Errorf("--apart: exit %d %s\n%s", code, stderr, out)
	}
	code, out, _ = runCLI("report", "--apart", "-f", "json", a, other)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 {
		t.Errorf("--apart json: exit %d, %d documents", code, len(lines))
	}
}
