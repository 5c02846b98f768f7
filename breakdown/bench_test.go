package breakdown

import (
	"context"
	"os"
	"testing"

	"github.com/stepstat/stepstat/nsys"
)

// BenchmarkSummarize aggregates the trace named by STEPSTAT_BENCH_TRACE (made by
// `make bigtrace`); reading it is not timed.
func BenchmarkSummarize(b *testing.B) {
	path := os.Getenv("STEPSTAT_BENCH_TRACE")
	if path == "" {
		b.Skip("set STEPSTAT_BENCH_TRACE to an export (make bigtrace writes testdata/big/big.sqlite)")
	}
	t, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Summarize(t, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(t.Kernels)), "kernels")
}
