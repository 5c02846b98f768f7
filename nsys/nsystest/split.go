package nsystest

import (
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// A Part says how to make one file of a split export: the rows of one process, with
// its clock moved.
type Part struct {
	PID int64 // the process whose rows are kept (pid, as in (globalPid >> 24) & 0xFFFFFF)
	// Shift is added to every timestamp (start, end, timestamp columns, ANALYSIS_DETAILS'
	// startTime and stopTime), and StartShift to the session start
	// (TARGET_INFO_SESSION_START_TIME.utcEpochNs): a file whose session started Shift
	// earlier has Shift added to its timestamps and -Shift to its start; a host clock
	// that reads Skew ahead adds Skew to the start as well.
	Shift, StartShift int64
	// DriftPPM makes the part's clock run that many parts per million fast: every
	// timestamp t becomes t + t*DriftPPM/1e6 (before Shift), as a host clock of another
	// rate would have recorded it.
	DriftPPM float64
	// Env, when not empty, is appended to the recorded environment
	// (TARGET_INFO_SYSTEM_ENV DeviceEnvironment), e.g. "RANK=1;LOCAL_RANK=1".
	Env string
	// SQL holds statements run on the part after the rest (e.g. another program).
	SQL []string
}

// Split writes one file per part into dir from the export at src (which is read, never
// changed: each part starts as a copy), as if each process had been profiled on its own:
// rows of other processes are deleted from every table with a globalPid or globalTid
// column, and the part's clock is moved. It returns the files' paths.
func Split(t testing.TB, src, dir string, parts []Part) []string {
	t.Helper()
	var out []string
	for i, p := range parts {
		dst := filepath.Join(dir, fmt.Sprintf("%s.part%d.sqlite", trimExt(filepath.Base(src)), i))
		if err := copyFile(src, dst); err != nil {
			t.Fatal(err)
		}
		if err := splitPart(dst, p); err != nil {
			t.Fatalf("splitting %s for pid %d: %v", src, p.PID, err)
		}
		out = append(out, dst)
	}
	return out
}

func trimExt(s string) string { return s[:len(s)-len(filepath.Ext(s))] }

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

func splitPart(path string, p Part) error {
	db, err := sql.Open("sqlite3", "file:"+url.PathEscape(path)+"?_journal_mode=OFF")
	if err != nil {
		return err
	}
	defer db.Close()
	tables, err := tableNames(db, "main")
	if err != nil {
		return err
	}
	var stmts []string
	for _, tb := range tables {
		cols := map[string]bool{}
		cr, err := db.Query(`SELECT name FROM pragma_table_info(?)`, tb)
		if err != nil {
			return err
		}
		for cr.Next() {
			var c string
			if err := cr.Scan(&c); err != nil {
				cr.Close()
				return err
			}
			cols[c] = true
		}
		cr.Close()
		q := `"` + tb + `"`
		for _, c := range []string{"globalPid", "globalTid"} {
			if cols[c] {
				stmts = append(stmts, fmt.Sprintf(`DELETE FROM %s WHERE %s IS NOT NULL AND ((%s >> 24) & 16777215) != %d`, q, c, c, p.PID))
			}
		}
		if p.Shift != 0 || p.DriftPPM != 0 {
			for _, c := range []string{"start", "end", "timestamp"} {
				if cols[c] {
					stmts = append(stmts, fmt.Sprintf(`UPDATE %s SET "%s" = "%s" + CAST("%s" * %g / 1e6 AS INTEGER) + %d WHERE "%s" IS NOT NULL AND "%s" >= 0`,
						q, c, c, c, p.DriftPPM, p.Shift, c, c))
				}
			}
			if tb == "ANALYSIS_DETAILS" {
				stmts = append(stmts, fmt.Sprintf(`UPDATE %s SET startTime = startTime + %d, stopTime = stopTime + %d`, q, p.Shift, p.Shift))
			}
		}
		if tb == "TARGET_INFO_SESSION_START_TIME" && p.StartShift != 0 {
			stmts = append(stmts, fmt.Sprintf(`UPDATE %s SET utcEpochNs = utcEpochNs + %d`, q, p.StartShift))
		}
		if tb == "TARGET_INFO_SYSTEM_ENV" && p.Env != "" {
			stmts = append(stmts, fmt.Sprintf(`UPDATE %s SET value = value || ';' || '%s' WHERE name = 'DeviceEnvironment'`, q, p.Env))
		}
	}
	stmts = append(stmts, p.SQL...)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// tableNames lists the tables of the database schema (main, or an attached one's name).
func tableNames(db *sql.DB, schema string) ([]string, error) {
	rows, err := db.Query(`SELECT name FROM ` + schema + `.sqlite_master WHERE type = 'table'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		tables = append(tables, n)
	}
	return tables, rows.Err()
}
