package nsys_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestCorpus opens every public export and checks the reader against SQL run directly on
// the file: per-device counts of kernels, memory operations and graph executions (less
// the rows the reader drops: start=end=0 or end<start), NVTX ranges, and kept API calls.
func TestCorpus(t *testing.T) {
	files := nsystest.PublicTraces(t)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			before, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := nsys.Open(context.Background(), file, nsys.Options{CountRows: true})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if err := tr.CheckValid(); err != nil {
				t.Errorf("CheckValid: %v", err)
			}
			after, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
				t.Errorf("Open changed the file (size %d -> %d, mtime %v -> %v)", before.Size(), after.Size(), before.ModTime(), after.ModTime())
			}
			checkCounts(t, file, tr)
		})
	}
}

// kept is the SQL condition for rows the reader keeps.
const kept = `NOT ((start = 0 AND "end" = 0) OR "end" < start)`

func checkCounts(t *testing.T, file string, tr *nsys.Trace) {
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	db, err := sql.Open("sqlite3", u.String()+"?mode=ro&immutable=1&_query_only=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	perDevice := func(table string) map[nsys.DeviceID]int {
		if !tr.HasTable(table) {
			return map[nsys.DeviceID]int{}
		}
		return countBy(t, db, `SELECT deviceId, count(*) FROM `+table+` WHERE `+kept+` GROUP BY deviceId`)
	}
	type counts struct{ kernels, memcpy, memset, graphs map[nsys.DeviceID]int }
	want := counts{perDevice("CUPTI_ACTIVITY_KIND_KERNEL"), perDevice("CUPTI_ACTIVITY_KIND_MEMCPY"),
		perDevice("CUPTI_ACTIVITY_KIND_MEMSET"), perDevice("CUPTI_ACTIVITY_KIND_GRAPH_TRACE")}
	got := counts{map[nsys.DeviceID]int{}, map[nsys.DeviceID]int{}, map[nsys.DeviceID]int{}, map[nsys.DeviceID]int{}}
	devices := map[nsys.DeviceID]bool{}
	for _, k := range tr.Kernels {
		got.kernels[tr.SiteOf(k).Device]++
		devices[tr.SiteOf(k).Device] = true
	}
	for _, m := range tr.Memops {
		if m.Kind == nsys.Memset {
			got.memset[m.Device]++
		} else {
			got.memcpy[m.Device]++
		}
		devices[m.Device] = true
	}
	for _, g := range tr.Graphs {
		got.graphs[g.Device]++
		devices[g.Device] = true
	}
	for what, pair := range map[string][2]map[nsys.DeviceID]int{
		"kernels": {got.kernels, want.kernels}, "memcpy": {got.memcpy, want.memcpy},
		"memset": {got.memset, want.memset}, "graph executions": {got.graphs, want.graphs},
	} {
		if !sameCounts(pair[0], pair[1]) {
			t.Errorf("%s per device: reader %v, SQL %v", what, pair[0], pair[1])
		}
	}
	if len(tr.Devices) != len(devices) {
		t.Errorf("%d devices, %d with activity", len(tr.Devices), len(devices))
	}
	if tr.HasKernelTable != tr.HasTable("CUPTI_ACTIVITY_KIND_KERNEL") {
		t.Errorf("HasKernelTable = %t, HasTable(CUPTI_ACTIVITY_KIND_KERNEL) = %t", tr.HasKernelTable, !tr.HasKernelTable)
	}

	wantRanges := 0
	if tr.HasTable("NVTX_EVENTS") {
		wantRanges = countOne(t, db, `SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)`)
	}
	if len(tr.Ranges) != wantRanges {
		t.Errorf("%d NVTX ranges, SQL has %d push/pop and start/end rows", len(tr.Ranges), wantRanges)
	}

	// API calls: classify every cu* name with APIKindOf and count the kept runtime rows.
	wantAPI := 0
	if tr.HasTable("CUPTI_ACTIVITY_KIND_RUNTIME") {
		byName := countBy64(t, db, `SELECT nameId, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE `+kept+` GROUP BY nameId`)
		// Other CUDA calls (APIMisc) are kept from nsys.MiscCallMin on.
		longByName := countBy64(t, db, fmt.Sprintf(`SELECT nameId, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE `+kept+
			` AND end - start >= %d GROUP BY nameId`, nsys.MiscCallMin.Nanoseconds()))
		rows, err := db.Query(`SELECT id, value FROM StringIds WHERE value GLOB 'cu*'`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			var name string
			if err := rows.Scan(&id, &name); err != nil {
				t.Fatal(err)
			}
			switch nsys.APIKindOf(name) {
			case nsys.APIOther:
			case nsys.APIMisc:
				wantAPI += longByName[id]
			default:
				wantAPI += byName[id]
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if len(tr.APICalls) != wantAPI {
		t.Errorf("%d API calls, SQL has %d launch/sync/copy/set rows", len(tr.APICalls), wantAPI)
	}
	for _, tb := range tr.Tables {
		if tb.Rows < 0 {
			t.Errorf("table %s not counted with CountRows", tb.Name)
		}
	}
	t.Logf("%d kernels, %d memops, %d graphs, %d API calls, %d ranges, %d devices, %d warnings",
		len(tr.Kernels), len(tr.Memops), len(tr.Graphs), len(tr.APICalls), len(tr.Ranges), len(tr.Devices), len(tr.Warnings))
}

func sameCounts(a, b map[nsys.DeviceID]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func countBy(t *testing.T, db *sql.DB, q string) map[nsys.DeviceID]int {
	m := map[nsys.DeviceID]int{}
	for k, v := range countBy64(t, db, q) {
		m[nsys.DeviceID(k)] = v
	}
	return m
}

func countBy64(t *testing.T, db *sql.DB, q string) map[int64]int {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	m := map[int64]int{}
	for rows.Next() {
		var k int64
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		m[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func countOne(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// ddlSources names, per fixture schema, the public export each table's DDL was copied
// from (see nsys/nsystest/ddl/*.sql).
var ddlSources = map[string]map[string]string{
	"legacy": {
		"StringIds": "mordred__report1_2021", "CUPTI_ACTIVITY_KIND_KERNEL": "mordred__report1_2021",
		"CUPTI_ACTIVITY_KIND_MEMCPY": "mordred__report1_2021", "CUPTI_ACTIVITY_KIND_MEMSET": "mordred__report1_2021",
		"CUPTI_ACTIVITY_KIND_RUNTIME": "mordred__report1_2021",
		"TARGET_INFO_GPU":             "openacc-polpuig__report2_nometa", "TARGET_INFO_CUDA_GPU": "openacc-polpuig__report2_nometa",
		"NVTX_EVENTS": "dlprof__nsys_profile",
	},
	"export_meta_data": {
		"EXPORT_META_DATA": "cutlass-benchmark__report1", "StringIds": "cutlass-benchmark__report1",
		"CUPTI_ACTIVITY_KIND_KERNEL": "cutlass-benchmark__report1", "CUPTI_ACTIVITY_KIND_MEMCPY": "cutlass-benchmark__report1",
		"CUPTI_ACTIVITY_KIND_RUNTIME": "cutlass-benchmark__report1", "TARGET_INFO_GPU": "cutlass-benchmark__report1",
		"CUPTI_ACTIVITY_KIND_MEMSET": "parallel-course2__report4", "NVTX_EVENTS": "memfusion__report1",
	},
	"meta_data_export": {
		"META_DATA_EXPORT": "cs336a2-lizhieffe__ddp53_profile", "StringIds": "cs336a2-lizhieffe__ddp53_profile",
		"CUPTI_ACTIVITY_KIND_KERNEL": "cs336a2-lizhieffe__ddp53_profile", "CUPTI_ACTIVITY_KIND_MEMCPY": "cs336a2-lizhieffe__ddp53_profile",
		"CUPTI_ACTIVITY_KIND_MEMSET": "cs336a2-lizhieffe__ddp53_profile", "CUPTI_ACTIVITY_KIND_RUNTIME": "cs336a2-lizhieffe__ddp53_profile",
		"NVTX_EVENTS": "cs336a2-lizhieffe__ddp53_profile", "TARGET_INFO_GPU": "cs336a2-lizhieffe__ddp53_profile",
	},
}

// TestFixtureDDL checks that the test fixtures' DDL is the real nsys DDL: every table
// nsys/nsystest creates has exactly the CREATE statement of its source export.
func TestFixtureDDL(t *testing.T) {
	nsystest.NeedCorpus(t)
	sqlOf := func(file, table string) string {
		t.Helper()
		abs, err := filepath.Abs(file)
		if err != nil {
			t.Fatal(err)
		}
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
		db, err := sql.Open("sqlite3", u.String()+"?mode=ro&immutable=1")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var s string
		if err := db.QueryRow(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&s); err != nil {
			t.Fatalf("%s: table %s: %v", file, table, err)
		}
		return s
	}
	tablesOf := func(file string) []string {
		t.Helper()
		tr, err := nsys.Open(context.Background(), file, nsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tb := range tr.Tables {
			names = append(names, tb.Name)
		}
		return names
	}
	for _, schema := range nsystest.Schemas() {
		sources := ddlSources[schema]
		ar := &txtar.Archive{Files: []txtar.File{{Name: "schema", Data: []byte(schema + "\n")}, {Name: "graphs"}}}
		built := nsystest.Build(t, ar)
		tables := tablesOf(built)
		if len(tables) != len(sources)+1 {
			t.Errorf("%s: built tables %v, want the %d of ddlSources and the graph trace", schema, tables, len(sources))
		}
		for _, table := range tables {
			src, ok := sources[table]
			if table == "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" {
				src, ok = "cs336a2-zx3xyy__result_2_7B_compile_ro", true
			}
			if !ok {
				t.Errorf("%s: table %s has no source in ddlSources", schema, table)
				continue
			}
			if got, want := sqlOf(built, table), sqlOf(nsystest.PublicTrace(t, src+".sqlite"), table); got != want {
				t.Errorf("%s: DDL of %s differs from %s:\n%s\nwant:\n%s", schema, table, src, got, want)
			}
		}
	}
}
