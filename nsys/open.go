package nsys

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
	"golang.org/x/sync/errgroup"
)

// Options control what Open reads.
type Options struct {
	// CountRows counts the rows of every table into Trace.Tables (a full scan of each).
	CountRows bool
	// Progress, when set, is called as tables are read, with the table's name and the rows
	// read so far (a running count; total is the table's row count or -1 when unknown).
	Progress func(table string, done, total int64)

	// KernelsOnly reads the kernel table (kernels, their names and sites) and the devices,
	// and no other activity table: no runtime calls, NVTX ranges, memory operations or graph
	// executions. For what needs the kernels alone (classify without NVTX rules).
	KernelsOnly bool

	// SQLiteOnly reads every table through SQLite, none with the direct reader of the
	// file format (direct.go): the reference the direct reader is tested against.
	SQLiteOnly bool

	// partRows, when not 0, replaces defaultPartRows and directPartRows (tests of the
	// partitioned read).
	partRows int
	// directFailed, when set, is why the direct reader stopped on a first attempt: the
	// read is done again through SQLite (Open).
	directFailed string
}

// ErrNoGPUActivity is wrapped by errors of callers that need GPU activity and find none.
var ErrNoGPUActivity = errors.New("no GPU activity (no kernel, memcpy, memset or CUDA graph rows)")

// An Error is a failure to read an export. Its text starts with the file's path.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string {
	return oneLine(e.Path) + ": " + oneLine(clip(e.Err.Error(), maxErrorText))
}

// maxErrorText bounds the text of an error: SQLite quotes the schema it cannot parse, and a
// damaged schema can be any length.
const maxErrorText = 400

// oneLine writes control characters (a newline in a quoted schema, a tab) as Go escapes, so
// that an error is one line whatever the file holds.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// clip shortens s to about n bytes, keeping its head and tail (on rune boundaries).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n/2, n/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:head] + " … " + s[t:]
}
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
		if n >= 2 && hdr[0] == 0x1f && hdr[1] == 0x8b {
			return &Error{path, errors.New(`is gzip-compressed, not an SQLite database (decompress it first: "gunzip -k ` + filepath.Base(path) + `")`)}
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
	ctx     context.Context
	db      *sql.DB
	batch   *batchDB // nil when unavailable
	uri     string   // SQLite URI of the file, for more connections
	warns   []error  // this lane's warnings
	cache   procCache
	api     *apiPlan    // the runtime-table scan, planned before the lanes start
	file    *sqliteFile // the file, for the direct reader; nil when it does not handle it
	fileWhy string      // why file is nil
	infos   map[string]*tableInfo
	reads   *readLog
	t       *Trace
	opt     Options
	cols    map[string]map[string]bool // table -> column set
	size    int64                      // of the file: bounds the rows a table can hold
	procs   *procTable
	counts  map[string]int64
}

// Open reads the export at path. It checks the file first (CheckFile), then reads each
// table it needs in one pass. Missing optional tables become warnings. Errors start with
// the path.
//
// The large activity tables are decoded from the file directly (direct.go) unless
// Options.SQLiteOnly; what the direct reader does not handle is read through SQLite, a
// table at a time when known before reading, else by reading the whole file again
// through SQLite. Trace.Reads says which.
func Open(ctx context.Context, path string, opt Options) (*Trace, error) {
	if err := CheckFile(path); err != nil {
		return nil, err
	}
	t, err := open(ctx, path, opt)
	var u *unhandledError
	if err != nil && !opt.SQLiteOnly && errors.As(err, &u) {
		opt.SQLiteOnly, opt.directFailed = true, u.why
		return open(ctx, path, opt)
	}
	return t, err
}

