package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// Recorded is what an export says about its capture besides the GPU work: nsys's own
// diagnostics (its warnings and errors: "No CUDA events collected. Does the process use
// CUDA?") and the processes they are about. Front ends use it to explain a trace without
// GPU activity; Open does not read it.
type Recorded struct {
	Diagnostics []Diagnostic // warnings and errors, in time order; repeated texts once
	// Processes are the processes the diagnostics name or that made CUDA API calls, by pid.
	Processes []RecordedProcess
}

// A Diagnostic is one warning or error of DIAGNOSTIC_EVENT.
type Diagnostic struct {
	Severity string // "Warning" or "Error"
	Text     string
	PIDs     []int64 // the processes it was reported for (pid), when known
}

// A RecordedProcess is a process of the PROCESSES table.
type RecordedProcess struct {
	PID      int64
	Name     string
	CUDACall bool // it made CUDA runtime or driver calls
}

// maxDiagnostics bounds the distinct diagnostic texts kept.
const maxDiagnostics = 20

// ReadRecorded reads the diagnostics and processes of the export at path, read-only. A
// table the export lacks gives none of its rows, not an error.
func ReadRecorded(ctx context.Context, path string) (*Recorded, error) {
	src, err := openSource(path)
	if err != nil {
		return nil, err
	}
	defer src.close()
	db, err := src.db(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	x := &recordedDB{ctx: ctx, db: db, pidOf: map[int64]int64{}, names: map[int64]string{},
		want: map[int64]bool{}, cuda: map[int64]bool{}}
	if err := x.readProcesses(); err != nil {
		return nil, &Error{path, err}
	}
	x.readCUDAProcesses()
	if err := x.readDiagnostics(); err != nil {
		return nil, &Error{path, err}
	}
	rec := &x.rec
	for p := range x.want {
		rec.Processes = append(rec.Processes, RecordedProcess{PID: p, Name: x.names[p], CUDACall: x.cuda[p]})
	}
	slices.SortFunc(rec.Processes, func(a, b RecordedProcess) int { return int(a.PID - b.PID) })
	for i := range rec.Diagnostics {
		slices.Sort(rec.Diagnostics[i].PIDs)
	}
	return rec, nil
}

// A recordedDB is ReadRecorded's read of one export: what it has found so far.
type recordedDB struct {
	ctx   context.Context
	db    *sql.DB
	rec   Recorded
	pidOf map[int64]int64  // globalPid -> pid
	names map[int64]string // pid -> process name
	want  map[int64]bool   // pids to list
	cuda  map[int64]bool   // pids that made CUDA calls
}

// has reports whether the export has table, with each of cols.
func (x *recordedDB) has(table string, cols ...string) bool {
	rows, err := x.db.QueryContext(x.ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return false
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			seen[n] = true
		}
	}
	for _, c := range cols {
		if !seen[c] {
			return false
		}
	}
	return len(seen) > 0
}

// readProcesses reads PROCESSES: each process's pid and name.
func (x *recordedDB) readProcesses() error {
	if !x.has("PROCESSES", "globalPid", "pid", "name") {
		return nil
	}
	rows, err := x.db.QueryContext(x.ctx, `SELECT globalPid, pid, COALESCE(name, '') FROM PROCESSES WHERE globalPid IS NOT NULL`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var g, p int64
		var n string
		if err := rows.Scan(&g, &p, &n); err != nil {
			return err
		}
		x.pidOf[g], x.names[p] = p, n
	}
	return nil
}

// readCUDAProcesses finds the processes that made CUDA runtime calls.
func (x *recordedDB) readCUDAProcesses() {
	if !x.has("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid") {
		return
	}
	// A globalTid holds its process's globalPid in the bits above the thread id.
	rows, err := x.db.QueryContext(x.ctx, `SELECT DISTINCT (globalTid >> 24) << 24 FROM CUPTI_ACTIVITY_KIND_RUNTIME`)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var g int64
		if rows.Scan(&g) == nil {
			if p, ok := x.pidOf[g]; ok {
				x.want[p], x.cuda[p] = true, true
			}
		}
	}
}

// readDiagnostics reads the warnings and errors of DIAGNOSTIC_EVENT, in time order,
// each text once, with the processes it was reported for.
func (x *recordedDB) readDiagnostics() error {
	if !x.has("DIAGNOSTIC_EVENT", "severity", "text") {
		return nil
	}
	pidCol := "NULL"
	if x.has("DIAGNOSTIC_EVENT", "globalPid") {
		pidCol = "globalPid"
	}
	// text is the message itself in current exports, a StringIds id in some older ones.
	text := "CAST(d.text AS TEXT)"
	if x.has("StringIds", "id", "value") {
		text = "COALESCE(CASE WHEN typeof(d.text) = 'integer' THEN (SELECT value FROM StringIds WHERE id = d.text) END, CAST(d.text AS TEXT))"
	}
	q := fmt.Sprintf(`SELECT d.severity, %s, %s FROM DIAGNOSTIC_EVENT d WHERE d.severity IN (2, 3) ORDER BY d.timestamp`, text, pidCol)
	rows, err := x.db.QueryContext(x.ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	idx := map[string]int{}
	for rows.Next() {
		var sev int
		var txt string
		var g sql.NullInt64
		if err := rows.Scan(&sev, &txt, &g); err != nil {
			return err
		}
		level := "Warning"
		if sev == 3 {
			level = "Error"
		}
		x.diagnostic(idx, level, txt, g)
	}
	return rows.Err()
}

// diagnostic adds one diagnostic row: a new text (up to maxDiagnostics of them), or one
// more process for a text already seen (idx: the index of each level and text).
func (x *recordedDB) diagnostic(idx map[string]int, level, txt string, g sql.NullInt64) {
	rec := &x.rec
	key := level + "\x00" + txt
	i, ok := idx[key]
	if !ok {
		if len(rec.Diagnostics) == maxDiagnostics {
			return
		}
		i = len(rec.Diagnostics)
		idx[key] = i
		rec.Diagnostics = append(rec.Diagnostics, Diagnostic{Severity: level, Text: strings.TrimSpace(txt)})
	}
	if g.Valid {
		if p, ok := x.pidOf[g.Int64]; ok {
			x.want[p] = true
			if !slices.Contains(rec.Diagnostics[i].PIDs, p) {
				rec.Diagnostics[i].PIDs = append(rec.Diagnostics[i].PIDs, p)
			}
		}
	}
}
