package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hostile inputs, round four (issue 34). Every input is a real capture of testdata/traces
// changed here, or a file the test makes.

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSidecarsThroughLink (issue 34, item 2): latest.sqlite -> runs/t.sqlite with
// committed deletes in runs/t.sqlite-wal. SQLite resolves the link and applies the WAL;
// stepstat reads the file immutably, so it must say so through the link as when the file
// is named directly. A hot journal's warning says it holds the rollback; a journal whose
// header is zeroed (journal_mode=PERSIST after a commit) and a WAL without frames hold
// nothing and get no warning.
func TestSidecarsThroughLink(t *testing.T) {
	inTempDir(t)
	capture(t, "dense-eager", "work.sqlite")
	mkdir(t, "runs")
	db, err := sql.Open("sqlite3", "file:work.sqlite?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	var before, after int
	for _, q := range []string{`PRAGMA journal_mode=WAL`, `PRAGMA wal_autocheckpoint=0`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.QueryRow(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL`).Scan(&before)
	if _, err := db.Exec(`DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0`); err != nil {
		t.Fatal(err)
	}
	db.QueryRow(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL`).Scan(&after)
	// The deletes are committed to the WAL; copy it before closing checkpoints it.
	copyFile(t, "work.sqlite", "runs/t.sqlite")
	copyFile(t, "work.sqlite-wal", "runs/t.sqlite-wal")
	db.Close()
	if after >= before || after == 0 {
		t.Fatalf("kernels %d before the deletes, %d after", before, after)
	}
	if err := os.Symlink(filepath.Join("runs", "t.sqlite"), "latest.sqlite"); err != nil {
		t.Fatal(err)
	}
	walWarn := "t.sqlite-wal sits beside the trace"
	for _, name := range []string{"runs/t.sqlite", "latest.sqlite"} {
		for _, reader := range []string{"", "sqlite"} {
			t.Setenv("STEPSTAT_READER", reader)
			out := runOK(t, "report", name)
			if !strings.Contains(out, walWarn) || !strings.Contains(out, "committed changes not yet written into the file") {
				t.Errorf("report %s (reader %q): no warning of the WAL's committed changes:\n%s", name, reader, lastN(out, 1500))
			}
		}
	}
	if out := runOK(t, "report", "latest.sqlite"); !strings.Contains(out, "(the file latest.sqlite links to)") {
		t.Errorf("the warning does not say the WAL sits beside the link's target:\n%s", lastN(out, 1500))
	}
	js := runOK(t, "report", "-f", "json", "latest.sqlite")
	if !strings.Contains(js, walWarn) {
		t.Errorf("the JSON report's warnings lack the WAL")
	}

	// A hot journal (its header's magic in place) through a link; SQLite would roll the
	// file back with it.
	capture(t, "dense-eager", "runs/j.sqlite")
	writeFile(t, "runs/j.sqlite-journal", "\xd9\xd5\x05\xf9\x20\xa1\x63\xd7"+strings.Repeat("\x00", 504))
	if err := os.Symlink(filepath.Join("runs", "j.sqlite"), "j.sqlite"); err != nil {
		t.Fatal(err)
	}
	out := runOK(t, "report", "j.sqlite")
	if !strings.Contains(out, "j.sqlite-journal sits beside the trace: a hot journal holds the rollback of a write left unfinished") {
		t.Errorf("no true hot-journal warning:\n%s", lastN(out, 1500))
	}
	if strings.Contains(out, "without the changes held there") {
		t.Errorf("the journal warning still says the journal holds changes")
	}
	// Nothing held: a zeroed journal header, a WAL of its header alone.
	writeFile(t, "runs/j.sqlite-journal", strings.Repeat("\x00", 512))
	writeFile(t, "runs/j.sqlite-wal", "\x37\x7f\x06\x82"+strings.Repeat("\x00", 28))
	if out := runOK(t, "report", "j.sqlite"); strings.Contains(out, "sits beside the trace") {
		t.Errorf("a warning for a journal and a WAL holding nothing:\n%s", lastN(out, 1500))
	}
}

// lastN returns the last n bytes of s.
func lastN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// TestKnobValueSecrets (issue 34, item 3): knob names pass the allow-list, but their
// values carry credentials. Each of the seven reaches no output (text, JSON, HTML, diff),
// the knob is still shown with its value's other parts, and every output says which
// values were redacted.
func TestKnobValueSecrets(t *testing.T) {
	inTempDir(t)
	capture(t, "dense-eager", "base.sqlite")
	capture(t, "dense-eager", "in.sqlite")
	appendEnv(t, "in.sqlite", "VLLM_MODEL_URL=https://hub.example/m?revision=main&token=hftok77;"+
		"TORCH_BLOB=https://acct.blob.core.windows.net/c/w.pt?sv=2022-11-02&sig=sasSig88;"+
		"VLLM_ALERT_URL=https://hooks.slack.com/services/T0X/B0X/whpath99;"+
		"VLLM_DB=host=db user=svc password=pgpw11 dbname=m;"+
		"SGLANG_HEADERS=Authorization: Bearer sk-bear22;"+
		"TRTLLM_ARGS=--api-key=apik33 --port 8000;"+
		"VLLM_CACHE_SALT=pepper44;"+
		"NCCL_X=AKIAIOSFODNN7EXAMPL5")
	secrets := []string{"hftok77", "sasSig88", "whpath99", "pgpw11", "sk-bear22", "apik33", "pepper44", "AKIAIOSFODNN7EXAMPL5"}
	kept := []string{"https://hub.example/m?revision=main&token=[redacted]", "password=[redacted] dbname=m", "--port 8000", "https://hooks.slack.com/[redacted]"}
	outputs := map[string]string{
		"report text": runOK(t, "report", "in.sqlite"),
		"report json": runOK(t, "report", "-f", "json", "in.sqlite"),
		"diff text":   runOK(t, "diff", "base.sqlite", "in.sqlite"),
		"diff json":   runOK(t, "diff", "-f", "json", "base.sqlite", "in.sqlite"),
	}
	runOK(t, "report", "-f", "html", "-o", "r.html", "in.sqlite")
	runOK(t, "diff", "-f", "html", "-o", "d.html", "base.sqlite", "in.sqlite")
	outputs["report html"], outputs["diff html"] = readString(t, "r.html"), readString(t, "d.html")
	said := "run configuration: credential-shaped parts of 8 values redacted, shown as [redacted] (NCCL_X, SGLANG_HEADERS, TORCH_BLOB, TRTLLM_ARGS, VLLM_ALERT_URL, VLLM_CACHE_SALT, VLLM_DB, VLLM_MODEL_URL)"
	for what, out := range outputs {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s holds %q", what, s)
			}
		}
		if strings.HasPrefix(what, "report") {
			for _, k := range kept {
				if !strings.Contains(out, k) && !strings.Contains(out, strings.ReplaceAll(k, "&", `\u0026`)) && !strings.Contains(out, strings.ReplaceAll(k, "&", "&amp;")) {
					t.Errorf("%s lacks %q", what, k)
				}
			}
		}
		if !strings.Contains(out, said) && !strings.Contains(strings.Join(strings.Fields(out), " "), said) { // text wraps at 160
			t.Errorf("%s does not say which values were redacted", what)
		}
	}
}
