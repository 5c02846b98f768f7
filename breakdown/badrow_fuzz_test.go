package breakdown_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// FuzzBadRow (issue 17, items 3 and 6) writes one bad timestamp into one row of a real
// capture and checks that the row cannot move more than its own time between categories.
// The inputs pick the capture (base), the table, the row and the bad value (kind, with val
// for the values that take a number): a NULL, text, blob or real (1.5, 1e300, inf) start or
// end, a zero, a time past ±2^62 ns, or an end before the start.
//
// Properties, against the report of the unchanged capture:
//   - the row is dropped, with a warning naming its table (the kernel, memcpy, memset,
//     graph and API rows that the analysis reads, and the NVTX ranges); only an NVTX range
//     may be kept, as never closed (NULL end) or starting at the session start (0);
//   - summed over steps and the activity outside them, the busy time of each category
//     (--steps whole, and --steps nvtx) changes by at most the row's own duration in all
//     (a NULL start read as 0 made one kernel 98.5% of all kernel time), and so does the
//     exclusive time of each category but idle under --steps whole (at most twice: what
//     the row held goes to another category);
//   - with --steps nvtx, each device loses at most one step, and the time inside steps
//     moves by at most one step's wall plus the row's own time (one NVTX range read as
//     never closed turned 25 steps into 3).
func FuzzBadRow(f *testing.F) {
	bases := badRowBases(f)
	for kind := range uint8(badKinds) {
		for table := range uint8(len(badRowTables)) {
			f.Add((kind+table)%3, table, uint16(kind)*7+3, kind, uint32(kind)*1000)
		}
	}
	f.Fuzz(func(t *testing.T, base, table uint8, row uint16, kind uint8, val uint32) {
		b := &bases[int(base)%len(bases)]
		tb := badRowTables[int(table)%len(badRowTables)]
		rows := b.rows[tb]
		if len(rows) == 0 {
			return
		}
		r := rows[int(row)%len(rows)]
		k := badKind(kind) % badKinds
		path := filepath.Join(t.TempDir(), "trace.sqlite")
		if err := os.WriteFile(path, b.data, 0o644); err != nil {
			t.Fatal(err)
		}
		q, args := k.update(tb, r, val)
		mutate(t, path, tb, q, args)
		tr, err := nsys.Open(context.Background(), path, nsys.Options{})
		if err != nil {
			t.Fatalf("%s row %d, %s: Open: %v", tb, r.rowid, k, err)
		}
		what := fmt.Sprintf("%s row %d [%d, %d], %s", tb, r.rowid, r.start, r.end, k)
		dropped := b.count(tb, b.ref) - b.count(tb, tr)
		switch {
		case dropped < 0 || dropped > 1:
			t.Fatalf("%s: %d rows dropped, want at most 1", what, dropped)
		case dropped == 0 && tb == "CUPTI_ACTIVITY_KIND_RUNTIME":
			// A call of an API the analysis does not use is not read at all (filtered in
			// SQL): nothing to drop or warn about.
			if hasWarning(tr, tb) {
				t.Fatalf("%s: a warning about %s but no call dropped", what, tb)
			}
		case dropped == 0 && !(tb == "NVTX_EVENTS" && k.mayKeepNVTX()):
			t.Fatalf("%s: the row was kept", what)
		case dropped == 1 && !hasWarning(tr, tb):
			t.Fatalf("%s: the row was dropped without a warning naming the table; warnings %q", what, tr.Warnings)
		}
		own := time.Duration(r.end - r.start)
		for _, m := range b.methods {
			want := b.reports[m]
			got := badRowSummarize(t, tr, m)
			if len(got.Devices) != len(want.Devices) {
				t.Fatalf("%s, --steps %s: %d devices, want %d", what, m, len(got.Devices), len(want.Devices))
			}
			for i := range want.Devices {
				wd, gd := &want.Devices[i], &got.Devices[i]
				if gd.Device != wd.Device {
					t.Fatalf("%s, --steps %s: device %d, want %d", what, m, gd.Device, wd.Device)
				}
				wb, we, _ := totals(wd)
				gb, ge, _ := totals(gd)
				if m == "whole" {
					// With context classification on, time only changes category: the
					// device's busy time changes by at most the row's own.
					cw, _, _ := totals(&b.context.Devices[i])
					cg, _, _ := totals(&summarizeWith(t, tr, m, false).Devices[i])
					if d := sumBusy(cw) - sumBusy(cg); max(d, -d) > own {
						t.Errorf("%s, --steps whole, device %d, context classification: busy time changed by %v, more than the row's own %v", what, wd.Device, max(d, -d), own)
					}
				}
				if moved := moved(wb, gb, true); moved > own {
					t.Errorf("%s, --steps %s, device %d: %v of busy time moved between categories, more than the row's own %v\nbefore %v\nafter  %v",
						what, m, wd.Device, moved, own, wb, gb)
				}
				if m == "whole" {
					if moved := moved(we, ge, true); moved > 2*own {
						t.Errorf("%s, --steps whole, device %d: %v of exclusive time moved between categories, more than twice the row's own %v\nbefore %v\nafter  %v",
							what, wd.Device, moved, own, we, ge)
					}
					continue
				}
				if dropped == 0 && tb == "NVTX_EVENTS" && k.mayKeepNVTX() {
					continue // kept as never closed or starting at 0: its time is its own
				}
				if d := len(gd.Steps) - len(wd.Steps); d < -1 || d > 1 {
					t.Errorf("%s, --steps %s, device %d: %d steps, was %d", what, m, wd.Device, len(gd.Steps), len(wd.Steps))
				}
				var maxWall time.Duration
				for _, s := range wd.Steps {
					maxWall = max(maxWall, s.Wall())
				}
				_, _, wi := totals(wd)
				_, _, gi := totals(gd)
				if moved := moved(wi, gi, false); moved > maxWall+own {
					t.Errorf("%s, --steps %s, device %d: %v of time inside steps moved, more than a step (%v) and the row's own time (%v)\nbefore %v\nafter  %v",
						what, m, wd.Device, moved, maxWall, own, wi, gi)
				}
			}
		}
	})
}

