package nsys

import (
	"context"
	"os"
	"testing"
)

// BenchmarkOpen reads the trace named by STEPSTAT_BENCH_TRACE (made by `make bigtrace`).
func BenchmarkOpen(b *testing.B) {
	path := os.Getenv("STEPSTAT_BENCH_TRACE")
	if path == "" {
		b.Skip("set STEPSTAT_BENCH_TRACE to an export (make bigtrace writes testdata/big/big.sqlite)")
	}
	for i := 0; i < b.N; i++ {
		t, err := Open(context.Background(), path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(t.Kernels)), "kernels")
		t.Release()
	}
}
