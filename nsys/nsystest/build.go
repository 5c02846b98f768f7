// Package nsystest builds Nsight Systems SQLite exports for tests from readable txtar
// fixtures, using the real DDL of three export generations (ddl/*.sql, copied verbatim
// from public exports). It is for tests only: it writes with go-sqlite3 and fails the
// test on any mistake in the fixture.
//
// A fixture is a txtar archive whose comment describes the case and whose sections are:
//
//	-- schema --   legacy | export_meta_data | meta_data_export (default meta_data_export)
//	-- meta --     name value: rows added to the metadata table, replacing the defaults
//	               (EXPORT_PRODUCT_VERSION and EXPORT_SCHEMA_VERSION of the DDL's source)
//	-- strings --  id value (StringIds; the value is the rest of the line)
//	-- kernels --  start end device stream corr nameId [globalPid]
//	-- memcpy --   start end device stream corr bytes copyKind [globalPid]
//	-- memset --   start end device stream corr bytes [globalPid]
//	-- runtime --  start end globalTid corr nameId
//	-- nvtx --     start end eventType text textId globalTid domainId
//	-- gpus --     id cuDevice name [smCount totalMemory memoryBandwidth]
//	-- graphs --   start end device stream corr [globalPid] (creates CUPTI_ACTIVITY_KIND_GRAPH_TRACE)
//	-- drop --     names of tables to leave out
//	-- sql --      statements run after the tables are created and before rows are inserted
//	-- want --     the expected result; ignored here
//
// Fields are separated by tabs (then a field may hold spaces) or, in a line without tabs,
// by spaces. A field that starts with a double quote is a Go string literal; NULL stands
// for SQL NULL. Blank lines and lines
// starting with # are skipped. Columns a section does not give are filled with NULL when
// nullable, else with 0 (or "" for TEXT columns). Every table of the schema is created,
// empty or not, unless dropped.
package nsystest

import (
	"database/sql"
	"embed"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
	"golang.org/x/tools/txtar"
)

//go:embed ddl/*.sql
var ddl embed.FS

// A schema is one export generation.
type schema struct {
	file      string
	metaTable string            // "" for legacy
	meta      map[string]string // default metadata rows
}

var schemas = map[string]schema{
	"legacy": {file: "ddl/legacy.sql"},
	"export_meta_data": {file: "ddl/export_meta_data.sql", metaTable: "EXPORT_META_DATA",
		meta: map[string]string{"EXPORT_PRODUCT_VERSION": "2023.2.3.0", "EXPORT_SCHEMA_VERSION": "3.1.7"}},
	"meta_data_export": {file: "ddl/meta_data_export.sql", metaTable: "META_DATA_EXPORT",
		meta: map[string]string{"EXPORT_PRODUCT_VERSION": "2026.3.1.157", "EXPORT_SCHEMA_VERSION": "3.27.0"}},
}

// Schemas lists the schema names a fixture may ask for.
func Schemas() []string {
	var s []string
	for k := range schemas {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// Build writes the export described by ar into t.TempDir() and returns its path.
func Build(t testing.TB, ar *txtar.Archive) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.sqlite")
	Write(t, ar, path)
	return path
}

// Write writes the export described by ar to path, which must not exist yet.
func Write(t testing.TB, ar *txtar.Archive, path string) {
	t.Helper()
	if err := write(ar, path); err != nil {
		t.Fatalf("nsystest: building %s: %v", path, err)
	}
}

// Parse reads a fixture file. It fails the test when the file cannot be read.
func Parse(t testing.TB, file string) *txtar.Archive {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatalf("nsystest: %v", err)
	}
	return ar
}

