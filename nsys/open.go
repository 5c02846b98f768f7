package nsys

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"github.com/stepstat/stepstat/nsys/sqlitefile"
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

// A reader holds the open database during Open. Each lane has its own copy (its
// warnings, its cache); schema and shared are the same for all.
type reader struct {
	ctx    context.Context
	db     *sql.DB
	t      *Trace
	opt    Options
	warns  []error // this lane's warnings
	cache  procCache
	schema *schema
	shared *shared
}

// A schema is what the reader knows of the file's tables.
type schema struct {
	cols  map[string]map[string]bool // table -> column set
	infos map[string]*tableInfo
	size  int64 // of the file: bounds the rows a table can hold
}

// shared is what the lanes of one read share.
type shared struct {
	api     *apiPlan         // the runtime-table scan, planned before the lanes start
	file    *sqlitefile.File // the file, for the direct reader; nil when it does not handle it
	fileWhy string           // why file is nil
	reads   *readLog
	procs   *procTable
	// strings runs quick_check of StringIds once (checkStrings); stringsCheck is what it
	// found.
	strings      sync.Once
	stringsCheck string
}

// Open reads the export at path. It checks the file first (CheckFile), then reads each
// table it needs in one pass. Missing optional tables become warnings. Errors start with
// the path.
//
// The large activity tables are decoded from the file directly (direct.go) unless
// Options.SQLiteOnly; what the direct reader does not handle is read through SQLite, a
// table at a time when known before reading, else by reading the whole file again
// through SQLite. Trace.Reads says which.
//
// The file is opened once (source.go). A path that names another file by the time
// SQLite's connections open (renamed over just after it was opened) is opened again, up to
// three times, so that the trace is all of one file.
func Open(ctx context.Context, path string, opt Options) (*Trace, error) {
	for try := 1; ; try++ {
		t, err := openOnce(ctx, path, opt)
		if try == 3 || !errors.Is(err, errReplaced) {
			return t, err
		}
	}
}

func openOnce(ctx context.Context, path string, opt Options) (*Trace, error) {
	src, err := openSource(path)
	if err != nil {
		return nil, err
	}
	defer src.close()
	t, err := open(ctx, src, opt)
	var u *sqlitefile.Unhandled
	if err != nil && !opt.SQLiteOnly && errors.As(err, &u) {
		// Damage is not a layout the direct reader does not handle: SQLite's own check
		// of the table decides between an error and SQLite's reading, said (damage.go).
		var warn error
		var td *tableDamage
		if errors.As(err, &td) {
			if warn, err = confirmDamage(ctx, src, td); err != nil {
				return nil, err
			}
		}
		opt.SQLiteOnly, opt.directFailed = true, u.Why
		t, err = open(ctx, src, opt)
		if t != nil && warn != nil {
			t.Warnings = append(t.Warnings, warn)
		}
	}
	return t, err
}

