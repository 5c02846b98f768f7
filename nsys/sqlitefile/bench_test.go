package sqlitefile

import (
	"database/sql"
	"os"
	"testing"
)

// BenchmarkScan decodes the start, end and deviceId of every row of the kernel table of
// the trace named by STEPSTAT_BENCH_TRACE (make bigtrace), the file mapped and read with
// pread.
func BenchmarkScan(b *testing.B) {
	path := os.Getenv("STEPSTAT_BENCH_TRACE")
	if path == "" {
		b.Skip("set STEPSTAT_BENCH_TRACE to an export (make bigtrace writes testdata/big/big.sqlite)")
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		b.Fatal(err)
	}
	var root int64
	err = db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_KERNEL'`).Scan(&root)
	db.Close()
	if err != nil {
		b.Fatal(err)
	}
	for _, mapped := range []bool{true, false} {
		name := "pread"
		if mapped {
			name = "mapped"
		}
		b.Run(name, func(b *testing.B) {
			f, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if !mapped && f.mapped != nil {
				unmapFile(f.mapped)
				f.mapped = nil
			}
			t, err := f.Table(uint32(root))
			if err != nil {
				b.Fatal(err)
			}
			c := &Columns{Fields: []int{0, 1, 2}, Defs: make([]int64, 3), Nulls: []bool{true, true, true}, Filter: -1, Text: -1}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var sum, n int64
				if err := t.Scan(c, 0, len(t.Leaves), nil, func(v []int64, _ []byte) { sum += v[1] - v[0]; n++ }); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(n), "rows")
			}
		})
	}
}