// badRowTables are the tables FuzzBadRow writes into, each row with a start and an end.
var badRowTables = []string{
	"CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME",
	"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
}

// A badKind is one bad value written into a row.
type badKind uint8

const (
	startNULL badKind = iota
	endNULL
	bothNULL
	startText
	endBlob
	startReal // 1.5
	endHuge   // 1e300
	endInf
	startZero
	endZero
	startFar     // past 2^62
	endFarNeg    // before -2^62
	endReversed  // start - 1 - val
	startPastEnd // end + 1 + val
	badKinds
)

var badKindNames = [...]string{"start NULL", "end NULL", "start and end NULL", "start text", "end blob",
	"start 1.5", "end 1e300", "end inf", "start 0", "end 0", "start past 2^62", "end before -2^62",
	"end before start", "start after end"}

func (k badKind) String() string { return badKindNames[k] }

// mayKeepNVTX says whether an NVTX row with this value may be read: a range never closed
// (NULL end) or starting at the session start.
func (k badKind) mayKeepNVTX() bool { return k == endNULL || k == startZero }

// update returns the statement that writes the bad value into the row.
func (k badKind) update(table string, r badRow, val uint32) (string, []any) {
	set := map[badKind]string{
		startNULL: `start = NULL`, endNULL: `"end" = NULL`, bothNULL: `start = NULL, "end" = NULL`,
		startText: `start = 'text'`, endBlob: `"end" = X'00ff'`, startReal: `start = 1.5`,
		endHuge: `"end" = 1e300`, endInf: `"end" = 9e999`, startZero: `start = 0`, endZero: `"end" = 0`,
		startFar: `start = ?`, endFarNeg: `"end" = ?`, endReversed: `"end" = ?`, startPastEnd: `start = ?`,
	}[k]
	var args []any
	switch k {
	case startFar:
		args = []any{int64(1)<<62 + 1 + int64(val)}
	case endFarNeg:
		args = []any{-(int64(1) << 62) - 1 - int64(val)}
	case endReversed:
		args = []any{r.start - 1 - int64(val)}
	case startPastEnd:
		args = []any{r.end + 1 + int64(val)}
	}
	return fmt.Sprintf(`UPDATE %s SET %s WHERE rowid = %d`, table, set, r.rowid), args
}

// mutate runs q on the file at path, after dropping the table's NOT NULL constraints.
func mutate(t *testing.T, path, table, q string, args []any) {
	t.Helper()
	db, err := sql.Open("sqlite3", nsystest.FileURI(path)+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for _, s := range []string{`PRAGMA writable_schema = ON`,
		`UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table' AND name = '` + table + `'`} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()
	if db, err = sql.Open("sqlite3", nsystest.FileURI(path)+"?mode=rw"); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%s: %d rows changed", q, n)
	}
}

