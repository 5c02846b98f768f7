// Command bigtrace grows a real Nsight Systems SQLite export into a large one by repeating
// its activity rows shifted in time (and correlation ids shifted too), so benchmarks run on
// realistic data of any size. It writes a new file and never changes its input.
//
//	go run -tags sqlite_omit_load_extension ./cmd/bigtrace -src testdata/traces/tp2-moe-eager-nvtx.sqlite.gz -n 18400000 -o testdata/big/big.sqlite
//
// (make bigtrace; the trace of make bench).
package main

import (
	"compress/gzip"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// grown lists the tables whose rows are repeated; each has start/end and, when present, a
// correlationId column.
var grown = []string{
	"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
	"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
	"NVTX_EVENTS",
}

func main() {
	src := flag.String("src", "testdata/traces/tp2-moe-eager-nvtx.sqlite.gz", "real export to grow (.sqlite or .sqlite.gz)")
	n := flag.Int64("n", 18_400_000, "kernel rows wanted")
	out := flag.String("o", "testdata/big/big.sqlite", "output file (overwritten)")
	flag.Parse()
	if err := run(*src, *out, *n); err != nil {
		fmt.Fprintln(os.Stderr, "bigtrace:", err)
		os.Exit(1)
	}
}

func run(src, out string, want int64) error {
	start := time.Now()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := copyFile(src, out); err != nil {
		return err
	}
	db, err := sql.Open("sqlite3", "file:"+out+"?_journal_mode=OFF&_synchronous=OFF")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`PRAGMA cache_size = -262144; PRAGMA temp_store = FILE`); err != nil {
		return err
	}
	tables, cols, err := grownColumns(db)
	if err != nil {
		return err
	}
	count := func() (int64, error) {
		var k int64
		err := db.QueryRow(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL`).Scan(&k)
		return k, err
	}
	have, err := count()
	if err != nil {
		return fmt.Errorf("%s: %w (need a kernel table)", src, err)
	}
	for have < want {
		lo, hi, corr, err := span(db, tables, cols)
		if err != nil {
			return err
		}
		shift := hi - lo + 1_000_000 // 1 ms between copies
		cshift := corr + 1
		// The last round copies only the earliest rows, up to the kernel count wanted.
		cutoff := int64(1<<63 - 1)
		if missing := want - have; missing < have {
			if err := db.QueryRow(`SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1 OFFSET ?`, missing).Scan(&cutoff); err != nil {
				return err
			}
		}
		if err := grow(db, tables, cols, shift, cshift, cutoff); err != nil {
			return err
		}
		if have, err = count(); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bigtrace: %d kernels (%.0fs)\n", have, time.Since(start).Seconds())
	}
	fi, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d kernels, %.2f GB, from %s in %.0fs\n", out, have, float64(fi.Size())/1e9, src, time.Since(start).Seconds())
	return nil
}

// grownColumns returns the tables of grown that the export has, with their columns.
func grownColumns(db *sql.DB) ([]string, map[string][]string, error) {
	var tables []string
	cols := map[string][]string{}
	for _, t := range grown {
		var c []string
		rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, t)
		if err != nil {
			return nil, nil, err
		}
		for rows.Next() {
			var s string
			rows.Scan(&s)
			c = append(c, s)
		}
		rows.Close()
		if len(c) > 0 {
			tables = append(tables, t)
			cols[t] = c
		}
	}
	return tables, cols, nil
}

// span returns the time span of the tables' rows and their largest correlation id.
func span(db *sql.DB, tables []string, cols map[string][]string) (lo, hi, corr int64, err error) {
	if err := db.QueryRow(`SELECT min(start), max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL`).Scan(&lo, &hi); err != nil {
		return 0, 0, 0, err
	}
	for _, t := range tables {
		var l, h sql.NullInt64
		db.QueryRow(`SELECT min(start), max(COALESCE(end, start)) FROM `+t).Scan(&l, &h)
		if l.Valid && l.Int64 < lo {
			lo = l.Int64
		}
		if h.Valid && h.Int64 > hi {
			hi = h.Int64
		}
		if has(cols[t], "correlationId") {
			var c sql.NullInt64
			db.QueryRow(`SELECT max(correlationId) FROM ` + t).Scan(&c)
			if c.Valid && c.Int64 > corr {
				corr = c.Int64
			}
		}
	}
	return lo, hi, corr, nil
}

// grow copies the rows of every table that start before cutoff once more, shift later in
// time and with correlation ids cshift higher, in one transaction.
func grow(db *sql.DB, tables []string, cols map[string][]string, shift, cshift, cutoff int64) error {
	var maxRow int64
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := tx.QueryRow(`SELECT COALESCE(max(rowid), 0) FROM ` + t).Scan(&maxRow); err != nil {
			tx.Rollback()
			return err
		}
		var sel []string
		for _, c := range cols[t] {
			switch c {
			case "start", "end":
				sel = append(sel, fmt.Sprintf("%s + %d", c, shift))
			case "correlationId":
				sel = append(sel, fmt.Sprintf("%s + %d", c, cshift))
			default:
				sel = append(sel, c)
			}
		}
		where := fmt.Sprintf("rowid <= %d AND start < %d", maxRow, cutoff)
		if t == "NVTX_EVENTS" {
			where += " AND eventType <> 75" // domain definitions are not repeated
		}
		q := fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM %s WHERE %s`, t, strings.Join(quote(cols[t]), ", "),
			strings.Join(sel, ", "), t, where)
		if _, err := tx.Exec(q); err != nil {
			tx.Rollback()
			return fmt.Errorf("growing %s: %w", t, err)
		}
	}
	return tx.Commit()
}

func quote(cs []string) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = `"` + c + `"`
	}
	return out
}

func has(cs []string, c string) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	var r io.Reader = in
	if strings.HasSuffix(src, ".gz") {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		r = zr
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
