package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestPartsSameAsWhole checks that reading the kernel and runtime tables in rowid parts on
// several connections gives exactly the trace that reading them whole gives: same kernels
// and calls in the same order, same names, sites and callers numbered in the same order,
// same warnings in the same order.
// It runs on the real captures and on a copy of one with rows deleted (rowid gaps),
// dropped (zero timestamps, end before start), names whose string ids do not fit 32
// bits and calls from a second thread, so that parts must move rows down and carry wide
// ids.
func TestPartsSameAsWhole(t *testing.T) {
	files, _ := filepath.Glob("../testdata/traces/*.sqlite.gz")
	if len(files) == 0 {
		t.Fatal("no captures in testdata/traces")
	}
	dir := t.TempDir()
	var paths []string
	for _, gz := range files {
		p := filepath.Join(dir, filepath.Base(gz[:len(gz)-3]))
		nsystest.Gunzip(t, gz, p)
		paths = append(paths, p)
	}
	paths = append(paths, nsystest.PublicTracesIfPresent(t)...)

	// The mangled copy.
	mangled := filepath.Join(dir, "mangled.sqlite")
	nsystest.Gunzip(t, "../testdata/traces/moe-eager-nvtx.sqlite.gz", mangled)
	db, err := sql.Open("sqlite3", mangled)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 97 = 5 OR rowid BETWEEN 1000 AND 1400`,
		`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 0, "end" = 0 WHERE rowid % 89 = 3`,
		`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 1 WHERE rowid % 83 = 7`,
		`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 5000000000 + rowid % 3 WHERE rowid % 61 = 2`,
		`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = -7 WHERE rowid % 59 = 2`,
		`DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid % 53 = 4 OR rowid BETWEEN 2000 AND 2600`,
		`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 0, "end" = 0 WHERE rowid % 47 = 1`,
		`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end" = start - 5 WHERE rowid % 43 = 2`,
		`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = globalTid + 1 WHERE rowid % 7 = 3`,
		// One name on many streams and one function on many threads: past the short
		// chains, into the maps.
		`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 1000 + rowid % 40 WHERE rowid % 3 = 0`,
		`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = globalTid + 1 + rowid % 30 WHERE rowid % 5 = 0`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	paths = append(paths, mangled)

	for _, p := range paths {
		whole, err := Open(context.Background(), p, Options{partRows: 1 << 30})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, n := range []int{50, 1000} {
			parts, err := Open(context.Background(), p, Options{partRows: n})
			if err != nil {
				t.Fatalf("%s: partRows %d: %v", p, n, err)
			}
			if err := sameTrace(whole, parts); err != nil {
				t.Errorf("%s: partRows %d: %v", filepath.Base(p), n, err)
			}
		}
	}
}

func sameTrace(a, b *Trace) error {
	if len(a.Kernels) != len(b.Kernels) {
		return fmt.Errorf("%d kernels whole, %d in parts", len(a.Kernels), len(b.Kernels))
	}
	for i := range a.Kernels {
		if a.Kernels[i] != b.Kernels[i] {
			return fmt.Errorf("kernel %d: %+v whole, %+v in parts", i, a.Kernels[i], b.Kernels[i])
		}
	}
	if !reflect.DeepEqual(a.Names, b.Names) {
		for i := range a.Names {
			if a.Names[i] != b.Names[i] {
				return fmt.Errorf("name %d: %q whole, %q in parts", i, a.Names[i], b.Names[i])
			}
		}
		return fmt.Errorf("names differ: %d whole, %d in parts", len(a.Names), len(b.Names))
	}
	ws := func(t *Trace) []string {
		var s []string
		for _, w := range t.Warnings {
			s = append(s, w.Error())
		}
		return s
	}
	if !reflect.DeepEqual(ws(a), ws(b)) {
		return fmt.Errorf("warnings differ:\nwhole: %q\nparts: %q", ws(a), ws(b))
	}
	a2, b2 := *a, *b
	a2.Kernels, b2.Kernels, a2.Warnings, b2.Warnings = nil, nil, nil, nil
	if !reflect.DeepEqual(a2, b2) {
		return fmt.Errorf("traces differ outside kernels")
	}
	return nil
}
