package nsystest

import (
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A Sharer says how ShareDevice adds a second export's process to a first: as if both
// had run on one GPU at once.
type Sharer struct {
	PID    int64 // the added process's pid (its rows' globalPid and globalTid get it)
	Device int64 // the device its GPU work lands on (deviceId)
	// Offset places its first GPU activity this many ns after the first export's first.
	Offset int64
}

// stringCols are the columns that hold StringIds ids.
var stringCols = []string{"demangledName", "shortName", "mangledName", "nameId", "textId", "jsonTextId", "filenameId"}

// ShareDevice writes to dir a copy of the export at a with every row of the export at b
// added as the rows of another process (Sharer.PID) on device Sharer.Device, its clock
// moved so that its GPU work starts Sharer.Offset after a's: two real programs' rows on
// one GPU, as two servers sharing a device record them. Rows of every table with a
// globalPid or globalTid column of activity (CUDA, NVTX, processes, threads) are added, with their correlation ids and string ids moved
// past a's (StringIds gets b's strings). a and b are read, never changed. It returns the
// file's path.
func ShareDevice(t testing.TB, a, b, dir string, s Sharer) string {
	t.Helper()
	dst := filepath.Join(dir, trimExt(filepath.Base(a))+"+"+trimExt(filepath.Base(b))+".sqlite")
	if err := copyFile(a, dst); err != nil {
		t.Fatal(err)
	}
	if err := share(dst, b, s); err != nil {
		t.Fatalf("adding %s to %s: %v", b, a, err)
	}
	return dst
}

func share(dst, b string, s Sharer) error {
	db, err := sql.Open("sqlite3", "file:"+url.PathEscape(dst)+"?_journal_mode=OFF")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // the ATTACH holds for one connection
	if _, err := db.Exec(`ATTACH DATABASE ? AS b`, "file:"+url.PathEscape(b)+"?mode=ro"); err != nil {
		return err
	}
	one := func(q string) (int64, error) {
		var v sql.NullInt64
		err := db.QueryRow(q).Scan(&v)
		return v.Int64, err
	}
	strShift, err := one(`SELECT COALESCE(MAX(id), 0) + 1 FROM main.StringIds`)
	if err != nil {
		return err
	}
	corrShift, err := one(`SELECT COALESCE(MAX(correlationId), 0) + 1 FROM main.CUPTI_ACTIVITY_KIND_RUNTIME`)
	if err != nil {
		return err
	}
	a0, err := one(`SELECT MIN(start) FROM main.CUPTI_ACTIVITY_KIND_KERNEL`)
	if err != nil {
		return err
	}
	b0, err := one(`SELECT MIN(start) FROM b.CUPTI_ACTIVITY_KIND_KERNEL`)
	if err != nil {
		return err
	}
	shift := a0 - b0 + s.Offset
	if _, err := db.Exec(`INSERT INTO main.StringIds (id, value) SELECT id + ?, value FROM b.StringIds`, strShift); err != nil {
		return err
	}
	cols := func(schema, table string) ([]string, error) {
		rows, err := db.Query(`SELECT name FROM pragma_table_info(?, ?)`, table, schema)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, rows.Err()
	}
	tables, err := tableNames(db, "b")
	if err != nil {
		return err
	}
	for _, tb := range tables {
		bc, err := cols("b", tb)
		if err != nil {
			return err
		}
		ac, err := cols("main", tb)
		if err != nil {
			return err
		}
		activity := strings.HasPrefix(tb, "CUPTI_ACTIVITY_KIND_") || slices.Contains([]string{"NVTX_EVENTS", "PROCESSES", "ThreadNames", "CUDA_GRAPH_NODE_EVENTS"}, tb)
		if !activity || !slices.Contains(bc, "globalPid") && !slices.Contains(bc, "globalTid") || len(ac) == 0 {
			continue
		}
		var names, exprs []string
		for _, c := range bc {
			if !slices.Contains(ac, c) {
				continue
			}
			q := `"` + c + `"`
			e := q
			switch {
			case c == "globalPid" || c == "globalTid" || c == "endGlobalTid":
				e = fmt.Sprintf(`%s - (((%s >> 24) & 16777215) << 24) + (%d << 24)`, q, q, s.PID)
			case c == "start" || c == "end" || c == "timestamp":
				e = fmt.Sprintf(`%s + %d`, q, shift)
			case c == "correlationId":
				e = fmt.Sprintf(`%s + %d`, q, corrShift)
			case c == "deviceId" && tb != "TARGET_INFO_CUDA_CONTEXT_INFO":
				e = fmt.Sprint(s.Device)
			case c == "pid" && tb == "PROCESSES":
				e = fmt.Sprint(s.PID)
			case slices.Contains(stringCols, c):
				e = fmt.Sprintf(`%s + %d`, q, strShift)
			}
			names, exprs = append(names, q), append(exprs, fmt.Sprintf(`CASE WHEN %s IS NULL THEN NULL ELSE %s END`, q, e))
		}
		stmt := fmt.Sprintf(`INSERT INTO main."%s" (%s) SELECT %s FROM b."%s"`, tb, strings.Join(names, ", "), strings.Join(exprs, ", "), tb)
		if _, err := db.Exec(stmt); err != nil {
			return fmt.Errorf("%s: %w", tb, err)
		}
	}
	_, err = db.Exec(`DETACH DATABASE b`)
	return err
}