// A badRow is a row of a base capture: its rowid and timestamps.
type badRow struct{ rowid, start, end int64 }

// A badRowBase is a capture FuzzBadRow starts from, with its reports.
type badRowBase struct {
	data    []byte
	rows    map[string][]badRow // of badRowTables, with integer start and end
	ref     *nsys.Trace
	methods []string
	reports map[string]*breakdown.Report
	context *breakdown.Report // --steps whole with context classification
}

// count is the number of rows of table that tr holds.
func (b *badRowBase) count(table string, tr *nsys.Trace) int {
	switch table {
	case "CUPTI_ACTIVITY_KIND_KERNEL":
		return len(tr.Kernels)
	case "NVTX_EVENTS":
		return len(tr.Ranges)
	case "CUPTI_ACTIVITY_KIND_RUNTIME":
		return len(tr.APICalls)
	case "CUPTI_ACTIVITY_KIND_GRAPH_TRACE":
		return len(tr.Graphs)
	}
	memset := table == "CUPTI_ACTIVITY_KIND_MEMSET"
	n := 0
	for _, m := range tr.Memops {
		if (m.Kind == nsys.Memset) == memset {
			n++
		}
	}
	return n
}

func badRowBases(tb testing.TB) []badRowBase {
	tb.Helper()
	dir := tb.TempDir()
	var out []badRowBase
	for i, name := range []string{"dense-eager-nvtx", "dense-graph-nvtx", "tp2-moe-graph-nvtx"} {
		path := filepath.Join(dir, fmt.Sprintf("base%d.sqlite", i))
		nsystest.Gunzip(tb, filepath.Join("..", "testdata", "traces", name+".sqlite.gz"), path)
		data, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		b := badRowBase{data: data, rows: map[string][]badRow{}, reports: map[string]*breakdown.Report{}}
		db, err := sql.Open("sqlite3", nsystest.FileURI(path)+"?mode=ro")
		if err != nil {
			tb.Fatal(err)
		}
		for _, t := range badRowTables {
			q := `SELECT rowid, start, "end" FROM ` + t + ` WHERE typeof(start) = 'integer' AND typeof("end") = 'integer' AND start > 0 AND "end" >= start`
			if t == "NVTX_EVENTS" {
				q += ` AND eventType IN (59, 60)`
			}
			rows, err := db.Query(q + ` ORDER BY rowid`)
			if err != nil {
				continue // no such table
			}
			for rows.Next() {
				var r badRow
				if err := rows.Scan(&r.rowid, &r.start, &r.end); err != nil {
					tb.Fatal(err)
				}
				b.rows[t] = append(b.rows[t], r)
			}
			rows.Close()
		}
		db.Close()
		if b.ref, err = nsys.Open(context.Background(), path, nsys.Options{}); err != nil {
			tb.Fatal(err)
		}
		b.methods = []string{"whole"}
		if len(b.ref.Ranges) > 0 {
			b.methods = append(b.methods, "nvtx")
		}
		for _, m := range b.methods {
			b.reports[m] = badRowSummarize(tb, b.ref, m)
		}
		b.context = summarizeWith(tb, b.ref, "whole", false)
		out = append(out, b)
	}
	return out
}

// badRowSummarize classifies by name only: the invariants are about what one row can do to the
// accounting, and context classification lets a kernel's neighbours decide its category by
// design (dropping a layer's first expert GEMM makes the gather before it routing).
// summarizeContext checks the full pipeline conserves time.
func badRowSummarize(tb testing.TB, tr *nsys.Trace, method string) *breakdown.Report {
	return summarizeWith(tb, tr, method, true)
}

func summarizeWith(tb testing.TB, tr *nsys.Trace, method string, byName bool) *breakdown.Report {
	tb.Helper()
	m, err := steps.ParseStepMethod(method)
	if err != nil {
		tb.Fatal(err)
	}
	rep, err := breakdown.Summarize(tr, breakdown.Options{Steps: m, Phase: breakdown.AllSteps, NoContext: byName})
	if err != nil {
		tb.Fatalf("--steps %s: %v", method, err)
	}
	return rep
}

