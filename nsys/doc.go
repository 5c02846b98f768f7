// Package nsys reads Nsight Systems SQLite exports (nsys export --type sqlite) into a
// compact typed model. It opens files read-only and immutable, reads each table it needs in
// one pass, and loads only the strings it references. The large activity tables are
// decoded from the file directly (package sqlitefile, through direct.go), in parallel over
// their leaf pages, into the rows SQLite would give; SQLite (go-sqlite3) reads the schema,
// the strings, the small tables and whatever the direct reader does not handle
// (Trace.Reads says which). It does not classify kernels or find steps; package breakdown
// does that.
package nsys
