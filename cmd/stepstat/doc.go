// Command stepstat splits the GPU timeline of an Nsight Systems capture of LLM inference
// into steps and breaks each step's time down by category (see 'stepstat help').
//
// # Inputs
//
// A trace is the SQLite file of `nsys export --type sqlite`. A report (.nsys-rep, or
// .qdrep of older versions) is exported first with the nsys on the PATH, as
// `nsys export --type sqlite --output TMP.sqlite --force-overwrite true REPORT`, into a
// temporary directory that is removed afterwards; with --cache the export is kept beside
// the report as NAME.sqlite (written under a temporary name and renamed once complete) and
// reused while it is newer than the report. Without nsys, stepstat says how to export the
// report and exits 1. A report that is in fact an SQLite file is read as an export.
//
// # Guarantees
//
// The input is never changed. Exports are opened read-only and immutable (SQLite's
// mode=ro&immutable=1), so no -journal, -wal or -shm file appears beside them, and their
// bytes and modification time stay as they were, even in a read-only folder. Tested for
// info, report, classify and diff in TestInputUntouched, for the reader in
// nsys.TestOpenLeavesFileAlone, and for mutated inputs in nsys.FuzzOpen.
//
// Output is written whole or not at all. A file given with -o or --html is written under a
// temporary name in its folder (.NAME.tmp*) and renamed over NAME only when everything was
// written; on any failure the temporary file is removed and an older NAME is left intact.
// A report, comparison or classification for stdout is produced in memory and written only
// when complete. Tested in TestOutputAtomic.
//
// A bad input (missing, a directory, not SQLite, truncated or corrupt, not an nsys export,
// no GPU activity, unreadable, not a regular file) gives one line on stderr that names the
// file and the problem, and exit status 1; a usage mistake exits 2. Control characters
// from file names and file contents (kernel names, NVTX text, GPU names) are escaped in
// text output and in error lines; HTML and JSON output escape markup. Tested in
// TestHostileInputs.
package main
