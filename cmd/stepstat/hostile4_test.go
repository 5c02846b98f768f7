package main

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
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
			if !strings.Contains(flat(out), walWarn) || !strings.Contains(flat(out), "committed changes not yet written into the file") {
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
	if !strings.Contains(flat(out), "j.sqlite-journal sits beside the trace: a hot journal holds the rollback of a write left unfinished") {
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

// TestFIFOInputRefused (issue 34, item 4): a FIFO named as a report or an export is
// refused before anything opens it (open(2) of a FIFO blocks until a writer comes).
func TestFIFOInputRefused(t *testing.T) {
	inTempDir(t)
	for _, name := range []string{"run.nsys-rep", "run.qdrep", "run.sqlite"} {
		if err := syscall.Mkfifo(name, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"report", name}, {"info", name}, {"classify", name}, {"diff", name, name}} {
			type result struct {
				code   int
				stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, _, stderr := runCLI(args...)
				done <- result{code, stderr}
			}()
			select {
			case r := <-done:
				if want := "stepstat: " + name + ": is not a regular file\n"; r.code != 1 || r.stderr != want {
					t.Errorf("stepstat %q: exit %d, stderr %q; want 1 and %q", args, r.code, r.stderr, want)
				}
			case <-time.After(10 * time.Second):
				// Unblock the open so the test can end.
				if w, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				t.Fatalf("stepstat %q blocked on the FIFO", args)
			}
		}
	}
}

// TestSignalDuringAnalysis (issue 34, item 4): SIGINT or SIGTERM during the analysis (a
// capture grown to 192 devices, 3 s of analysis on a free core) ends the run within a
// second with exit 128+signal and the interrupted line, and leaves no output: none at
// -o, no temporary file, nothing on stdout.
func TestSignalDuringAnalysis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an export of 800,000 kernels")
	}
	dir := inTempDir(t)
	capture(t, "tp2-moe-eager", "big.sqlite")
	growDevices(t, "big.sqlite", 192)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, args := range [][]string{{"report", "-f", "json", "-o", "out.json", "big.sqlite"}, {"report", "big.sqlite"}} {
			cmd := helperCmd(args...)
			cmd.Env = append(cmd.Env, "STEPSTAT_PHASES=1")
			var stdout strings.Builder
			cmd.Stdout = &stdout
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait for the read to end: the analysis runs from there.
			var errText strings.Builder
			buf := make([]byte, 4096)
			for !strings.Contains(errText.String(), "stepstat: read ") {
				n, err := stderr.Read(buf)
				errText.Write(buf[:n])
				if err != nil {
					t.Fatalf("%q: stderr ended before the read did: %q", args, errText.String())
				}
			}
			time.Sleep(200 * time.Millisecond)
			sent := time.Now()
			cmd.Process.Signal(sig)
			rest, _ := io.ReadAll(stderr)
			errText.Write(rest)
			cmd.Wait()
			took := time.Since(sent)
			code := cmd.ProcessState.ExitCode()
			t.Logf("%v %q: exit %d %v after the signal", sig, args, code, took)
			if code != 128+int(sig) || !strings.Contains(errText.String(), "stepstat: interrupted by "+signalName(sig)+"; ") ||
				strings.Contains(errText.String(), "by interrupt") || strings.Contains(errText.String(), "by terminated") {
				t.Errorf("%v %q: exit %d, stderr %q; want %d and the interrupted line naming the signal (%s)", sig, args, code, errText.String(), 128+int(sig), signalName(sig))
			}
			if strings.Contains(errText.String(), "stepstat: summarize ") {
				t.Errorf("%v %q: the analysis ran to its end (%q): the signal came too late to test", sig, args, errText.String())
			}
			if took > time.Second {
				t.Errorf("%v %q: exit %v after the signal, want within a second", sig, args, took)
			}
			if stdout.Len() > 0 {
				t.Errorf("%v %q: %d bytes on stdout", sig, args, stdout.Len())
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.Name() != "big.sqlite" {
					t.Errorf("%v %q: %s left in the directory", sig, args, e.Name())
				}
			}
		}
	}
}

