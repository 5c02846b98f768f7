package breakdown_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
)

// craftedTrace decompresses a capture of testdata/traces into a temporary file, changes
// the copy with SQL statements (the capture itself is never modified) and reads it.
func craftedTrace(t *testing.T, name string, stmts ...string) *nsys.Trace {
	t.Helper()
	path := gunzipCapture(t, filepath.Join("..", "testdata", "traces", name+".sqlite.gz"), t.TempDir())
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func craftedReport(t *testing.T, name string, stmts ...string) *breakdown.Report {
	t.Helper()
	rep, err := breakdown.Summarize(craftedTrace(t, name, stmts...), breakdown.Options{Phase: breakdown.AllSteps})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// activityTables are the tables a run's rows live in, with their time columns and whether
// they have a correlation id.
var activityTables = []struct {
	name string
	cols string // every column but start, end and correlationId, as the repeat copies them
	corr bool
}{
	{"CUPTI_ACTIVITY_KIND_KERNEL", "", true},
	{"CUPTI_ACTIVITY_KIND_MEMCPY", "", true},
	{"CUPTI_ACTIVITY_KIND_MEMSET", "", true},
	{"CUPTI_ACTIVITY_KIND_RUNTIME", "", true},
	{"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "", true},
}

// repeatRun returns the statements that append copies of a capture's activity to itself:
// copy i starts i x (the capture's span + gap) later, with correlation ids shifted past
// every id used, as a server answering the same request again after a pause.
func repeatRun(t *testing.T, name string, copies int, gapNS int64) []string {
	t.Helper()
	path := gunzipCapture(t, filepath.Join("..", "testdata", "traces", name+".sqlite.gz"), t.TempDir())
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var lo, hi, corr int64
	if err := db.QueryRow(`SELECT min(start), max(end), max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME`).Scan(&lo, &hi, &corr); err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, tab := range activityTables {
		rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, tab.name)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for rows.Next() {
			var c string
			rows.Scan(&c)
			cols = append(cols, c)
		}
		rows.Close()
		if len(cols) == 0 {
			continue
		}
		var maxRow int64
		db.QueryRow(`SELECT COALESCE(max(rowid), 0) FROM ` + tab.name).Scan(&maxRow)
		for i := 1; i < copies; i++ {
			shift, cshift := int64(i)*(hi-lo+gapNS), int64(i)*(corr+1)
			var sel []string
			for _, c := range cols {
				switch c {
				case "start", "end":
					sel = append(sel, fmt.Sprintf("%s + %d", c, shift))
				case "correlationId":
					sel = append(sel, fmt.Sprintf("%s + %d", c, cshift))
				default:
					sel = append(sel, `"`+c+`"`)
				}
			}
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO %s ("%s") SELECT %s FROM %s WHERE rowid <= %d`,
				tab.name, strings.Join(cols, `", "`), strings.Join(sel, ", "), tab.name, maxRow))
		}
	}
	return stmts
}

// phaseCounts counts a device's steps per phase.
func phaseCounts(d *breakdown.DeviceReport) map[breakdown.Phase]int {
	n := map[breakdown.Phase]int{}
	for _, s := range d.Steps {
		n[s.Phase]++
	}
	return n
}

// selfChecks returns the texts of the report's self-check warnings.
func selfChecks(rep *breakdown.Report) []string {
	var out []string
	for _, w := range rep.Warnings {
		var sc *breakdown.SelfCheckWarning
		if errors.As(w, &sc) {
			out = append(out, sc.Text)
		}
	}
	return out
}

// TestRepeatedRuns: the same run three times in one file (a server answering one request
// after another, 20 ms apart) is three prefills and every decode step of the three runs,
// each step as in the single run, with the pauses between requests outside steps.
func TestRepeatedRuns(t *testing.T) {
	for _, tc := range []struct {
		name            string
		decode, kernels int // per run; kernels per decode step
	}{
		{"dense-eager", 12, 62},
		{"hf-qwen3moe-eager", 15, 307},
		{"moe-graph", 12, 322},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := craftedReport(t, tc.name, repeatRun(t, tc.name, 3, 20_000_000)...)
			d := &rep.Devices[0]
			got := phaseCounts(d)
			if got[breakdown.Prefill] != 3 || got[breakdown.Decode] != 3*tc.decode || len(d.Steps) != 3*(tc.decode+1) {
				t.Fatalf("%d steps by %v (%s): %v; want 3 prefill and %d decode", len(d.Steps), d.Method, d.MethodDetail, got, 3*tc.decode)
			}
			for i, s := range d.Steps {
				want := breakdown.Decode
				if i%(tc.decode+1) == 0 {
					want = breakdown.Prefill
				}
				if s.Phase != want {
					t.Errorf("step %d: %v, want %v", i, s.Phase, want)
				}
				if want == breakdown.Decode && s.TotalKernels() != tc.kernels {
					t.Errorf("decode step %d: %d kernels, want %d", i, s.TotalKernels(), tc.kernels)
				}
				// A request's last step ends with its own work, not with the pause after it.
				if (i+1)%(tc.decode+1) == 0 && i+1 < len(d.Steps) && s.Wall() > 15_000_000 {
					t.Errorf("step %d (a request's last) lasts %v: it holds the pause between requests", i, s.Wall())
				}
			}
			if d.Outside.Windows < 2 {
				t.Errorf("%d windows outside steps, want the 2 pauses between requests", d.Outside.Windows)
			}
			silentSelfChecks(t, rep)
		})
	}
}