func open(ctx context.Context, path string, opt Options) (*Trace, error) {
	d, err := dsn(path)
	if err != nil {
		return nil, &Error{path, err}
	}
	db, err := sql.Open("sqlite3", d)
	if err != nil {
		return nil, &Error{path, err}
	}
	defer db.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return nil, &Error{path, err}
	}
	r := &reader{ctx: ctx, db: db, size: fi.Size(), t: &Trace{Path: path, Domains: map[uint32]string{}, big: &bigMaps{}}, opt: opt,
		cols: map[string]map[string]bool{}, infos: map[string]*tableInfo{}, procs: &procTable{ids: map[int64]ProcID{}},
		reads: &readLog{}}
	if !opt.SQLiteOnly {
		f, err := openSQLiteFile(path)
		switch {
		case err == nil:
			r.file = f
			defer f.Close()
		case isUnhandled(err):
			r.fileWhy = err.Error()
		default:
			return nil, &Error{path, err}
		}
	}
	// Large tables are scanned through a second, C-level connection many rows per call;
	// database/sql remains the fallback.
	r.uri = strings.TrimSuffix(d, "&_query_only=1")
	if b, err := openBatch(r.uri); err == nil {
		r.batch = b
		defer b.Close()
	}
	if err := r.read(); err != nil {
		if isUnhandled(err) {
			return nil, err
		}
		return nil, &Error{path, sqliteHint(err)}
	}
	r.t.Reads = r.reads.sorted()
	r.t.Warnings = append(r.t.Warnings, r.warns...)
	warnSidecars(r.t, path)
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
	if err := r.readConfig(); err != nil {
		return err
	}
	r.t.Warnings, r.warns = append(r.t.Warnings, r.warns...), nil
	if !r.opt.KernelsOnly {
		if err := r.planAPI(); err != nil {
			return err
		}
	}
	whole := func(f func(*reader) error) func(*reader) (*job, error) {
		return func(*reader) (*job, error) { return &job{tasks: []func(*reader) error{f}}, nil }
	}
	// The kernel and runtime tables (the largest: 2-3 runtime rows per kernel launched in
	// eager traces) are read in rowid parts; NVTX, read whole through database/sql (it has
	// text), starts first so that the parts fill the lanes around it.
	nvtx := func(*reader) (*job, error) {
		return &job{tasks: []func(*reader) error{(*reader).readNVTX}, first: true}, nil
	}
	plans := []func(*reader) (*job, error){
		(*reader).planKernels, whole((*reader).readMemops), whole((*reader).readGraphs),
		nvtx, (*reader).planCalls,
	}
	if r.opt.KernelsOnly {
		plans = plans[:1]
	}
	if err := r.runJobs(plans); err != nil {
		return err
	}
	r.dropSharedCorrelations()
	r.renumberProcs()
	return r.readDevices()
}

// A job reads one table: its tasks run concurrently with other jobs' tasks, each on a
// lane's own connection, then finish (if any) puts the results together.
type job struct {
	tasks  []func(*reader) error
	finish func(*reader) error
	first  bool // a long task: start it before the others
}

