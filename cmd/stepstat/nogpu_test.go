package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestNoGPUActivityExplained takes the real 2-GPU CUDA-graph capture, drops its kernel,
// memcpy and memset tables (what a capture of a server whose GPU work ran in untraced
// child processes looks like), and checks that report fails with the one-line error, then
// says what nsys recorded: the processes (those that called CUDA marked), nsys's own
// warnings from DIAGNOSTIC_EVENT with their pids, and how to capture child processes.
func TestNoGPUActivityExplained(t *testing.T) {
	inTempDir(t)
	nsystest.Gunzip(t, filepath.Join(captureDir, "tp2-moe-graph.sqlite.gz"), "nogpu.sqlite")
	db, err := sql.Open("sqlite3", "nogpu.sqlite")
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range []string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} {
		if _, err := db.Exec("DROP TABLE " + tb); err != nil {
			t.Fatal(err)
		}
	}
	var warnings int
	if err := db.QueryRow("SELECT count(DISTINCT text) FROM DIAGNOSTIC_EVENT WHERE severity IN (2, 3)").Scan(&warnings); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, stdout, stderr := stepstat("report", "nogpu.sqlite")
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if want := "stepstat: nogpu.sqlite: no GPU activity (no kernel, memcpy, memset or CUDA graph rows)"; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	for _, want := range []string{
		"  nsys saw: python3 (pid 878), python3 (pid 920), python3 (pid 921) with CUDA calls, python3 (pid 922) with CUDA calls",
		"  nsys warning: No CUDA events collected. Does the process use CUDA? (pid 878, 920)",
		"--trace-fork-before-exec=true",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if got := strings.Count(stderr, "\n  nsys warning: "); got != warnings {
		t.Errorf("%d nsys warnings listed, DIAGNOSTIC_EVENT has %d distinct ones:\n%s", got, warnings, stderr)
	}
}
