package nsys_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// directTraces returns the real captures (gunzipped into a temporary directory) and the
// public traces (when present).
func directTraces(t *testing.T) []string {
	t.Helper()
	gz, err := filepath.Glob("../testdata/traces/*.sqlite.gz")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var files []string
	for _, g := range gz {
		dst := filepath.Join(dir, strings.TrimSuffix(filepath.Base(g), ".gz"))
		nsystest.Gunzip(t, g, dst)
		files = append(files, dst)
	}
	pub, _ := filepath.Glob(filepath.Join(corpusDir, "*.sqlite"))
	return append(files, pub...)
}

// dumpTrace is everything Open returns but how it read the tables.
func dumpTrace(tr *nsys.Trace) string {
	var b strings.Builder
	b.WriteString(tr.String())
	c := *tr
	c.Reads = nil
	fmt.Fprintf(&b, "%+v\n%v\n%v\n%v\n%v\n%v\n%v\n", c.Meta, c.Tables, c.Devices, c.Procs, c.Names, c.Sites, c.Warnings)
	fmt.Fprintf(&b, "%v\n%v\n%v\n%v\n%v\n%v\n%v\n", c.Kernels, c.APICalls, c.Callers, c.APINames, c.Memops, c.Graphs, c.Config)
	fmt.Fprintf(&b, "%v\n%v\n%v\n", c.Ranges, c.RangeTexts, c.Domains)
	return b.String()
}

// TestDirectMatchesSQLite reads every real capture and public trace with the direct
// reader and through SQLite alone (the oracle) and wants the same trace, in small parts
// too (every part boundary inside a table), and the large tables read directly.
func TestDirectMatchesSQLite(t *testing.T) {
	for _, file := range directTraces(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want, err := nsys.Open(context.Background(), file, nsys.Options{SQLiteOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, opt := range []nsys.Options{{}, nsys.PartRows(1000)} {
				got, err := nsys.Open(context.Background(), file, opt)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := dumpTrace(got), dumpTrace(want); g != w {
					t.Errorf("direct read differs from SQLite's:\n%s", firstDiff(g, w))
				}
				for _, rd := range got.Reads {
					if !rd.Direct {
						t.Errorf("%s read through SQLite: %s", rd.Table, rd.Why)
					}
				}
				if got.HasKernelTable && len(got.Reads) == 0 {
					t.Errorf("no table read directly")
				}
			}
		})
	}
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n direct: %.300s\n sqlite: %.300s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d lines", len(la), len(lb))
}
