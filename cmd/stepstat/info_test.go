package main

import (
	"bytes"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/nsys/nsystest"
)

// fixtureDir holds the reader fixtures (txtar) that the CLI tests build exports from.
var fixtureDir = func() string {
	d, err := filepath.Abs(filepath.Join("..", "..", "testdata", "nsys"))
	if err != nil {
		panic(err)
	}
	return d
}()

// inTempDir makes a fresh temporary directory the working directory for the rest of the
// test, so that paths in goldens are short and stable.
func inTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

// buildFixture writes testdata/nsys/<fixture>.txtar as an export named name in the
// working directory.
func buildFixture(t *testing.T, fixture, name string) {
	t.Helper()
	nsystest.Write(t, nsystest.Parse(t, filepath.Join(fixtureDir, fixture+".txtar")), name)
}

// A snapshot is the state of a directory: every file's bytes and mtime.
type snapshot map[string]fileState

type fileState struct {
	data  string
	mtime time.Time
	dir   bool
}

func snap(t *testing.T, dir string) snapshot {
	t.Helper()
	s := snapshot{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fileState{mtime: fi.ModTime(), dir: d.IsDir()}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			st.data = string(b)
		}
		s[path] = st
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// same reports how after differs from s: files added, removed or changed.
func (s snapshot) diff(after snapshot) []string {
	var d []string
	for p, st := range s {
		a, ok := after[p]
		switch {
		case !ok:
			d = append(d, "removed "+p)
		case a.data != st.data:
			d = append(d, "changed bytes of "+p)
		case !st.dir && !a.mtime.Equal(st.mtime):
			d = append(d, "changed mtime of "+p)
		}
	}
	for p := range after {
		if _, ok := s[p]; !ok {
			d = append(d, "created "+p)
		}
	}
	slices.Sort(d)
	return d
}

func TestInfo(t *testing.T) {
	for _, tc := range []struct {
		scenario, fixture string
		args              []string
	}{
		// Two processes on two GPUs whose TARGET_INFO_GPU id and cuDevice are swapped,
		// NVTX with an NCCL domain, copies and memsets.
		{"info-modern", "schema-meta-data-export", []string{"info", "trace.sqlite"}},
		{"info-modern-json", "schema-meta-data-export", []string{"info", "--format", "json", "trace.sqlite"}},
		{"info-legacy", "schema-legacy", []string{"info", "trace.sqlite"}},
		{"info-legacy-json", "schema-legacy", []string{"info", "-f", "json", "trace.sqlite"}},
		// GPU names follow cuDevice, not TARGET_INFO_GPU.id; device 2 has no GPU row.
		{"info-swapped-devices", "swapped-devices", []string{"info", "trace.sqlite"}},
		{"info-graphs", "graph-trace", []string{"info", "trace.sqlite"}},
		{"info-dropped-rows", "zero-reversed", []string{"info", "trace.sqlite"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			dir := inTempDir(t)
			buildFixture(t, tc.fixture, "trace.sqlite")
			before := snap(t, dir)
			if code := golden(t, tc.scenario, tc.args...); code != 0 {
				t.Errorf("exit status %d, want 0", code)
			}
			if d := before.diff(snap(t, dir)); len(d) > 0 {
				t.Errorf("info changed the directory: %s", strings.Join(d, "; "))
			}
		})
	}
}

// TestInfoNoGPUActivity checks that an export without kernels, copies or graphs is not an
// error for info: it exits 0 and lists the "no GPU activity" warning.
func TestInfoNoGPUActivity(t *testing.T) {
	inTempDir(t)
	buildFixture(t, "no-kernel-table", "trace.sqlite")
	if code := golden(t, "info-no-gpu", "info", "trace.sqlite"); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	var stdout, stderr bytes.Buffer
	run([]string{"info", "trace.sqlite"}, strings.NewReader(""), &stdout, &stderr)
	if !strings.Contains(stdout.String(), "no GPU activity") {
		t.Errorf("stdout has no \"no GPU activity\" warning:\n%s", stdout.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// TestInfoBadInput checks inputs that are not exports: each fails with exit status 1 and a
// single stderr line that names the file and the problem, prints nothing on stdout, and
// leaves the input (and its directory) exactly as it was.
func TestInfoBadInput(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		path     string
		setup    func(t *testing.T)
	}{
		{"info-missing", "missing.sqlite", func(t *testing.T) {}},
		{"info-directory", "dir.sqlite", func(t *testing.T) {
			if err := os.Mkdir("dir.sqlite", 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"info-empty", "empty.sqlite", func(t *testing.T) { writeFile(t, "empty.sqlite", "") }},
		{"info-text", "notes.txt", func(t *testing.T) {
			writeFile(t, "notes.txt", "kernel,start,end\ngemm,100,200\n")
		}},
		// A report with no nsys on the PATH to export it (nsysrep_test.go has the rest).
		{"info-nsys-rep", "x.nsys-rep", func(t *testing.T) {
			t.Setenv("PATH", t.TempDir())
			writeFile(t, "x.nsys-rep", "\x00\x01QDSTRM not an SQLite file at all\n")
		}},
		{"info-short-header", "short.sqlite", func(t *testing.T) {
			writeFile(t, "short.sqlite", "SQLite format 3\x00\x10\x00")
		}},
		{"info-truncated", "truncated.sqlite", func(t *testing.T) {
			buildFixture(t, "schema-meta-data-export", "full.sqlite")
			b, err := os.ReadFile("full.sqlite")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove("full.sqlite"); err != nil {
				t.Fatal(err)
			}
			writeFile(t, "truncated.sqlite", string(b[:len(b)/2]))
		}},
		// The same, with the header's page count marked stale (bytes 92-95 no longer match
		// the change counter), so only SQLite itself can notice.
		{"info-truncated-stale-header", "truncated.sqlite", func(t *testing.T) {
			buildFixture(t, "schema-meta-data-export", "full.sqlite")
			b, err := os.ReadFile("full.sqlite")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove("full.sqlite"); err != nil {
				t.Fatal(err)
			}
			b = b[:len(b)/2]
			copy(b[92:96], "\xff\xff\xff\xff")
			writeFile(t, "truncated.sqlite", string(b))
		}},
		{"info-truncated-public", "truncated.sqlite", func(t *testing.T) {
			src := nsystest.PublicTrace(t, "cs336a2-lizhieffe__ddp53_profile.sqlite")
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, "truncated.sqlite", string(b[:64<<10]))
		}},
		{"info-not-nsys", "other.sqlite", func(t *testing.T) {
			db, err := sql.Open("sqlite3", "other.sqlite")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TABLE t(x); INSERT INTO t VALUES (1)`); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"info-missing-column", "trace.sqlite", func(t *testing.T) {
			buildFixture(t, "kernel-missing-column", "trace.sqlite")
		}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			dir := inTempDir(t)
			tc.setup(t)
			before := snap(t, dir)
			code := golden(t, tc.scenario, "info", tc.path)
			if code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			var stdout, stderr bytes.Buffer
			run([]string{"info", tc.path}, strings.NewReader(""), &stdout, &stderr)
			if stdout.Len() > 0 {
				t.Errorf("stdout is not empty:\n%s", stdout.String())
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") {
				t.Errorf("stderr is not one line: %q", msg)
			}
			if prefix := "stepstat: " + tc.path + ": "; !strings.HasPrefix(msg, prefix) || len(msg) <= len(prefix)+1 {
				t.Errorf("stderr %q does not start with %q and a problem", msg, prefix)
			}
			if d := before.diff(snap(t, dir)); len(d) > 0 {
				t.Errorf("info changed the directory: %s", strings.Join(d, "; "))
			}
		})
	}
}

// TestInfoUsage checks command-line mistakes: exit status 2, nothing on stdout, and the
// usage on stderr.
func TestInfoUsage(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		args     []string
	}{
		{"info-no-args", []string{"info"}},
		{"info-two-args", []string{"info", "a.sqlite", "b.sqlite"}},
		{"info-unknown-flag", []string{"info", "--bogus", "trace.sqlite"}},
		{"info-unknown-format", []string{"info", "--format", "xml", "trace.sqlite"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			dir := inTempDir(t)
			buildFixture(t, "schema-legacy", "trace.sqlite")
			before := snap(t, dir)
			if code := golden(t, tc.scenario, tc.args...); code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			var stdout, stderr bytes.Buffer
			run(tc.args, strings.NewReader(""), &stdout, &stderr)
			if stdout.Len() > 0 {
				t.Errorf("stdout is not empty:\n%s", stdout.String())
			}
			if stderr.Len() == 0 {
				t.Error("stderr is empty")
			}
			if d := before.diff(snap(t, dir)); len(d) > 0 {
				t.Errorf("changed the directory: %s", strings.Join(d, "; "))
			}
		})
	}
}

// TestNoCommand checks that stepstat without arguments prints the usage on stderr and
// exits 2. (No golden: the command list grows.)
func TestNoCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(nil, strings.NewReader(""), &stdout, &stderr); code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout is not empty:\n%s", stdout.String())
	}
	for _, want := range []string{"Usage:", "\tinfo ", "stepstat help <command>"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o666); err != nil {
		t.Fatal(err)
	}
}