// Section returns the data of the named section and whether it is present.
func Section(ar *txtar.Archive, name string) (string, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// A section maps a fixture section to a table: its positional fields name columns.
type section struct {
	table    string
	cols     []string
	required int // fields every row must give
}

var sections = map[string]section{
	"kernels": {"CUPTI_ACTIVITY_KIND_KERNEL", []string{"start", "end", "deviceId", "streamId", "correlationId", "demangledName", "globalPid"}, 6},
	"memcpy":  {"CUPTI_ACTIVITY_KIND_MEMCPY", []string{"start", "end", "deviceId", "streamId", "correlationId", "bytes", "copyKind", "globalPid"}, 7},
	"memset":  {"CUPTI_ACTIVITY_KIND_MEMSET", []string{"start", "end", "deviceId", "streamId", "correlationId", "bytes", "globalPid"}, 6},
	"runtime": {"CUPTI_ACTIVITY_KIND_RUNTIME", []string{"start", "end", "globalTid", "correlationId", "nameId"}, 5},
	"nvtx":    {"NVTX_EVENTS", []string{"start", "end", "eventType", "text", "textId", "globalTid", "domainId"}, 7},
	"graphs":  {"CUPTI_ACTIVITY_KIND_GRAPH_TRACE", []string{"start", "end", "deviceId", "streamId", "correlationId", "globalPid"}, 5},
}

// known lists every section name; the others are handled apart from sections.
var known = map[string]bool{"schema": true, "meta": true, "strings": true, "gpus": true, "drop": true,
	"sql": true, "want": true, "kernels": true, "memcpy": true, "memset": true, "runtime": true, "nvtx": true, "graphs": true}

func write(ar *txtar.Archive, path string) error {
	name, sc, err := archiveSchema(ar)
	if err != nil {
		return err
	}
	db, err := createTables(ar, path, sc)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	b := &builder{tx: tx, cols: map[string][]column{}}
	if err := b.meta(ar, name, sc); err != nil {
		return err
	}
	if err := b.fill(ar, name); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return db.Close()
}

// archiveSchema checks the archive's sections and returns the schema it names.
func archiveSchema(ar *txtar.Archive) (string, schema, error) {
	seen := map[string]bool{}
	for _, f := range ar.Files {
		if !known[f.Name] {
			return "", schema{}, fmt.Errorf("unknown section %q", f.Name)
		}
		if seen[f.Name] {
			return "", schema{}, fmt.Errorf("section %q given twice", f.Name)
		}
		seen[f.Name] = true
	}
	name := "meta_data_export"
	if s, ok := Section(ar, "schema"); ok {
		name = strings.TrimSpace(s)
	}
	sc, ok := schemas[name]
	if !ok {
		return "", schema{}, fmt.Errorf("unknown schema %q (want one of %s)", name, strings.Join(Schemas(), ", "))
	}
	return name, sc, nil
}

// createTables creates the file at path with the schema's tables, the graph table when
// the archive has graphs, less the tables of section drop, plus section sql.
func createTables(ar *txtar.Archive, path string, sc schema) (*sql.DB, error) {
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("%s already exists", path)
	}
	// A file: URI, so that a path holding "?" or "#" is taken as a file name.
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	db, err := sql.Open("sqlite3", u.String()+"?mode=rwc")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := createStatements(db, ar, sc); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func createStatements(db *sql.DB, ar *txtar.Archive, sc schema) error {
	text, err := ddl.ReadFile(sc.file)
	if err != nil {
		return err
	}
	stmts := []string{string(text)}
	if _, ok := Section(ar, "graphs"); ok {
		g, err := ddl.ReadFile("ddl/graph_trace.sql")
		if err != nil {
			return err
		}
		stmts = append(stmts, string(g))
	}
	drop, _ := Section(ar, "drop")
	for _, tb := range strings.Fields(drop) {
		stmts = append(stmts, `DROP TABLE "`+tb+`"`)
	}
	if s, ok := Section(ar, "sql"); ok {
		stmts = append(stmts, s)
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("creating tables: %w", err)
		}
	}
	return nil
}

