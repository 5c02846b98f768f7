package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestTruthCorpus builds stepstat and runs the truth corpus' checker on it (run.sh: step
// counts, kernels per step, categories adding up, prompt-holding iterations in prefill or
// mixed steps, loop iterations cut at the workloads' own markers after deleting them): every
// case must pass. Skipped where the test corpus (nsystest.TruthDir), python3 or xz is
// absent, and with -short. ../shared/traces/truth/run.sh bin/stepstat runs the same by hand.
func TestTruthCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: decompresses and checks every truth capture")
	}
	script := filepath.Join(nsystest.TruthDir(t), "run.sh")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("the test corpus lacks the truth checker: %v", err)
	}
	nsystest.NeedXZ(t)
	for _, tool := range []string{"python3", "bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s command (the truth checker runs it): install it", tool)
		}
	}
	bin := filepath.Join(t.TempDir(), "stepstat")
	build := exec.Command("go", "build", "-tags", "sqlite_omit_load_extension", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := exec.Command("bash", script, bin)
	run.Env = append(os.Environ(), "TRUTH_TMP="+t.TempDir())
	out, err := run.CombinedOutput()
	m := regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("run.sh: %v, no summary line:\n%s", err, out)
	}
	if string(m[2]) != "0" || err != nil {
		t.Errorf("truth corpus: %s passed, %s failed (%v):\n%s", m[1], m[2], err, bytes.TrimSpace(out))
	}
	// Every capture is a case (the README: 36 of 36 exact).
	caps, _ := filepath.Glob(filepath.Join(nsystest.TruthDir(t), "*.sqlite.xz"))
	if string(m[1]) != strconv.Itoa(len(caps)) {
		t.Errorf("truth corpus: %s cases passed, want one per capture: %d", m[1], len(caps))
	}
}
