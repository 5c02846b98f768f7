package nsys

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// Options control what Open reads.
type Options struct {
	// CountRows counts the rows of every table into Trace.Tables (a full scan of each).
	CountRows bool
	// Progress, when set, is called as tables are read, with the table's name and the rows
	// read so far (a running count; total is the table's row count or -1 when unknown).
	Progress func(table string, done, total int64)
}

// ErrNoGPUActivity is wrapped by errors of callers that need GPU activity and find none.
var ErrNoGPUActivity = errors.New("no GPU activity (no kernel, memcpy, memset or CUDA graph rows)")

// An Error is a failure to read an export. Its text starts with the file's path.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

const sqliteMagic = "SQLite format 3\x00"

// CheckFile checks, without opening a database, that path names a regular, non-empty,
// complete SQLite file. It never creates or changes the file.
func CheckFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &Error{path, errors.New("no such file")}
	case err != nil:
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &Error{path, err}
	case fi.IsDir():
		return &Error{path, errors.New("is a directory, not an nsys SQLite export")}
	case !fi.Mode().IsRegular():
		return &Error{path, errors.New("is not a regular file")}
	case fi.Size() == 0:
		return &Error{path, errors.New("empty file, not an nsys SQLite export")}
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &Error{path, err}
	}
	defer f.Close()
	var hdr [100]byte
	n, err := io.ReadFull(f, hdr[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{path, err}
	}
	if n < len(sqliteMagic) || !bytes.Equal(hdr[:len(sqliteMagic)], []byte(sqliteMagic)) {
		if strings.HasSuffix(path, ".nsys-rep") || strings.HasSuffix(path, ".qdrep") {
			return &Error{path, errors.New(`is an Nsight Systems report, not its SQLite export (run "nsys export --type sqlite ` + filepath.Base(path) + `")`)}
		}
		return &Error{path, errors.New(`not an SQLite database (expected an export made with "nsys export --type sqlite")`)}
	}
	if n < 100 {
		return &Error{path, fmt.Errorf("truncated SQLite file (%d bytes, shorter than its header)", fi.Size())}
	}
	pageSize := int64(binary.BigEndian.Uint16(hdr[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(binary.BigEndian.Uint32(hdr[28:32]))
	// The in-header page count is valid when the version-valid-for number matches the change counter.
	if pages > 0 && binary.BigEndian.Uint32(hdr[92:96]) == binary.BigEndian.Uint32(hdr[24:28]) {
		if want := pages * pageSize; fi.Size() < want {
			return &Error{path, fmt.Errorf("truncated SQLite file (%d bytes, its header says %d)", fi.Size(), want)}
		}
	}
	return nil
}

// dsn returns a read-only, immutable SQLite URI for path. go-sqlite3 honours mode=ro only
// when the DSN starts with "file:"; immutable=1 keeps SQLite from creating journal, WAL or
// SHM files beside the input.
func dsn(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return u.String() + "?mode=ro&immutable=1&_query_only=1", nil
}

// A reader holds the open database during Open.
type reader struct {
	ctx    context.Context
	db     *sql.DB
	batch  *batchDB // nil when unavailable
	uri    string   // SQLite URI of the file, for more connections
	warns  []error  // this lane's warnings
	cache  procCache
	api    *apiPlan // the runtime-table scan, planned before the lanes start
	t      *Trace
	opt    Options
	cols   map[string]map[string]bool // table -> column set
	procs  *procTable
	counts map[string]int64
}

// Open reads the export at path. It checks the file first (CheckFile), then reads each
// table it needs in one pass. Missing optional tables become warnings. Errors start with
// the path.
func Open(ctx context.Context, path string, opt Options) (*Trace, error) {
	if err := CheckFile(path); err != nil {
		return nil, err
	}
	d, err := dsn(path)
	if err != nil {
		return nil, &Error{path, err}
	}
	db, err := sql.Open("sqlite3", d)
	if err != nil {
		return nil, &Error{path, err}
	}
	defer db.Close()
	r := &reader{ctx: ctx, db: db, t: &Trace{Path: path, Domains: map[uint32]string{}}, opt: opt,
		cols: map[string]map[string]bool{}, procs: &procTable{ids: map[int64]ProcID{}}}
	// Large tables are scanned through a second, C-level connection many rows per call;
	// database/sql remains the fallback.
	r.uri = strings.TrimSuffix(d, "&_query_only=1")
	if b, err := openBatch(r.uri); err == nil {
		r.batch = b
		defer b.Close()
	}
	if err := r.read(); err != nil {
		return nil, &Error{path, sqliteHint(err)}
	}
	r.t.Warnings = append(r.t.Warnings, r.warns...)
	return r.t, nil
}

// sqliteHint turns SQLite's terse corruption messages into ones a user can act on.
func sqliteHint(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "malformed"), strings.Contains(msg, "disk I/O error"), strings.Contains(msg, "database corrupt"):
		return fmt.Errorf("corrupt or truncated SQLite file (%w)", err)
	case strings.Contains(msg, "file is not a database"), strings.Contains(msg, "file is encrypted"):
		return fmt.Errorf(`not an SQLite database (expected an export made with "nsys export --type sqlite")`)
	}
	return err
}

func (r *reader) read() error {
	if err := r.readTables(); err != nil {
		return err
	}
	if !r.has("StringIds") {
		return errors.New(`not an Nsight Systems export (no StringIds table; export with "nsys export --type sqlite")`)
	}
	if err := r.readMeta(); err != nil {
		return err
	}
	r.t.Warnings, r.warns = append(r.t.Warnings, r.warns...), nil
	// Two lanes on the two cores a CI machine has: kernels on one, everything else on the
	// other. Each lane has its own connection and its own warnings, merged in a fixed order.
	if err := r.planAPI(); err != nil {
		return err
	}
	// The runtime table is the largest (every CUDA call, 2-3 rows per kernel launched in
	// eager mode): it gets a lane to itself.
	lanes := [][]func(*reader) error{
		{(*reader).readKernels, (*reader).readMemops, (*reader).readGraphs, (*reader).readNVTX},
		{(*reader).readAPI},
	}
	lr := make([]*reader, len(lanes))
	errs := make([]error, len(lanes))
	var wg sync.WaitGroup
	for i, lane := range lanes {
		l := *r
		l.warns = nil
		l.cache = procCache{}
		if i > 0 && r.batch != nil {
			b, err := openBatch(r.uri)
			if err != nil {
				return err
			}
			defer b.Close()
			l.batch = b
		}
		lr[i] = &l
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, f := range lane {
				if err := l.ctx.Err(); err != nil {
					errs[i] = err
					return
				}
				if err := f(&l); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range lanes {
		if errs[i] != nil {
			return errs[i]
		}
		r.t.Warnings = append(r.t.Warnings, lr[i].warns...)
	}
	r.renumberProcs()
	return r.readDevices()
}

func (r *reader) has(table string) bool { _, ok := r.cols[table]; return ok }

func (r *reader) hasCol(table, col string) bool { return r.cols[table][col] }

func (r *reader) warnf(format string, args ...any) {
	r.warns = append(r.warns, fmt.Errorf(format, args...))
}

func (r *reader) readTables() error {
	rows, err := r.db.QueryContext(r.ctx, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, n := range names {
		cols := map[string]bool{}
		cr, err := r.db.QueryContext(r.ctx, `SELECT name FROM pragma_table_info(?)`, n)
		if err != nil {
			return fmt.Errorf("reading columns of %s: %w", n, err)
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
		r.cols[n] = cols
		tb := Table{Name: n, Rows: -1}
		if r.opt.CountRows {
			if err := r.db.QueryRowContext(r.ctx, `SELECT count(*) FROM "`+n+`"`).Scan(&tb.Rows); err != nil {
				return fmt.Errorf("counting rows of %s: %w", n, err)
			}
		}
		r.t.Tables = append(r.t.Tables, tb)
	}
	return nil
}

func (r *reader) rowCount(table string) int64 {
	for _, tb := range r.t.Tables {
		if tb.Name == table {
			return tb.Rows
		}
	}
	return -1
}

func (r *reader) readMeta() error {
	for _, tb := range []string{"META_DATA_EXPORT", "EXPORT_META_DATA"} {
		if !r.has(tb) {
			continue
		}
		r.t.Meta.MetaTable = tb
		rows, err := r.db.QueryContext(r.ctx, `SELECT name, COALESCE(value, '') FROM `+tb+
			` WHERE name IN ('EXPORT_PRODUCT_VERSION', 'EXPORT_SCHEMA_VERSION')`)
		if err != nil {
			return fmt.Errorf("reading %s: %w", tb, err)
		}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				rows.Close()
				return fmt.Errorf("reading %s: %w", tb, err)
			}
			switch k {
			case "EXPORT_PRODUCT_VERSION":
				r.t.Meta.NsysVersion = v
			case "EXPORT_SCHEMA_VERSION":
				r.t.Meta.SchemaVersion = v
			}
		}
		rows.Close()
		return rows.Err()
	}
	return nil
}

// procTable numbers processes (globalPid) as the lanes meet them; renumberProcs makes the
// numbering independent of that order.
type procTable struct {
	mu  sync.Mutex
	ids map[int64]ProcID
	pid []int64
}

// procCache remembers a lane's last process: consecutive rows nearly always share it.
type procCache struct {
	global int64
	id     ProcID
	ok     bool
}

// proc returns the ProcID of a globalPid (or globalTid: the thread bits are cleared).
func (r *reader) proc(global int64) ProcID {
	global &^= 0xFFFFFF
	if r.cache.ok && r.cache.global == global {
		return r.cache.id
	}
	pt := r.procs
	pt.mu.Lock()
	p, ok := pt.ids[global]
	if !ok {
		p = ProcID(len(pt.pid))
		pt.ids[global] = p
		pt.pid = append(pt.pid, global)
	}
	pt.mu.Unlock()
	r.cache = procCache{global, p, true}
	return p
}

// renumberProcs orders Trace.Procs by globalPid and rewrites every ProcID to match.
func (r *reader) renumberProcs() {
	pids := slices.Clone(r.procs.pid)
	slices.Sort(pids)
	r.t.Procs = pids
	remap := make([]ProcID, len(pids))
	sorted := true
	for old, g := range r.procs.pid {
		n, _ := slices.BinarySearch(pids, g)
		remap[old] = ProcID(n)
		sorted = sorted && old == n
	}
	if sorted {
		return
	}
	for i := range r.t.Kernels {
		r.t.Kernels[i].Proc = remap[r.t.Kernels[i].Proc]
	}
	for i := range r.t.Memops {
		r.t.Memops[i].Proc = remap[r.t.Memops[i].Proc]
	}
	for i := range r.t.Graphs {
		r.t.Graphs[i].Proc = remap[r.t.Graphs[i].Proc]
	}
	for i := range r.t.APICalls {
		r.t.APICalls[i].Proc = remap[r.t.APICalls[i].Proc]
	}
	for i := range r.t.Ranges {
		r.t.Ranges[i].Proc = remap[r.t.Ranges[i].Proc]
	}
	// Orders that broke ties by Proc may change: restore them.
	if !slices.IsSortedFunc(r.t.Kernels, kernelLess) {
		slices.SortFunc(r.t.Kernels, kernelLess)
	}
	if !slices.IsSortedFunc(r.t.Memops, memopLess) {
		slices.SortFunc(r.t.Memops, memopLess)
	}
}

// loadStrings resolves StringIds ids used by table. Missing ids resolve to a placeholder
// and a warning naming the table.
func (r *reader) loadStrings(table string, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	const chunk = 500
	for i := 0; i < len(ids); i += chunk {
		part := ids[i:min(i+chunk, len(ids))]
		var q strings.Builder
		q.WriteString(`SELECT id, value FROM StringIds WHERE id IN (`)
		args := make([]any, len(part))
		for j, id := range part {
			if j > 0 {
				q.WriteByte(',')
			}
			q.WriteByte('?')
			args[j] = id
		}
		q.WriteByte(')')
		rows, err := r.db.QueryContext(r.ctx, q.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("reading StringIds: %w", err)
		}
		for rows.Next() {
			var id int64
			var v string
			if err := rows.Scan(&id, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading StringIds: %w", err)
			}
			out[id] = v
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("reading StringIds: %w", err)
		}
	}
	missing := 0
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			out[id] = fmt.Sprintf("<missing string %d>", id)
			missing++
		}
	}
	if missing > 0 {
		r.warnf("%d string ids used by %s not found in StringIds", missing, table)
	}
	return out, nil
}