// runJobs plans the jobs in order, runs all their tasks on one lane per core (GOMAXPROCS,
// each with its own connection), then the finishes concurrently. Warnings are kept
// in job order whichever lane produced them: a job's plan, tasks, then finish.
func (r *reader) runJobs(plans []func(*reader) (*job, error)) error {
	type planned struct {
		r     reader // the job's own reader: its warnings
		job   *job
		warns [][]error // by task
		errs  []error   // by task
		nplan int       // warnings from the plan
	}
	jobs := make([]*planned, len(plans))
	type taskRef struct{ j, t int }
	var queue []taskRef
	for i, plan := range plans {
		p := &planned{r: *r}
		p.r.warns = nil
		j, err := plan(&p.r)
		if err != nil {
			return err
		}
		if j == nil {
			j = &job{}
		}
		p.job, p.warns, p.errs, p.nplan = j, make([][]error, len(j.tasks)), make([]error, len(j.tasks)), len(p.r.warns)
		jobs[i] = p
		for t := range j.tasks {
			queue = append(queue, taskRef{i, t})
		}
	}
	slices.SortStableFunc(queue, func(a, b taskRef) int {
		return -cmp.Compare(b2i(jobs[a.j].job.first), b2i(jobs[b.j].job.first))
	})
	// Each task borrows a lane; the group runs at most as many tasks as there are lanes,
	// starting them in queue order. A lane per core Go may use (GOMAXPROCS), no fixed
	// count: SQLite steps a lane's rows in C, outside Go's count of running goroutines, so
	// more lanes than GOMAXPROCS would use cores the user did not give.
	nl := max(1, runtime.GOMAXPROCS(0))
	lanes := make(chan reader, nl)
	for i := 0; i < nl; i++ {
		l := *r
		if i > 0 && r.batch != nil {
			b, err := openBatch(r.uri)
			if err != nil {
				return err
			}
			defer b.Close()
			l.batch = b
		}
		lanes <- l
	}
	var g errgroup.Group
	g.SetLimit(nl)
	for _, tr := range queue {
		g.Go(func() error {
			l := <-lanes
			defer func() { lanes <- l }()
			// Every task runs, even after another failed, so that the error returned is
			// the same whichever lane got there first: the first in job order.
			p := jobs[tr.j]
			if p.errs[tr.t] = l.ctx.Err(); p.errs[tr.t] != nil {
				return nil
			}
			t := l
			t.warns, t.cache = nil, procCache{}
			p.errs[tr.t] = p.job.tasks[tr.t](&t)
			p.warns[tr.t] = t.warns
			return nil
		})
	}
	g.Wait()
	// A table the direct reader stopped on comes first: the read is done again through
	// SQLite (Open), which then gives whatever error the others had.
	var first error
	for _, p := range jobs {
		for _, err := range p.errs {
			if err != nil && isUnhandled(err) {
				return err
			}
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return first
	}
	ferrs := make([]error, len(jobs))
	var fg errgroup.Group
	for i, p := range jobs {
		if p.job.finish != nil {
			fg.Go(func() error {
				ferrs[i] = p.job.finish(&p.r)
				return nil
			})
		}
	}
	fg.Wait()
	for _, err := range ferrs {
		if err != nil {
			return err
		}
	}
	for _, p := range jobs {
		r.t.Warnings = append(r.t.Warnings, p.r.warns[:p.nplan]...)
		for _, w := range p.warns {
			r.t.Warnings = append(r.t.Warnings, w...)
		}
		r.t.Warnings = append(r.t.Warnings, p.r.warns[p.nplan:]...)
	}
	return nil
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
	roots := map[string]tableInfo{}
	if rr, err := r.db.QueryContext(r.ctx, `SELECT name, rootpage, COALESCE(sql, '') FROM sqlite_master WHERE type = 'table'`); err == nil {
		for rr.Next() {
			var n string
			var ti tableInfo
			if rr.Scan(&n, &ti.root, &ti.sql) == nil {
				roots[n] = ti
			}
		}
		rr.Close()
	}
	for _, n := range names {
		cols := map[string]bool{}
		ti := roots[n]
		ti.cols = map[string]colInfo{}
		cr, err := r.db.QueryContext(r.ctx, `SELECT name, COALESCE(type, ''), pk, dflt_value IS NOT NULL, hidden FROM pragma_table_xinfo(?)`, n)
		if err != nil {
			return fmt.Errorf("reading columns of %s: %w", n, err)
		}
		field, pks := 0, 0
		var intPK string
		for cr.Next() {
			var c, typ string
			var pk, hidden int
			var dflt bool
			if err := cr.Scan(&c, &typ, &pk, &dflt, &hidden); err != nil {
				cr.Close()
				return err
			}
			if hidden == 0 {
				cols[c] = true
			}
			ci := colInfo{field: field, dflt: dflt, special: hidden != 0}
			switch hidden {
			case 0, 3: // ordinary and stored generated columns have a field each
				field++
			}
			if hidden >= 2 {
				ti.generated = true
			}
			if pk > 0 {
				pks++
				if strings.EqualFold(typ, "INTEGER") {
					intPK = c
				}
			}
			if _, dup := ti.cols[c]; !dup {
				ti.cols[c] = ci
			}
		}
		cr.Close()
		if pks == 1 && intPK != "" {
			ci := ti.cols[intPK]
			ci.alias = true
			ti.cols[intPK] = ci
		}
		r.infos[n] = &ti
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

// procCache remembers the last few processes looked up: rows of a table come from a
// handful of processes, interleaved (one per rank), and the shared table takes a lock.
type procCache struct {
	global [4]int64
	id     [4]ProcID
	n      int // entries in use
	next   int // the entry to replace next
}

// proc returns the ProcID of a globalPid (or globalTid: the thread bits are cleared).
func (r *reader) proc(global int64) ProcID {
	global &^= 0xFFFFFF
	c := &r.cache
	for i := 0; i < c.n; i++ {
		if c.global[i] == global {
			return c.id[i]
		}
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
	c.global[c.next], c.id[c.next] = global, p
	c.next = (c.next + 1) % len(c.global)
	if c.n < len(c.global) {
		c.n++
	}
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
	for i := range r.t.Sites {
		r.t.Sites[i].Proc = remap[r.t.Sites[i].Proc]
	}
	for i := range r.t.Memops {
		r.t.Memops[i].Proc = remap[r.t.Memops[i].Proc]
	}
	for i := range r.t.Graphs {
		r.t.Graphs[i].Proc = remap[r.t.Graphs[i].Proc]
	}
	for i := range r.t.Callers {
		r.t.Callers[i].Proc = remap[r.t.Callers[i].Proc]
	}
	for i := range r.t.Ranges {
		r.t.Ranges[i].Proc = remap[r.t.Ranges[i].Proc]
	}
	// Orders that broke ties by Proc may change: restore them.
	sortKernels(r.t.Kernels, r.t.Sites)
	sortUnlessSorted(r.t.Memops, memopLess)
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

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
