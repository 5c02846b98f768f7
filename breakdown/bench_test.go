package breakdown

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
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

// BenchmarkHostGapsOverlapFile reads and reports an export of two kernels around one 10ms
// idle gap and 80 000 CUDA calls (11ms each) of the launching thread that all overlap the
// gap: the report (attribution included) takes a fraction of the read, not a multiple.
func BenchmarkHostGapsOverlapFile(b *testing.B) {
	var rt strings.Builder
	rt.WriteString("90\t95\t5\t1\t10\n29999900\t29999905\t5\t2\t10\n")
	for i := range 80_000 {
		s := 19_999_000 + i*100
		fmt.Fprintf(&rt, "%d\t%d\t5\t%d\t11\n", s, s+11_000_000, 3+i)
	}
	ar := &txtar.Archive{Files: []txtar.File{
		{Name: "strings", Data: []byte("1\tk\n10\tcudaLaunchKernel_v7000\n11\tcudaEventQuery_v3020\n")},
		{Name: "kernels", Data: []byte("100\t20000000\t0\t7\t1\t1\n30000000\t30001000\t0\t7\t2\t1\n")},
		{Name: "runtime", Data: []byte(rt.String())},
	}}
	path := nsystest.Build(b, ar)
	var tr *nsys.Trace
	b.Run("read", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var err error
			if tr, err = nsys.Open(context.Background(), path, nsys.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(tr.APICalls)), "calls")
	})
	b.Run("report", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := Summarize(tr, Options{Steps: StepMethod{Name: "whole"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
