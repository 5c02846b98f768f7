package breakdown_test

import (
	"context"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestKernelsOnly checks that classify's read of the kernel table alone
// (nsys.Options.KernelsOnly) gives every capture the kernel table of the full read, and
// that the report is the same read on one lane as on several (lanes follow GOMAXPROCS).
func TestKernelsOnly(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.sqlite.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	dir := t.TempDir()
	for _, gz := range files {
		name := strings.TrimSuffix(filepath.Base(gz), ".sqlite.gz")
		t.Run(name, func(t *testing.T) {
			path := nsystest.GunzipInto(t, gz, dir)
			full, err := nsys.Open(context.Background(), path, nsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			only, err := nsys.Open(context.Background(), path, nsys.Options{KernelsOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(only.APICalls)+len(only.Ranges)+len(only.Memops)+len(only.Graphs) != 0 {
				t.Errorf("KernelsOnly read more than kernels: %d calls, %d ranges, %d memops, %d graphs",
					len(only.APICalls), len(only.Ranges), len(only.Memops), len(only.Graphs))
			}
			if a, b := breakdown.KernelStats(full, breakdown.Options{}), breakdown.KernelStats(only, breakdown.Options{}); !reflect.DeepEqual(a, b) {
				t.Errorf("kernel stats differ: full read %d rows, kernels only %d", len(a), len(b))
			}
			prev := runtime.GOMAXPROCS(1)
			one, err := nsys.Open(context.Background(), path, nsys.Options{})
			runtime.GOMAXPROCS(prev)
			if err != nil {
				t.Fatal(err)
			}
			r1, err1 := breakdown.Summarize(one, breakdown.Options{})
			rn, errn := breakdown.Summarize(full, breakdown.Options{})
			if (err1 == nil) != (errn == nil) || !reflect.DeepEqual(r1, rn) {
				t.Errorf("report read on one lane differs from the report read on %d", prev)
			}
		})
	}
}