// meta fills the schema's metadata table: its defaults, or section meta.
func (b *builder) meta(ar *txtar.Archive, name string, sc schema) error {
	drop, _ := Section(ar, "drop")
	meta := map[string]string{}
	for k, v := range sc.meta {
		meta[k] = v
	}
	if s, ok := Section(ar, "meta"); ok {
		if sc.metaTable == "" {
			return fmt.Errorf("schema %s has no metadata table", name)
		}
		rows, err := rowsOf(s, true)
		if err != nil {
			return fmt.Errorf("section meta: %w", err)
		}
		meta = map[string]string{}
		for _, r := range rows {
			if len(r) != 2 || r[0] == nil || r[1] == nil {
				return fmt.Errorf("section meta: want name value, got %q", deref(r))
			}
			meta[*r[0]] = *r[1]
		}
	}
	if sc.metaTable != "" && !slices.Contains(strings.Fields(drop), sc.metaTable) {
		keys := make([]string, 0, len(meta))
		for k := range meta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := b.insert(sc.metaTable, []string{"name", "value"}, []*string{&k, ptr(meta[k])}); err != nil {
				return err
			}
		}
	}

	return nil
}

// fill fills the string table, the GPUs and the activity tables from their sections.
func (b *builder) fill(ar *txtar.Archive, name string) error {
	if s, ok := Section(ar, "strings"); ok {
		rows, err := rowsOf(s, true)
		if err != nil {
			return fmt.Errorf("section strings: %w", err)
		}
		for _, r := range rows {
			if len(r) != 2 {
				return fmt.Errorf("section strings: want id value, got %q", deref(r))
			}
			if err := b.insert("StringIds", []string{"id", "value"}, r); err != nil {
				return err
			}
		}
	}

	if s, ok := Section(ar, "gpus"); ok {
		if err := b.gpus(name, s); err != nil {
			return fmt.Errorf("section gpus: %w", err)
		}
	}

	for _, sn := range []string{"kernels", "memcpy", "memset", "runtime", "nvtx", "graphs"} {
		s, ok := Section(ar, sn)
		if !ok {
			continue
		}
		sec := sections[sn]
		rows, err := rowsOf(s, false)
		if err != nil {
			return fmt.Errorf("section %s: %w", sn, err)
		}
		for i, r := range rows {
			if len(r) < sec.required || len(r) > len(sec.cols) {
				return fmt.Errorf("section %s, row %d: want %d to %d fields (%s), got %d",
					sn, i+1, sec.required, len(sec.cols), strings.Join(sec.cols, " "), len(r))
			}
			cols := sec.cols[:len(r)]
			if sn == "kernels" {
				// shortName is NOT NULL; real exports repeat demangledName for plain names.
				cols = append(slices.Clone(cols), "shortName")
				r = append(r, r[5])
			}
			if err := b.insert(sec.table, cols, r); err != nil {
				return fmt.Errorf("section %s, row %d: %w", sn, i+1, err)
			}
		}
	}
	return nil
}

// gpus fills the GPU tables of the schema: TARGET_INFO_GPU (id, cuDevice) for modern
// exports, TARGET_INFO_GPU (deviceId = id) plus TARGET_INFO_CUDA_GPU (deviceId = cuDevice)
// for legacy ones.
func (b *builder) gpus(schema, s string) error {
	rows, err := rowsOf(s, false)
	if err != nil {
		return err
	}
	for i, r := range rows {
		if len(r) < 3 || len(r) > 6 {
			return fmt.Errorf("row %d: want id cuDevice name [smCount totalMemory memoryBandwidth], got %d fields", i+1, len(r))
		}
		for len(r) < 6 {
			r = append(r, nil)
		}
		if schema == "legacy" {
			if err := b.insert("TARGET_INFO_GPU", []string{"deviceId", "name"}, []*string{r[0], r[2]}); err != nil {
				return err
			}
			if err := b.insert("TARGET_INFO_CUDA_GPU",
				[]string{"deviceId", "name", "numMultiprocessors", "globalMemorySize", "globalMemoryBandwidth"},
				[]*string{r[1], r[2], r[3], r[4], r[5]}); err != nil {
				return err
			}
			continue
		}
		if err := b.insert("TARGET_INFO_GPU", []string{"id", "cuDevice", "name", "smCount", "totalMemory", "memoryBandwidth"}, r); err != nil {
			return err
		}
	}
	return nil
}

type column struct {
	name    string
	typ     string
	notNull bool
}