// open reads the export src holds: SQLite's connections and the direct reader's map read
// the one file opened (source.go).
func open(ctx context.Context, src *source, opt Options) (*Trace, error) {
	path := src.path
	db, err := src.db(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	r := &reader{ctx: ctx, db: db, t: &Trace{Path: path, Domains: map[uint32]string{}, big: &bigMaps{}}, opt: opt,
		schema: &schema{cols: map[string]map[string]bool{}, infos: map[string]*tableInfo{}, size: src.size},
		shared: &shared{procs: &procTable{ids: map[int64]ProcID{}}, reads: &readLog{}}}
	if !opt.SQLiteOnly {
		f, err := src.mapFile()
		switch {
		case err == nil:
			r.shared.file = f
			defer f.Close()
		case sqlitefile.IsUnhandled(err):
			r.shared.fileWhy = err.Error()
		default:
			return nil, &Error{path, err}
		}
	}
	if err := r.read(); err != nil {
		if sqlitefile.IsUnhandled(err) {
			return nil, err
		}
		if errors.Is(err, errReplaced) {
			return nil, &Error{path, errReplaced}
		}
		if de := (*DamageError)(nil); errors.As(err, &de) {
			return nil, &Error{path, de}
		}
		return nil, &Error{path, sqliteHint(err)}
	}
	r.t.Reads = r.shared.reads.sorted()
	r.t.Warnings = append(r.t.Warnings, r.warns...)
	r.t.Warnings = append(r.t.Warnings, r.shared.reads.lostWarnings()...)
	warnSidecars(r.t, path)
	return r.t, nil
}

// testMapped, set by tests only, is called once the file is opened and mapped and its
// schema, metadata and configuration read, before its activity tables are.
var testMapped func(path string)

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
	r.readOrigin()
	r.readCapture()
	r.t.Warnings, r.warns = append(r.t.Warnings, r.warns...), nil
	if testMapped != nil {
		testMapped(r.t.Path)
	}
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

func (r *reader) has(table string) bool { _, ok := r.schema.cols[table]; return ok }

// hasCol reports whether table has the column col, matched as SQLite matches column
// names: in any letter case (ASCII), so a correlationId spelled CorrelationID is read.
func (r *reader) hasCol(table, col string) bool { return r.schema.cols[table][strings.ToLower(col)] }

func (r *reader) warnf(format string, args ...any) {
	r.warns = append(r.warns, fmt.Errorf(format, args...))
}

func (r *reader) readTables() error {
	names, err := r.tableNames()
	if err != nil {
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
		ti := roots[n]
		cols, err := r.readColumns(n, &ti)
		if err != nil {
			return err
		}
		r.schema.infos[n] = &ti
		r.schema.cols[n] = cols
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

// tableNames returns the names of the file's tables, sorted.
func (r *reader) tableNames() ([]string, error) {
	rows, err := r.db.QueryContext(r.ctx, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

// readColumns reads the columns of table n into ti.cols, and returns the set of its
// ordinary columns' names (lower case).
func (r *reader) readColumns(n string, ti *tableInfo) (map[string]bool, error) {
	cols := map[string]bool{}
	ti.cols = map[string]colInfo{}
	cr, err := r.db.QueryContext(r.ctx, `SELECT name, COALESCE(type, ''), pk, dflt_value IS NOT NULL, hidden FROM pragma_table_xinfo(?)`, n)
	if err != nil {
		return nil, fmt.Errorf("reading columns of %s: %w", n, err)
	}
	defer cr.Close()
	field, pks := 0, 0
	var intPK string
	for cr.Next() {
		var c, typ string
		var pk, hidden int
		var dflt bool
		if err := cr.Scan(&c, &typ, &pk, &dflt, &hidden); err != nil {
			return nil, err
		}
		c = strings.ToLower(c) // SQLite matches column names in any letter case
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
	if pks == 1 && intPK != "" {
		ci := ti.cols[intPK]
		ci.alias = true
		ti.cols[intPK] = ci
	}
	return cols, nil
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
		// Ids the table uses that StringIds lacks are damage when SQLite's own check of
		// StringIds fails: its B-tree read as it stands drops names (kernels become
		// "other"), and that is an error naming the table; else a warning.
		if check := r.shared.checkStrings(r.ctx, r.db); check != "" {
			return nil, &DamageError{Table: "StringIds", Why: fmt.Sprintf("%d string ids used by %s are not in it", missing, table), Check: check}
		}
		r.warnf("%d string ids used by %s not found in StringIds", missing, table)
	}
	return out, nil
}

// checkStrings runs SQLite's quick_check of StringIds once per read and returns its
// findings ("" when it passes).
func (s *shared) checkStrings(ctx context.Context, db *sql.DB) string {
	s.strings.Do(func() {
		check, err := quickCheck(ctx, db, "StringIds")
		if err != nil {
			check = err.Error() // quick_check could not even run
		}
		s.stringsCheck = check
	})
	return s.stringsCheck
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// colOr returns col when table has it, else the SQL literal def.
func (r *reader) colOr(table, col, def string) string {
	if r.hasCol(table, col) {
		return "COALESCE(" + col + ", " + def + ")"
	}
	return def
}

func (r *reader) require(table string, cols ...string) error {
	for _, c := range cols {
		if !r.hasCol(table, c) {
			return fmt.Errorf("table %s has no column %s (not an nsys export this tool knows)", table, c)
		}
	}
	return nil
}
