package nsys_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/nsys/*.txtar")

// TestReader builds each testdata/nsys/*.txtar fixture into an export, opens it and
// compares Trace.String() (or "error: " and the error, with the path as TRACE) with the
// fixture's want section.
func TestReader(t *testing.T) {
	files, err := filepath.Glob("../testdata/nsys/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures in ../testdata/nsys")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar := nsystest.Parse(t, file)
			path := nsystest.Build(t, ar)
			got := dump(t, path)
			want, ok := nsystest.Section(ar, "want")
			if got == want {
				return
			}
			if *update {
				setSection(ar, "want", got)
				if err := os.WriteFile(file, txtar.Format(ar), 0o666); err != nil {
					t.Fatal(err)
				}
				t.Logf("updated %s", file)
				return
			}
			if !ok {
				t.Fatalf("%s has no want section; run with -update to add it. Got:\n%s", file, got)
			}
			t.Errorf("%s: Trace.String() differs from want (-want +got):\n%s", file, lineDiff(want, got))
		})
	}
}

// dump opens path and returns the trace's dump, or the error, with path replaced by TRACE.
func dump(t *testing.T, path string) string {
	t.Helper()
	tr, err := nsys.Open(context.Background(), path, nsys.Options{CountRows: true})
	if err != nil {
		var ne *nsys.Error
		if !errors.As(err, &ne) || !strings.HasPrefix(err.Error(), path+": ") {
			t.Errorf("error %q is not an *nsys.Error starting with the path", err)
		}
		return "error: " + strings.ReplaceAll(err.Error(), path, "TRACE") + "\n"
	}
	if tr.Path != path {
		t.Errorf("Path = %q, want %q", tr.Path, path)
	}
	if err := tr.CheckValid(); err != nil {
		t.Errorf("CheckValid: %v", err)
	}
	s := tr.String()
	if s2 := tr.String(); s2 != s {
		t.Errorf("String() is not deterministic")
	}
	return s
}

func setSection(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
}

// lineDiff is a small line diff: lines only in want are marked -, only in got +.
// It is enough for short dumps.
func lineDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	// Longest common subsequence, O(len(a)*len(b)); fixtures are small.
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			out.WriteString("  " + a[i] + "\n")
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
			out.WriteString("+ " + b[j] + "\n")
			j++
		default:
			out.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return out.String()
}

// TestOpenMissingCreatesNothing checks that opening a path that does not exist fails with
// "no such file" and leaves no file behind (go-sqlite3 creates missing files unless the
// DSN is a read-only file: URI).
func TestOpenMissingCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"missing.sqlite", "missing.sqlite?mode=rwc", "sub/missing.sqlite"} {
		path := filepath.Join(dir, name)
		_, err := nsys.Open(context.Background(), path, nsys.Options{})
		if err == nil {
			t.Fatalf("Open(%q) succeeded", path)
		}
		if want := path + ": no such file"; err.Error() != want {
			t.Errorf("Open(%q) error = %q, want %q", path, err, want)
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Open(%q) left something at the path (stat: %v)", path, err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("Open created %d entries in %s, first %s", len(ents), dir, ents[0].Name())
	}
}

// TestOpenLeavesFileAlone checks that Open of a real export writes nothing: no journal,
// WAL or SHM file appears and the file's bytes and mtime are unchanged.
func TestOpenLeavesFileAlone(t *testing.T) {
	ar := nsystest.Parse(t, "../testdata/nsys/schema-meta-data-export.txtar")
	path := nsystest.Build(t, ar)
	old := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Read-only permissions too: a writer would fail, the reader must not care.
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		tr, err := nsys.Open(context.Background(), path, nsys.Options{CountRows: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Kernels) == 0 {
			t.Fatal("fixture read no kernels")
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("Open changed the file's bytes")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(old) {
		t.Errorf("Open changed the file's mtime to %v", fi.ModTime())
	}
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != filepath.Base(path) {
			t.Errorf("Open left %s beside the export", e.Name())
		}
	}
}

// TestOpenCanceled checks that a canceled context stops Open with the context's error.
func TestOpenCanceled(t *testing.T) {
	ar := nsystest.Parse(t, "../testdata/nsys/schema-meta-data-export.txtar")
	path := nsystest.Build(t, ar)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := nsys.Open(ctx, path, nsys.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Open with a canceled context: err = %v, want context.Canceled", err)
	}
}

// TestCheckValid checks that CheckValid catches broken traces.
func TestCheckValid(t *testing.T) {
	good := func() *nsys.Trace {
		return &nsys.Trace{
			Devices:    []nsys.Device{{ID: 0}, {ID: 1}},
			Kernels:    []nsys.Kernel{{Start: 1, End: 2, Site: 0}, {Start: 1, End: 3, Site: 1}},
			Sites:      []nsys.Site{{Device: 0}, {Device: 1}},
			Names:      []string{"k"},
			Memops:     []nsys.Memop{{Start: 2, End: 2, Device: 1}},
			APICalls:   []nsys.APICall{{Start: 0, End: 1}},
			Callers:    []nsys.Caller{{Kind: nsys.APILaunch}},
			APINames:   []string{"cudaLaunchKernel"},
			Ranges:     []nsys.Range{{Start: 0, End: -1}, {Start: 1, End: 2, Depth: 1}},
			RangeTexts: []string{"step"},
			Procs:      []int64{0},
		}
	}
	if err := good().CheckValid(); err != nil {
		t.Fatalf("valid trace: %v", err)
	}
	for _, tc := range []struct {
		name   string
		break_ func(*nsys.Trace)
		want   string
	}{
		{"reversed kernel", func(t *nsys.Trace) { t.Kernels[0].End = 0 }, "kernel 0: end 0 before start 1"},
		{"unsorted kernels", func(t *nsys.Trace) { t.Kernels[0].Start, t.Kernels[1].Start = 1, 0 }, "kernel 1: not sorted"},
		{"ties not by device", func(t *nsys.Trace) { t.Kernels[0].Site, t.Kernels[1].Site = 1, 0 }, "kernel 1: not sorted"},
		{"kernel site", func(t *nsys.Trace) { t.Kernels[1].Site = 2 }, "kernel 1: site 2 out of range"},
		{"site name", func(t *nsys.Trace) { t.Sites[1].Name = 1 }, "site 1: name 1 out of range"},
		{"site device", func(t *nsys.Trace) { t.Devices = t.Devices[:1]; t.Memops = nil }, "site 1: device 1 not in Devices"},
		{"idle device", func(t *nsys.Trace) { t.Devices = append(t.Devices, nsys.Device{ID: 5}) }, "device 5 has no activity"},
		{"unsorted devices", func(t *nsys.Trace) { t.Devices[0].ID = 1 }, "device 1: ids not sorted"},
		{"site proc", func(t *nsys.Trace) { t.Sites[0].Proc = 1 }, "site 0: proc 1 out of range"},
		{"reversed memop", func(t *nsys.Trace) { t.Memops[0].Start = 3 }, "memop 0: end 2 before start 3"},
		{"memop device", func(t *nsys.Trace) { t.Memops[0].Device = 2 }, "memop 0: device 2 not in Devices"},
		{"graph device", func(t *nsys.Trace) { t.Graphs = []nsys.GraphExec{{Device: 3}} }, "graph execution 0: device 3 not in Devices"},
		{"api caller", func(t *nsys.Trace) { t.APICalls[0].Caller = 1 }, "API call 0: caller 1 out of range"},
		{"caller name", func(t *nsys.Trace) { t.Callers[0].Name = 4 }, "caller 0: name 4 out of range"},
		{"caller kind", func(t *nsys.Trace) { t.Callers[0].Kind = nsys.APIOther }, "caller 0: kind other is not kept"},
		{"range text", func(t *nsys.Trace) { t.Ranges[1].Text = 1 }, "range 1: text 1 out of range"},
		{"unsorted ranges", func(t *nsys.Trace) { t.Ranges[0].Start = 5 }, "range 1: not sorted"},
		{"negative depth", func(t *nsys.Trace) { t.Ranges[0].Depth = -1 }, "range 0: negative depth"},
	} {
		tr := good()
		tc.break_(tr)
		err := tr.CheckValid()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckValid() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestOpenOddPath checks that paths with characters special in URIs (space, #, ?, %, &)
// open as plain file names.
func TestOpenOddPath(t *testing.T) {
	ar := nsystest.Parse(t, "../testdata/nsys/schema-legacy.txtar")
	for _, name := range []string{"a b.sqlite", "run#1.sqlite", "x?mode=rwc.sqlite", "100%.sqlite", "a&b=c.sqlite", "ünï.sqlite"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		nsystest.Write(t, ar, path)
		tr, err := nsys.Open(context.Background(), path, nsys.Options{})
		if err != nil {
			t.Errorf("Open(%q): %v", name, err)
			continue
		}
		if len(tr.Kernels) != 2 {
			t.Errorf("Open(%q): %d kernels, want 2", name, len(tr.Kernels))
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 1 {
			t.Errorf("Open(%q) left %d entries in its directory", name, len(ents))
		}
	}
}