type builder struct {
	tx   *sql.Tx
	cols map[string][]column
}

func (b *builder) columns(table string) ([]column, error) {
	if c, ok := b.cols[table]; ok {
		return c, nil
	}
	rows, err := b.tx.Query(`SELECT name, type, "notnull" FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.typ, &c.notNull); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no table %s (dropped, or not in this schema)", table)
	}
	b.cols[table] = cols
	return cols, nil
}

// insert adds one row: the given columns get the given values (nil = NULL), the other
// NOT NULL columns a zero value.
func (b *builder) insert(table string, names []string, vals []*string) error {
	cols, err := b.columns(table)
	if err != nil {
		return err
	}
	given := map[string]*string{}
	for i, n := range names {
		given[n] = vals[i]
	}
	var qcols, marks []string
	var args []any
	for _, c := range cols {
		v, ok := given[c.name]
		if !ok && !c.notNull {
			continue
		}
		delete(given, c.name)
		qcols = append(qcols, `"`+c.name+`"`)
		marks = append(marks, "?")
		switch {
		case ok && v == nil:
			args = append(args, nil)
		case ok && strings.EqualFold(c.typ, "TEXT"):
			args = append(args, *v)
		case ok:
			n, err := strconv.ParseInt(strings.ReplaceAll(*v, "_", ""), 10, 64)
			if err != nil {
				return fmt.Errorf("column %s.%s: %q is not an integer", table, c.name, *v)
			}
			args = append(args, n)
		case strings.EqualFold(c.typ, "TEXT"):
			args = append(args, "")
		default:
			args = append(args, 0)
		}
	}
	for n := range given {
		return fmt.Errorf("table %s has no column %s", table, n)
	}
	q := `INSERT INTO "` + table + `" (` + strings.Join(qcols, ", ") + `) VALUES (` + strings.Join(marks, ", ") + `)`
	if _, err := b.tx.Exec(q, args...); err != nil {
		return fmt.Errorf("inserting into %s: %w", table, err)
	}
	return nil
}

// rowsOf splits a section into rows of fields. With rest, a row has two fields: the first
// word and the rest of the line.
func rowsOf(s string, rest bool) ([][]*string, error) {
	var rows [][]*string
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r []*string
		if rest {
			k, v, _ := strings.Cut(strings.ReplaceAll(line, "\t", " "), " ")
			v = strings.TrimSpace(v)
			if strings.HasPrefix(v, `"`) {
				u, err := strconv.Unquote(v)
				if err != nil {
					return nil, fmt.Errorf("line %d: bad quoted string %s", i+1, v)
				}
				v = u
			}
			r = []*string{ptr(k), ptr(v)}
		} else if strings.Contains(line, "\t") {
			for _, f := range strings.Split(line, "\t") {
				if f = strings.TrimSpace(f); f == "" {
					continue
				}
				v, err := field(f)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", i+1, err)
				}
				r = append(r, v)
			}
		} else {
			for line != "" {
				end := strings.IndexAny(line, " ")
				if line[0] == '"' {
					q, err := strconv.QuotedPrefix(line)
					if err != nil {
						return nil, fmt.Errorf("line %d: bad quoted string in %s", i+1, line)
					}
					end = len(q)
				} else if end < 0 {
					end = len(line)
				}
				v, err := field(line[:end])
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", i+1, err)
				}
				r = append(r, v)
				line = strings.TrimLeft(line[end:], " ")
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// field decodes one field: NULL is nil, a Go string literal is unquoted.
func field(f string) (*string, error) {
	switch {
	case f == "NULL":
		return nil, nil
	case strings.HasPrefix(f, `"`):
		u, err := strconv.Unquote(f)
		if err != nil {
			return nil, fmt.Errorf("bad quoted string %s", f)
		}
		return &u, nil
	}
	return &f, nil
}

func ptr(s string) *string { return &s }

func deref(r []*string) []string {
	out := make([]string, len(r))
	for i, p := range r {
		if p == nil {
			out[i] = "NULL"
		} else {
			out[i] = *p
		}
	}
	return out
}
