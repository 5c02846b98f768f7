// Package nsys reads Nsight Systems SQLite exports (nsys export --type sqlite) into a
// compact typed model. It opens files read-only and immutable, reads each table it needs in
// one pass, and loads only the strings it references. The large activity tables are
// decoded from the file directly (package sqlitefile, through direct.go), in parallel over
// their leaf pages, into the rows SQLite would give; SQLite (go-sqlite3) reads the schema,
// the strings, the small tables and whatever the direct reader does not handle
// (Trace.Reads says which). It does not classify kernels or find steps; package breakdown
// does that.
//
// The files, in the order a read meets them: trace.go is the model (Trace, Kernel, Site,
// APICall, Range ...); file.go checks the path (CheckFile) and open.go opens it (Open,
// Options) and reads the schema, then the tables as jobs on lanes (lanes.go). A table
// reader says what it reads of its table (query.go: a tableQuery, its columns bound to
// the reader's names for their places), read by the direct reader (direct.go) or through
// SQLite (scan.go, also the rowid parts a large table is read in); every row's
// timestamps go through the dropped-row rules (drop.go). The readers are kernels.go,
// api.go (CUDA API calls), memops.go (memcpy, memset, graph executions), nvtx.go,
// devices.go, config.go and origin.go; intern.go numbers their names and texts, sorted.go
// gives each table its order. big.go maps the largest arrays outside the Go heap
// (Trace.Release), damage.go says what is wrong with a damaged table, check.go checks the
// model (CheckValid), dump.go prints it (Trace.String). run.go merges the traces of the
// files of one run (MergeRun); recorded.go reads nsys's own diagnostics (ReadRecorded).
package nsys