// totals sums a device's busy and exclusive time per category over its steps and the
// activity outside them, and its exclusive time inside steps.
func totals(d *breakdown.DeviceReport) (busy, excl, inside [kernelclass.NumCategories]time.Duration) {
	for _, s := range d.Steps {
		for c := range busy {
			busy[c] += s.Busy[c]
			excl[c] += s.Exclusive[c]
			inside[c] += s.Exclusive[c]
		}
	}
	for c := range busy {
		busy[c] += d.Outside.Busy[c]
		excl[c] += d.Outside.Exclusive[c]
	}
	return busy, excl, inside
}

// moved is the time that changed category between a and b: the sum of the differences,
// idle left out when skipIdle.
func moved(a, b [kernelclass.NumCategories]time.Duration, skipIdle bool) time.Duration {
	var sum time.Duration
	for c := range a {
		if skipIdle && kernelclass.Category(c) == kernelclass.Idle {
			continue
		}
		d := a[c] - b[c]
		sum += max(d, -d)
	}
	return sum
}

func hasWarning(tr *nsys.Trace, table string) bool {
	for _, w := range tr.Warnings {
		if strings.Contains(w.Error(), "rows of "+table+" ") {
			return true
		}
	}
	return false
}

// sumBusy is the busy time over every category but idle.
func sumBusy(b [kernelclass.NumCategories]time.Duration) time.Duration {
	var sum time.Duration
	for c, d := range b {
		if kernelclass.Category(c) != kernelclass.Idle {
			sum += d
		}
	}
	return sum
}

// FuzzDamaged summarises the damaged exports of nsys' FuzzOpen (the same inputs: a base
// export of nsystest.FuzzBaseNames, its high bit asking Open to count rows, a program of
// SQL mutations, a program of byte mutations of the file) that nsys opens.
//
// Properties: Summarize, automatic and of the whole trace, does not panic; it fails only
// for a trace without GPU activity or with an *nsys.Error whose one-line text starts with
// the path; it accounts each step's wall time exactly to categories.
//
// The seeds (run by plain go test) are every base unmutated, plus the programs in this
// package's testdata/fuzz/FuzzDamaged (a copy of nsys' testdata/fuzz/FuzzOpen; go test
// -fuzz writes a failing input there).
func FuzzDamaged(f *testing.F) {
	bases := nsystest.FuzzBases(f)
	for i := range bases {
		f.Add(uint8(i), []byte(nil), []byte(nil))
	}
	nsystest.NeedSeeds(f)
	f.Fuzz(func(t *testing.T, base uint8, sqlProg, byteProg []byte) {
		b := bases[int(base&0x7f)%len(bases)]
		dir := t.TempDir()
		data, roots := b.Data, b.Roots
		if len(sqlProg) > 0 {
			data, roots = nsystest.MutateSQL(t, filepath.Join(dir, "mutate"), data, sqlProg)
		}
		data = nsystest.MutateBytes(data, roots, byteProg)
		path := filepath.Join(dir, "trace.sqlite")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := nsys.Open(context.Background(), path, nsys.Options{CountRows: base&0x80 != 0})
		if err != nil {
			return // nsys' FuzzOpen checks the error
		}
		for _, method := range []breakdown.Method{breakdown.MethodAuto, breakdown.MethodWhole} {
			rep, err := breakdown.Summarize(tr, breakdown.Options{Steps: breakdown.StepMethod{Method: method}, Phase: breakdown.AllSteps})
			if err != nil {
				if !tr.HasGPUActivity() && errors.Is(err, nsys.ErrNoGPUActivity) {
					continue
				}
				var ne *nsys.Error
				if msg := err.Error(); !errors.As(err, &ne) || !strings.HasPrefix(msg, path+": ") || strings.ContainsAny(msg, "\n\r") {
					t.Errorf("--steps %s: error %q (%T) is not one line of an *nsys.Error starting with the path", method, msg, err)
				}
				continue
			}
			for _, d := range rep.Devices {
				for i, s := range d.Steps {
					var sum time.Duration
					for _, x := range s.Exclusive {
						sum += x
					}
					if sum != s.Wall() {
						t.Fatalf("--steps %s: device %d step %d [%d, %d): exclusive times %v sum to %v, wall %v",
							method, d.Device, i, s.Start, s.End, s.Exclusive, sum, s.Wall())
					}
				}
			}
		}
	})
}
