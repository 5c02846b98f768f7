package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeNsys puts a fake nsys first on the PATH: it appends its arguments to the returned
// log file and, for `export ... --output OUT ...`, copies src to OUT (or, when src is "",
// prints an error and exits 1, as nsys does for a broken report). TMPDIR is set to a fresh
// directory, returned too, so that tests can check that temporary exports are removed.
func fakeNsys(t *testing.T, src string) (log, tmpdir string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake nsys is a shell script")
	}
	bin := t.TempDir()
	log = filepath.Join(t.TempDir(), "nsys.log")
	script := `#!/bin/sh
printf '%s\n' "$*" >> "$FAKE_NSYS_LOG"
out=""
while [ $# -gt 0 ]; do
	case "$1" in
	--output) out="$2"; shift ;;
	esac
	shift
done
if [ -z "$FAKE_NSYS_SRC" ]; then
	echo "Processing [===]"
	echo "Importer error status: Unexpected end of file." >&2
	echo "Error: failed to import the report" >&2
	exit 1
fi
cp "$FAKE_NSYS_SRC" "$out"
`
	if err := os.WriteFile(filepath.Join(bin, "nsys"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+"/usr/bin"+string(os.PathListSeparator)+"/bin")
	t.Setenv("FAKE_NSYS_LOG", log)
	t.Setenv("FAKE_NSYS_SRC", src)
	tmpdir = t.TempDir()
	t.Setenv("TMPDIR", tmpdir)
	return log, tmpdir
}

// nsysCalls returns the argument lines the fake nsys logged.
func nsysCalls(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// runCLI runs stepstat in-process and returns its exit status, stdout and stderr.
func runCLI(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// exportFixture builds a reader fixture as an export outside the working directory (the
// fake nsys's output) and returns its path.
func exportFixture(t *testing.T, fixture string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "export.sqlite")
	buildFixture(t, fixture, path)
	return path
}

func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("%s left behind in %s", e.Name(), dir)
	}
}

