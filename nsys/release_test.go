package nsys_test

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
	"github.com/stepstat/stepstat/render"
)

// TestReportHoldsNoTraceMemory: the report Summarize makes holds none of the memory its
// trace maps outside the Go heap, which Trace.Release gives back once it is made. On
// captures of one and two GPUs (steps from NVTX and from host signals), with every array
// mapped: no pointer, slice or string reachable from the report points into the mapped
// ranges, and the report writes the same JSON after the release as before it. That the
// release is real is checked too: a slice of the trace's kernels kept past it reads zeros.
func TestReportHoldsNoTraceMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("arrays are mapped outside the Go heap on Linux only")
	}
	defer nsys.SetBigMin(nsys.SetBigMin(4096))
	for _, name := range []string{"dense-eager-nvtx", "tp2-moe-graph", "moe-graph-nvtx-serve"} {
		db := filepath.Join(t.TempDir(), name+".sqlite")
		nsystest.Gunzip(t, filepath.Join("..", "testdata", "traces", name+".sqlite.gz"), db)
		var rep *findings.Report
		var before bytes.Buffer
		var kept []nsys.Kernel
		err := readReleased(db, func(tr *nsys.Trace) error {
			ranges := nsys.MappedRanges(tr)
			if len(ranges) == 0 {
				t.Fatalf("%s: nothing mapped outside the heap: the test would prove nothing", name)
			}
			sum, err := breakdown.Summarize(tr, breakdown.Options{})
			if err != nil {
				return err
			}
			rep = findings.Of(sum)
			if p, where := pointsInto(reflect.ValueOf(rep), ranges); where != "" {
				t.Errorf("%s: the report holds trace memory at %#x: %s", name, p, where)
			}
			kept = tr.Kernels
			return render.JSON(&before, rep)
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var after bytes.Buffer
		if err := render.JSON(&after, rep); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before.Bytes(), after.Bytes()) {
			t.Errorf("%s: the report's JSON changed when the trace was released", name)
		}
		if len(kept) == 0 || kept[len(kept)/2] != (nsys.Kernel{}) {
			t.Errorf("%s: a kernel kept past the release does not read zeros (%d kept): is the memory released?", name, len(kept))
		}
	}
}

// readReleased opens the export at path, calls f with its trace and releases the trace
// when f returns, whatever f returned.
func readReleased(path string, f func(*nsys.Trace) error) error {
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		return err
	}
	defer tr.Release()
	return f(tr)
}

// pointsInto walks v (pointers, slices, arrays, strings, maps, interfaces, structs with
// unexported fields included) and returns the first address inside one of ranges, with
// the path to it; "" when there is none.
func pointsInto(v reflect.Value, ranges [][2]uintptr) (uintptr, string) {
	seen := map[uintptr]bool{}
	in := func(p uintptr) bool {
		for _, r := range ranges {
			if p >= r[0] && p < r[1] {
				return true
			}
		}
		return false
	}
	var walk func(v reflect.Value, path string) (uintptr, string)
	walk = func(v reflect.Value, path string) (uintptr, string) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return 0, ""
			}
			seen[v.Pointer()] = true
			if in(v.Pointer()) {
				return v.Pointer(), path
			}
			return walk(v.Elem(), path)
		case reflect.Interface:
			if v.IsNil() {
				return 0, ""
			}
			return walk(v.Elem(), path)
		case reflect.String:
			if v.Len() > 0 && in(uintptr(reflect.ValueOf(v.String()).UnsafePointer())) {
				return 0, path
			}
		case reflect.Slice:
			if v.Len() == 0 {
				return 0, ""
			}
			if in(v.Pointer()) {
				return v.Pointer(), path
			}
			if seen[v.Pointer()] && v.Type().Elem().Kind() != reflect.Struct {
				return 0, ""
			}
			seen[v.Pointer()] = true
			fallthrough
		case reflect.Array:
			for i := 0; i < v.Len(); i++ {
				if p, w := walk(v.Index(i), path+"["+itoa(i)+"]"); w != "" {
					return p, w
				}
			}
		case reflect.Map:
			it := v.MapRange()
			for it.Next() {
				if p, w := walk(it.Key(), path+"{key}"); w != "" {
					return p, w
				}
				if p, w := walk(it.Value(), path+"{value}"); w != "" {
					return p, w
				}
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if p, w := walk(v.Field(i), path+"."+v.Type().Field(i).Name); w != "" {
					return p, w
				}
			}
		}
		return 0, ""
	}
	return walk(v, "report")
}

func itoa(i int) string { return strconv.Itoa(i) }
