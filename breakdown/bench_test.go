package breakdown

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// BenchmarkPeriodic1M times periodicity on 1 M kernels whose sequence repeats every 100 k
// kernels, one kernel of each period differing (its own name), against reading the file:
// the acceptance is a ratio under 2 (summarize/read). The file is built once, not
// timed: an export with the kernel table only (no host rows, so no other signal exists).
func BenchmarkPeriodic1M(b *testing.B) {
	const n, period = 1_000_000, 100_000
	path := periodicExport(b, n, period)
	var read, sum time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		t, err := nsys.Open(context.Background(), path, nsys.Options{})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		rep, err := Summarize(t, Options{Steps: StepMethod{Method: MethodPeriodic}})
		if err != nil {
			b.Fatal(err)
		}
		sum += time.Since(t1)
		read += t1.Sub(t0)
		if d := rep.Devices[0]; d.Method != MethodPeriodic || d.MethodDetail != fmt.Sprintf("kernel sequence repeats every %d kernels", period) || len(d.Steps) != n/period {
			b.Fatalf("%v (%s) with %d steps, want periodic every %d kernels, %d steps", d.Method, d.MethodDetail, len(d.Steps), period, n/period)
		}
	}
	b.ReportMetric(read.Seconds()/float64(b.N), "read-s")
	b.ReportMetric(sum.Seconds()/float64(b.N), "summarize-s")
	b.ReportMetric(sum.Seconds()/read.Seconds(), "summarize/read")
}

// periodicExport writes an export of n kernels on one stream, back to back, whose names
// repeat every period kernels: a forward's first kernel (once per period), one kernel
// whose name is new in every period, and pseudo-random names of 997 others.
func periodicExport(b *testing.B, n, period int) string {
	b.Helper()
	ar := txtar.Parse([]byte("-- drop --\nNVTX_EVENTS\n-- strings --\n1\tembedding_kernel\n"))
	path := filepath.Join(b.TempDir(), "periodic.sqlite")
	nsystest.Write(b, ar, path)
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM s WHERE i < 1100)
		 INSERT INTO StringIds (id, value) SELECT 2+i, 'kernel_' || i FROM s`,
		fmt.Sprintf(`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM s WHERE i < %d)
		 INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, demangledName, shortName,
		   registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,
		   localMemoryPerThread, localMemoryTotal, gridId, tensorSizeMinusOneElements)
		 SELECT 1000 + 2000*i, 1000 + 2000*i + 1500, 0, 1, 7, i+1, name, name, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, i, ''
		 FROM (SELECT i, CASE WHEN i %% %[2]d = 0 THEN 1 WHEN i %% %[2]d = 1 THEN 1000 + i / %[2]d
		   ELSE 3 + ((i %% %[2]d) * 2654435761) %% 997 END AS name FROM s)`, n-1, period),
	} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	return path
}
