package nsys

import (
	"context"
	"os"
	"testing"
	"unsafe"
)

// BenchmarkOpen reads the trace named by STEPSTAT_BENCH_TRACE (made by `make bigtrace`),
// with the direct reader and through SQLite alone.
func BenchmarkOpen(b *testing.B) {
	path := os.Getenv("STEPSTAT_BENCH_TRACE")
	if path == "" {
		b.Skip("set STEPSTAT_BENCH_TRACE to an export (make bigtrace writes testdata/big/big.sqlite)")
	}
	for _, c := range []struct {
		name string
		opt  Options
	}{{"direct", Options{}}, {"sqlite", Options{SQLiteOnly: true}}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				t, err := Open(context.Background(), path, c.opt)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(t.Kernels)), "kernels")
				t.Release()
			}
		})
	}
}

// BenchmarkFreshMemory writes 640 MB of kernel records (20 M) into fresh memory: from the
// Go heap, and mapped by bigSlice. The first write
// to fresh memory is much of the cost of reading a large trace on some virtual machines.
func BenchmarkFreshMemory(b *testing.B) {
	const n = 20_000_000
	for _, c := range []struct {
		name string
		make func() ([]Kernel, func())
	}{
		{"heap", func() ([]Kernel, func()) { return make([]Kernel, n), func() {} }},
		{"mapped", func() ([]Kernel, func()) {
			t := &Trace{big: &bigMaps{}}
			return bigSlice[Kernel](t, n), t.Release
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ks, release := c.make()
				for j := range ks {
					ks[j].Start = Time(j)
				}
				release()
			}
			b.SetBytes(n * int64(unsafe.Sizeof(Kernel{})))
		})
	}
}
