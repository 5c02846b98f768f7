package main

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDiffHelpNoReportFlags: diff --help lists no flag that diff refuses (the
// speed-of-light flags are report's), and giving one still says it is report's.
func TestDiffHelpNoReportFlags(t *testing.T) {
	code, stdout, stderr := runCLI("diff", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, n := range reportOnlyFlags {
		if strings.Contains(stdout, "--"+n) {
			t.Errorf("diff --help lists --%s, which diff refuses", n)
		}
		code, _, stderr := runCLI("diff", "--"+n+"="+map[string]string{"sol-step": "7ms", "sol-bytes": "1GB"}[n]+map[bool]string{true: "1"}[n == "bandwidth" || n == "batch"], "a.sqlite", "b.sqlite")
		if code != 2 || !strings.Contains(stderr, "--"+n+" applies to report only") {
			t.Errorf("diff --%s: exit %d, stderr %q", n, code, stderr)
		}
	}
	code, stdout, _ = runCLI("report", "--help")
	for _, n := range reportOnlyFlags {
		if code != 0 || !strings.Contains(stdout, "--"+n) {
			t.Errorf("report --help does not list --%s", n)
		}
	}
}

// TestCompressedInput: an export compressed with xz, zstd or bzip2 (the first bytes
// these tools write, here of a compressed SQLite header) gets the line that gzip gets:
// what it is and the command that decompresses it beside itself.
func TestCompressedInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, hex, undo string
	}{
		{"run.sqlite.xz", "fd377a585a000004e6d6b4460200210116000000742fe5a301000f53514c69746520666f726d617420330000ab4234ab4241d30500012810e50b6c601fb6f37d010000000004595a", "xz -dk run.sqlite.xz"},
		{"run.sqlite.zst", "28b52ffd045881000053514c69746520666f726d6174203300ece7fb24", "zstd -d run.sqlite.zst"},
		{"run.sqlite.bz2", "425a683931415926535952abe3310000035f804000400008000004280023229400200031000008133534c9e8e6a074609a387e745dc914e142414aaf8cc4", "bunzip2 -k run.sqlite.bz2"},
	} {
		b, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI("report", p)
		kind := strings.SplitN(tc.undo, " ", 2)[0]
		kind = map[string]string{"xz": "xz", "zstd": "zstd", "bunzip2": "bzip2"}[kind]
		if code != 1 || !strings.Contains(stderr, "is "+kind+"-compressed") || !strings.Contains(stderr, `"`+tc.undo+`"`) ||
			strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q", tc.name, code, stderr)
		}
	}
}

// TestSkipEveryStep: --skip past the steps a trace has is an error that says how many
// there are and what --skip leaves some (it exited 0 with an empty, garbled report); a
// --skip that leaves steps says how many it skipped.
func TestSkipEveryStep(t *testing.T) {
	inCaptureDir(t, "dense-eager") // 13 steps: 1 prefill, 12 decode
	code, stdout, stderr := runCLI("report", "--skip", "100", "dense-eager.sqlite")
	if code != 1 || stdout != "" || stderr != "stepstat: dense-eager.sqlite: --skip 100 drops every step (found 13 on device 0); give --skip 12 or less\n" {
		t.Errorf("--skip 100: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = runCLI("diff", "--skip", "13", "dense-eager.sqlite", "dense-eager.sqlite")
	if code != 1 || !strings.Contains(stderr, "--skip 13 drops every step") {
		t.Errorf("diff --skip 13: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = runCLI("report", "--skip", "12", "dense-eager.sqlite")
	if code != 0 || !strings.Contains(flat(stdout), "13 steps by sync (13 device-to-host copies, 12 synchronize calls): 1 decode; 12 skipped Steps cut by") {
		t.Errorf("--skip 12: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}

// TestSelfDiffHeadline: a diff of a file with itself (both sides named after it) names
// each side once: "Base dense-eager", not "Base base dense-eager".
func TestSelfDiffHeadline(t *testing.T) {
	inCaptureDir(t, "dense-eager")
	code, stdout, stderr := runCLI("diff", "dense-eager.sqlite", "dense-eager.sqlite")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.SplitN(stdout, "\n", 3)
	if !strings.HasPrefix(lines[0], "Base dense-eager: decode step median") || !strings.HasPrefix(lines[1], "New dense-eager: decode step median") {
		t.Errorf("headlines:\n%s\n%s", lines[0], lines[1])
	}
}

// TestNVTXCategoryRefused: --nvtx-category refuses the categories that no mapping may
// assign, and its error offers only the ones it accepts.
func TestNVTXCategoryRefused(t *testing.T) {
	for _, c := range []string{"idle", "other", "untraced_graph", "matmul"} {
		code, _, stderr := runCLI("report", "--nvtx-category", "x="+c, "none.sqlite")
		_, offered, _ := strings.Cut(stderr, "want one of ")
		offered, _, _ = strings.Cut(offered, ")")
		if code != 2 || offered == "" || strings.Contains(offered, "idle") || strings.Contains(offered, "other") || strings.Contains(offered, "untraced") {
			t.Errorf("x=%s: exit %d, stderr %q", c, code, stderr)
		}
	}
}

// TestPipedWidth: with stdout not a terminal (a pipe, a file) the answer of report and
// diff is wrapped at 100 columns, and no line of report, diff, classify or info is over
// 160, on the 2-GPU capture whose findings ran to 559 characters a line.
func TestPipedWidth(t *testing.T) {
	inCaptureDir(t, "tp2-moe-eager", "tp2-moe-graph")
	for _, args := range [][]string{
		{"report", "tp2-moe-eager.sqlite"},
		{"diff", "tp2-moe-eager.sqlite", "tp2-moe-graph.sqlite"},
		{"classify", "tp2-moe-eager.sqlite"},
		{"info", "tp2-moe-eager.sqlite"},
	} {
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		answerEnd := map[string]string{"report": "\nTrace: ", "diff": "\n\n"}[args[0]]
		answer, _, _ := strings.Cut(stdout, answerEnd)
		widest := 0
		for i, l := range strings.Split(stdout, "\n") {
			n := utf8.RuneCountInString(l)
			if n > 160 {
				t.Errorf("%q line %d: %d runes: %q", args, i+1, n, l)
			}
			if answerEnd != "" && i < strings.Count(answer, "\n")+1 {
				widest = max(widest, n)
			}
		}
		if answerEnd != "" && (widest > 100 || (args[0] == "report" && widest <= 80)) {
			t.Errorf("%q: the answer's widest line has %d runes, want 81-100 (wrapped at 100)", args, widest)
		}
	}
}