// TestNsysRepNoNsys checks reports without nsys on the PATH: one line saying how to export
// the report, exit status 1, for every command, and nothing written.
func TestNsysRepNoNsys(t *testing.T) {
	dir := inTempDir(t)
	t.Setenv("PATH", t.TempDir())
	writeFile(t, "run.nsys-rep", "QDSTRM\x00\x01 a report\n")
	writeFile(t, "old.qdrep", "QDSTRM\x00\x01 a report\n")
	writeFile(t, "my run.nsys-rep", "QDSTRM\x00\x01 a report\n")
	buildFixture(t, "schema-legacy", "good.sqlite")
	before := snap(t, dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "run.nsys-rep"}, "stepstat: run.nsys-rep: is an Nsight Systems report; export it first: nsys export --type sqlite run.nsys-rep\n"},
		{[]string{"report", "--cache", "-f", "json", "run.nsys-rep"}, "stepstat: run.nsys-rep: is an Nsight Systems report; export it first: nsys export --type sqlite run.nsys-rep\n"},
		{[]string{"info", "old.qdrep"}, "stepstat: old.qdrep: is an Nsight Systems report; export it first: nsys export --type sqlite old.qdrep\n"},
		{[]string{"classify", "run.nsys-rep"}, "stepstat: run.nsys-rep: is an Nsight Systems report; export it first: nsys export --type sqlite run.nsys-rep\n"},
		{[]string{"diff", "good.sqlite", "run.nsys-rep"}, "stepstat: run.nsys-rep: is an Nsight Systems report; export it first: nsys export --type sqlite run.nsys-rep\n"},
		{[]string{"report", "my run.nsys-rep"}, "stepstat: my run.nsys-rep: is an Nsight Systems report; export it first: nsys export --type sqlite 'my run.nsys-rep'\n"},
		// Missing or a directory: the usual messages, not the export hint.
		{[]string{"report", "missing.nsys-rep"}, "stepstat: missing.nsys-rep: no such file\n"},
	} {
		code, stdout, stderr := runCLI(tc.args...)
		if code != 1 || stdout != "" || stderr != tc.want {
			t.Errorf("stepstat %s: exit %d, stdout %q, stderr %q; want exit 1, no stdout, stderr %q",
				strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
	if d := before.diff(snap(t, dir)); len(d) > 0 {
		t.Errorf("changed the directory: %s", strings.Join(d, "; "))
	}
}

// TestNsysRepMisnamed checks that an SQLite export named .nsys-rep is read as an export,
// without nsys.
func TestNsysRepMisnamed(t *testing.T) {
	inTempDir(t)
	t.Setenv("PATH", t.TempDir())
	buildFixture(t, "schema-meta-data-export", "run.nsys-rep")
	code, stdout, stderr := runCLI("info", "run.nsys-rep")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "run.nsys-rep") {
		t.Errorf("info: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}

// TestNsysRepExport checks that a report is exported with nsys into a temporary directory
// that is removed afterwards, that the analysis equals that of the export and names the
// report, and that nothing appears beside the report.
func TestNsysRepExport(t *testing.T) {
	dir := inTempDir(t)
	src := exportFixture(t, "schema-meta-data-export")
	writeFile(t, "run.nsys-rep", "QDSTRM\x00\x01 a report\n")
	log, tmpdir := fakeNsys(t, src)
	before := snap(t, dir)

	for _, cmd := range []string{"report", "info", "classify"} {
		code, stdout, stderr := runCLI(cmd, "run.nsys-rep")
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", cmd, code, stderr)
		}
		if strings.Contains(stdout, "export.sqlite") || strings.Contains(stdout, "stepstat-export") {
			t.Errorf("%s output names the temporary export:\n%s", cmd, stdout)
		}
		// The same analysis as of the export itself, but naming the report.
		_, direct, _ := runCLI(cmd, src)
		if want := strings.ReplaceAll(direct, src, "run.nsys-rep"); stdout != want {
			t.Errorf("%s of the report differs from %s of its export:\n%s", cmd, cmd, unifiedDiff("export", "report", want, stdout))
		}
	}
	calls := nsysCalls(t, log)
	if len(calls) != 3 {
		t.Fatalf("nsys ran %d times, want 3: %q", len(calls), calls)
	}
	f := strings.Fields(calls[0])
	if len(f) != 8 || strings.Join(f[:4], " ") != "export --type sqlite --output" || !strings.HasSuffix(f[4], ".sqlite") ||
		strings.Join(f[5:], " ") != "--force-overwrite true run.nsys-rep" {
		t.Errorf("nsys arguments %q, want export --type sqlite --output TMP.sqlite --force-overwrite true run.nsys-rep", calls[0])
	}
	if !strings.HasPrefix(f[4], tmpdir) {
		t.Errorf("nsys exported to %s, not into the temporary directory %s", f[4], tmpdir)
	}
	emptyDir(t, tmpdir)
	if d := before.diff(snap(t, dir)); len(d) > 0 {
		t.Errorf("changed the report's directory: %s", strings.Join(d, "; "))
	}

	// diff of two reports: two exports.
	writeFile(t, "run2.nsys-rep", "QDSTRM\x00\x01 another report\n")
	if code, _, stderr := runCLI("diff", "run.nsys-rep", "run2.nsys-rep"); code != 0 {
		t.Errorf("diff: exit %d, stderr %q", code, stderr)
	}
	if n := len(nsysCalls(t, log)); n != 5 {
		t.Errorf("nsys ran %d times in all, want 5", n)
	}
	emptyDir(t, tmpdir)
}

// TestNsysRepCache checks --cache: the export is kept beside the report as NAME.sqlite
// (written under a temporary name, then renamed), reused while newer than the report, and
// made again when the report changes.
func TestNsysRepCache(t *testing.T) {
	dir := inTempDir(t)
	src := exportFixture(t, "schema-legacy")
	writeFile(t, "run.nsys-rep", "QDSTRM\x00\x01 a report\n")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes("run.nsys-rep", old, old); err != nil {
		t.Fatal(err)
	}
	log, tmpdir := fakeNsys(t, src)

	code, first, stderr := runCLI("report", "--cache", "run.nsys-rep")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("run.sqlite"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("run.sqlite is not the export (err %v)", err)
	}
	calls := nsysCalls(t, log)
	if f := strings.Fields(calls[0]); len(calls) != 1 || len(f) != 8 || filepath.Dir(f[4]) != "." ||
		!strings.HasPrefix(filepath.Base(f[4]), ".run.sqlite.tmp") {
		t.Errorf("nsys calls %q, want one export to a temporary name beside the report", calls)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("%d files beside the report, want the report and run.sqlite", len(ents))
	}

	// Reused: nsys does not run again, the report is the same.
	for _, cmd := range []string{"report", "info", "classify"} {
		code, out, stderr := runCLI(cmd, "--cache", "run.nsys-rep")
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", cmd, code, stderr)
		}
		if cmd == "report" && out != first {
			t.Errorf("report from the cached export differs:\n%s", unifiedDiff("first", "cached", first, out))
		}
	}
	if n := len(nsysCalls(t, log)); n != 1 {
		t.Errorf("nsys ran %d times, want 1 (the export should be reused)", n)
	}

	// Without --cache, a temporary export is made even though run.sqlite exists.
	if code, _, stderr := runCLI("report", "run.nsys-rep"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if n := len(nsysCalls(t, log)); n != 2 {
		t.Errorf("nsys ran %d times, want 2", n)
	}

	// A newer report is exported again.
	if err := os.Chtimes("run.nsys-rep", time.Now().Add(time.Hour), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("report", "--cache", "run.nsys-rep"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if n := len(nsysCalls(t, log)); n != 3 {
		t.Errorf("nsys ran %d times, want 3 (the report changed)", n)
	}
	emptyDir(t, tmpdir)
}

// TestNsysRepExportFails checks a report nsys cannot export, and an export nsys wrote
// broken: one line naming the report, exit status 1, and no export left anywhere.
func TestNsysRepExportFails(t *testing.T) {
	for _, cache := range []bool{false, true} {
		dir := inTempDir(t)
		writeFile(t, "run.nsys-rep", "QDSTRM\x00\x01 a truncated report\n")
		_, tmpdir := fakeNsys(t, "")
		before := snap(t, dir)
		args := []string{"report", "run.nsys-rep"}
		if cache {
			args = []string{"report", "--cache", "run.nsys-rep"}
		}
		code, stdout, stderr := runCLI(args...)
		want := "stepstat: run.nsys-rep: nsys export failed (exit status 1): Error: failed to import the report\n"
		if code != 1 || stdout != "" || stderr != want {
			t.Errorf("cache %v: exit %d, stdout %q, stderr %q; want 1, \"\", %q", cache, code, stdout, stderr, want)
		}
		if d := before.diff(snap(t, dir)); len(d) > 0 {
			t.Errorf("cache %v: changed the report's directory: %s", cache, strings.Join(d, "; "))
		}
		emptyDir(t, tmpdir)

		// nsys "succeeds" but writes something that is not an export.
		garbage := filepath.Join(t.TempDir(), "garbage")
		writeFile(t, garbage, "not a database\n")
		t.Setenv("FAKE_NSYS_SRC", garbage)
		code, _, stderr = runCLI(args...)
		want = "stepstat: run.nsys-rep: its SQLite export: not an SQLite database"
		if cache {
			want = "stepstat: run.nsys-rep: its SQLite export run.sqlite: not an SQLite database"
		}
		if code != 1 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("cache %v, broken export: exit %d, stderr %q; want 1 and %q...", cache, code, stderr, want)
		}
		emptyDir(t, tmpdir)
	}
}