// TestSOLFloorAbove (issue 34, item 9): a floor above the measured step read "391%
// efficient" with no warning (--bandwidth 4.8 meant TB/s): it is a warning in every output
// naming the likely unit mistake. A bandwidth or byte count whose floor overflows (1e-300
// GB/s made it negative) is a usage error.
func TestSOLFloorAbove(t *testing.T) {
	inTempDir(t)
	capture(t, "dense-eager", "in.sqlite") // an H200
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sol-bytes", "34.2GB", "--bandwidth", "4.8"}, "the bandwidth given is 4.8 GB/s, a value in TB/s? (4.8 TB/s is 4800 GB/s)"},
		{[]string{"--sol-bytes", "34.2Tb"}, "check the 3.42e+04 GB per step (bytes, not bits;"},
		{[]string{"--sol-step", "900ms"}, "check the floor's unit (µs or ms) and that it is one step's, not a run's"},
	} {
		text := runOK(t, append([]string{"report"}, append(tc.args, "in.sqlite")...)...)
		js := runOK(t, append([]string{"report", "-f", "json"}, append(tc.args, "in.sqlite")...)...)
		for what, out := range map[string]string{"text": text, "json": js} {
			if out := flat(out); !strings.Contains(out, "device 0: the speed-of-light floor ") || !strings.Contains(out, "is above the measured median step") || !strings.Contains(out, tc.want) {
				t.Errorf("%q %s: no warning of the floor above the step naming %q:\n%s", tc.args, what, tc.want, lastN(out, 1500))
			}
		}
	}
	if out := runOK(t, "report", "--sol-bytes", "1GB", "in.sqlite"); strings.Contains(out, "is above the measured") {
		t.Errorf("a floor under the step warns")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sol-bytes", "34.2GB", "--bandwidth", "1e-300"}, "stepstat report: --bandwidth: 1e-300 GB/s gives 34.2 GB a floor of 3.42e+301 s, out of range (the floor must be 1ns to 24h)"},
		{[]string{"--sol-bytes", "1e18"}, "stepstat report: --sol-bytes: 1e+09 GB over the H200 datasheet HBM3e bandwidth give a floor of 2.08e+05 s, out of range"},
		{[]string{"--sol-bytes", "1", "--bandwidth", "1e200"}, "stepstat report: --bandwidth: 1e+200 GB/s gives 1e-09 GB a floor of 1e-209 s, out of range"},
		{[]string{"--sol-bytes", "34.2GB", "--bandwidth", "1e300"}, "stepstat report: --bandwidth: must be a finite number"},
	} {
		code, _, stderr := runCLI(append([]string{"report"}, append(tc.args, "in.sqlite")...)...)
		if code != 2 || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestColumnsBySpelling (issue 34, item 6): a kernel correlationId spelled CorrelationID
// (SQLite resolves it) was read as 0 on both readers, silently: 26 steps became 25. It is
// matched as SQLite matches (any letter case): the report equals the original's on both
// readers. An absent optional column is a warning naming what is lost.
func TestColumnsBySpelling(t *testing.T) {
	inTempDir(t)
	capture(t, "tp2-moe-eager", "orig.sqlite")
	capture(t, "tp2-moe-eager", "spelled.sqlite")
	capture(t, "tp2-moe-eager", "absent.sqlite")
	execSQL(t, "spelled.sqlite", `ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN correlationId TO CorrelationID;
		ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME RENAME COLUMN globalTid TO GLOBALTID`)
	execSQL(t, "absent.sqlite", `ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN correlationId`)
	for _, reader := range []string{"", "sqlite"} {
		t.Setenv("STEPSTAT_READER", reader)
		want := runOK(t, "report", "-f", "json", "orig.sqlite")
		got := runOK(t, "report", "-f", "json", "spelled.sqlite")
		if strings.ReplaceAll(got, "spelled.sqlite", "orig.sqlite") != want {
			t.Errorf("reader %q: the report of CorrelationID and GLOBALTID differs from the original's", reader)
		}
		out := runOK(t, "report", "absent.sqlite")
		if !strings.Contains(flat(out), "CUPTI_ACTIVITY_KIND_KERNEL has no column correlationId, read as 0: kernels are not linked to the host calls that launched them") {
			t.Errorf("reader %q: no warning of the absent correlationId:\n%s", reader, lastN(out, 2000))
		}
		if strings.Contains(want, "has no column") {
			t.Errorf("reader %q: the original warns of an absent column", reader)
		}
	}
}

// realKernels makes the kernel table's start and end columns REAL (the rows copied: SQLite
// stores their whole values as integers on disk and returns them as REALs).
func realKernels(t *testing.T, path string) {
	t.Helper()
	var ddl string
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ddl = strings.Replace(ddl, "CUPTI_ACTIVITY_KIND_KERNEL", "K2", 1)
	for _, c := range []string{"start", "end"} {
		i := strings.Index(ddl, "\n    "+c+" ")
		if i < 0 {
			t.Fatalf("no column %s in %s", c, ddl)
		}
		ddl = ddl[:i] + strings.Replace(ddl[i:], "INTEGER", "REAL", 1)
	}
	execSQL(t, path, ddl+`; INSERT INTO K2 SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL;
		ALTER TABLE K2 RENAME TO CUPTI_ACTIVITY_KIND_KERNEL`)
}

// TestREALAffinity (issue 34, item 7): kernel start and end declared REAL: the direct
// reader kept every kernel, SQLite returned REALs and stepstat dropped all of them; one
// fractional value flipped the direct read to the fallback. Both readers take a REAL that
// is a whole number as that integer (what the file holds, whatever the affinity): the
// report equals the original's on both, read directly; a fractional start is one dropped
// row on both, still read directly.
func TestREALAffinity(t *testing.T) {
	inTempDir(t)
	capture(t, "dense-eager", "orig.sqlite")
	capture(t, "dense-eager", "real.sqlite")
	realKernels(t, "real.sqlite")
	capture(t, "dense-eager", "frac.sqlite")
	realKernels(t, "frac.sqlite")
	execSQL(t, "frac.sqlite", `UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 0.5 WHERE rowid = 100`)
	var reports [2]string
	for i, reader := range []string{"", "sqlite"} {
		t.Setenv("STEPSTAT_READER", reader)
		want := runOK(t, "report", "-f", "json", "orig.sqlite")
		got := runOK(t, "report", "-f", "json", "real.sqlite")
		if strings.ReplaceAll(got, "real.sqlite", "orig.sqlite") != want {
			t.Errorf("reader %q: the report of REAL start and end differs from the original's:\n%s", reader, firstN(got, 1500))
		}
		reports[i] = runOK(t, "report", "-f", "json", "frac.sqlite")
		if !strings.Contains(reports[i], "dropped 1 of ") {
			t.Errorf("reader %q: the fractional start is not one dropped row:\n%s", reader, lastN(reports[i], 1500))
		}
	}
	if reports[0] != reports[1] {
		t.Errorf("the readers disagree on a fractional start")
	}
	t.Setenv("STEPSTAT_READER", "")
	for _, f := range []string{"real.sqlite", "frac.sqlite"} {
		code, _, stderr := runCLI("report", "-v", "-o", "out.txt", f)
		if code != 0 || !strings.Contains(stderr, "CUPTI_ACTIVITY_KIND_KERNEL read directly from the file") {
			t.Errorf("%s: exit %d, the kernels not read directly: %s", f, code, stderr)
		}
	}
}

// btreeOf returns the interior and leaf pages of the table B-tree rooted at root in an
// SQLite file's bytes, in rowid order.
func btreeOf(t *testing.T, b []byte, root int) (interior, leaves []int) {
	t.Helper()
	ps := int(binary.BigEndian.Uint16(b[16:18]))
	var walk func(n, depth int)
	walk = func(n, depth int) {
		if depth > 20 || n < 1 || n*ps > len(b) {
			t.Fatalf("page %d: not a B-tree page of the file", n)
		}
		off, h := (n-1)*ps, 0
		if n == 1 {
			h = 100
		}
		p := b[off : off+ps]
		switch p[h] {
		case 13:
			leaves = append(leaves, n)
			return
		case 5:
		default:
			t.Fatalf("page %d: type %d", n, p[h])
		}
		interior = append(interior, n)
		for i := range int(binary.BigEndian.Uint16(p[h+3:])) {
			cp := int(binary.BigEndian.Uint16(p[h+12+2*i:]))
			walk(int(binary.BigEndian.Uint32(p[cp:])), depth+1)
		}
		walk(int(binary.BigEndian.Uint32(p[h+8:])), depth+1)
	}
	walk(root, 0)
	return interior, leaves
}

// childPointer returns the offset in the file of the child pointer of cell i of the
// interior page n.
func childPointer(b []byte, n, i int) int {
	ps := int(binary.BigEndian.Uint16(b[16:18]))
	off, h := (n-1)*ps, 0
	if n == 1 {
		h = 100
	}
	return off + int(binary.BigEndian.Uint16(b[off+h+12+2*i:]))
}

// TestDamageAnswered (issue 34, item 1): the direct reader found a damaged kernel B-tree,
// fell back to SQLite, and SQLite read the tree as it stood: a child pointer redirected
// to a runtime page turned 21,564 kernels into fewer with no warning in the report, and a
// cell pointer of 0xFFFF gave exit 1 on some runs and a report missing a row on others.
// Damage the direct reader finds, where SQLite's quick_check of the table fails too (it
// does on every case here), is an error naming the table and the page, exit 1, the same
// line on each of 40 runs.
func TestDamageAnswered(t *testing.T) {
	if testing.Short() {
		t.Skip("200 runs")
	}
	inTempDir(t)
	capture(t, "graph-loop", "base.sqlite")
	base := []byte(readString(t, "base.sqlite"))
	ki, kl := btreeOf(t, base, rootPage(t, "base.sqlite", "CUPTI_ACTIVITY_KIND_KERNEL"))
	ri, rl := btreeOf(t, base, rootPage(t, "base.sqlite", "CUPTI_ACTIVITY_KIND_RUNTIME"))
	if len(ki) == 0 || len(ri) == 0 || len(kl) < 10 {
		t.Fatalf("kernel tree: %d interior, %d leaves; runtime: %d interior", len(ki), len(kl), len(ri))
	}
	ps := int(binary.BigEndian.Uint16(base[16:18]))
	leaf := (kl[len(kl)/2] - 1) * ps
	for _, tc := range []struct {
		name   string
		damage func(b []byte)
		want   string // in the error line, after "CUPTI_ACTIVITY_KIND_KERNEL is damaged: "
	}{
		{"child pointer to a runtime leaf", func(b []byte) {
			binary.BigEndian.PutUint32(b[childPointer(b, ki[0], 1):], uint32(rl[len(rl)/2]))
		}, "rowids out of order"},
		{"two child pointers to one leaf", func(b []byte) {
			copy(b[childPointer(b, ki[0], 2):][:4], b[childPointer(b, ki[0], 1):][:4])
		}, "met twice"},
		{"cell pointer 0xFFFF", func(b []byte) { binary.BigEndian.PutUint16(b[leaf+8+10:], 0xFFFF) }, "outside the page"},
		{"two cell pointers swapped", func(b []byte) {
			p := b[leaf+8+6:]
			p[0], p[1], p[2], p[3] = p[2], p[3], p[0], p[1]
		}, "rowids out of order"},
		{"child pointer to an interior page", func(b []byte) {
			binary.BigEndian.PutUint32(b[childPointer(b, ki[0], 1):], uint32(ri[len(ri)-1]))
		}, "an interior page among the leaves"},
	} {
		b := slices.Clone(base)
		tc.damage(b)
		if err := os.WriteFile("in.sqlite", b, 0o644); err != nil {
			t.Fatal(err)
		}
		answers := map[string]int{}
		for range 40 {
			code, stdout, stderr := runCLI("report", "-f", "json", "in.sqlite")
			answers[fmt.Sprintf("exit %d, stdout %d bytes, stderr %q", code, len(stdout), stderr)]++
		}
		if len(answers) != 1 {
			t.Errorf("%s: %d answers over 40 runs: %v", tc.name, len(answers), answers)
			continue
		}
		for a := range answers {
			if !strings.HasPrefix(a, "exit 1, stdout 0 bytes, stderr \"stepstat: in.sqlite: CUPTI_ACTIVITY_KIND_KERNEL is damaged: page ") ||
				!strings.Contains(a, tc.want) || !strings.Contains(a, "SQLite's quick_check of the table fails too") {
				t.Errorf("%s: %s; want exit 1 naming the table, the page, %q and quick_check", tc.name, a, tc.want)
			}
		}
	}
}

// TestSparseFileBounded (issue 34, item 5): a sparse file whose size claims 2 TiB of
// 512-byte pages (the header's page count not valid, so the size counts) made the direct
// reader allocate a bitmap of every page per table: 1.04 GB resident for a 12 MB trace.
// Sized by the pages the B-tree reaches: under 100 MB, and the report is the one of the
// same trace without the hole.
func TestSparseFileBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a subprocess")
	}
	inTempDir(t)
	capture(t, "dense-eager", "small.sqlite")
	execSQL(t, "small.sqlite", `PRAGMA page_size = 512; VACUUM`)
	b := []byte(readString(t, "small.sqlite"))
	if ps := binary.BigEndian.Uint16(b[16:18]); ps != 512 {
		t.Fatalf("page size %d after VACUUM", ps)
	}
	// The header's page count is valid only while its version-valid-for number equals the
	// change counter: make it differ, so that the file's size gives the page count.
	binary.BigEndian.PutUint32(b[92:], binary.BigEndian.Uint32(b[24:])+1)
	if err := os.WriteFile("sparse.sqlite", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("whole.sqlite", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate("sparse.sqlite", (1<<32-2)*512); err != nil {
		t.Skipf("no sparse file of 2 TiB here: %v", err)
	}
	code, stderr, rss, _ := subprocess(t, "report", "-f", "json", "-o", "sparse.json", "sparse.sqlite")
	t.Logf("2 TiB sparse file: exit %d, peak RSS %.0f MB", code, rss)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if rss > 100 {
		t.Errorf("peak RSS %.0f MB, want under 100", rss)
	}
	runOK(t, "report", "-f", "json", "-o", "whole.json", "whole.sqlite")
	if got, want := readString(t, "sparse.json"), readString(t, "whole.json"); strings.ReplaceAll(got, "sparse.sqlite", "whole.sqlite") != want {
		t.Errorf("the sparse file's report differs from the same trace's without the hole")
	}
}
