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
//
// # Input limits
//
// Traces come from others and are not trusted. What stepstat does with inputs past these
// limits (each one line: a warning in the report, or an error with exit status 1 or 2):
//
//   - Timestamps: every `start`/`end` of the kernel, memcpy, memset, graph-trace, runtime
//     and NVTX tables is checked once, as it is read. A row is dropped when a timestamp is
//     not an integer (NULL, text, blob, or a real such as 1e300 or inf), is beyond ±2^62 ns,
//     or ends before it starts, and for GPU activity and API calls when the start or end is
//     0 (a missing value; NVTX rows only when both are). One warning per table names the
//     table, the count and the reasons: `dropped 1 of 40 kernel rows of
//     CUPTI_ACTIVITY_KIND_KERNEL (2.5%): 1 with a missing or non-integer timestamp`. A
//     device id that is not an integer in 0..32767 drops the row the same way.
//   - NVTX ranges never closed (NULL `end`) are kept as open to the end of the capture,
//     unless a later range of the same name (digits aside) and domain starts on the same
//     thread: then the row is bad, and dropped with the table's warning, instead of
//     swallowing every later step of its thread.
//   - Correlation ids: CUDA API calls that reuse the id of an earlier call of their thread
//     (CUPTI gives each call its own) are dropped with a warning; the kernels they launched
//     are not linked to a call.
//   - Devices: at most 1024 devices with GPU activity in one trace (`nsys.MaxDevices`; the
//     cross-rank tables grow with the square of the count). Past it: `TRACE: GPU activity on
//     N devices (ids A to B), more than the 1024 stepstat analyses`, exit 1. `--device`
//     takes -1 (every device) or an id up to 32767 (usage error otherwise: `--device -2`, a
//     typo of 2, no longer means every device).
//   - Rows: arrays are sized from the file (a row takes more than 8 bytes), not from rowids,
//     and by the table's own size: a small table whose rowids have gaps, in a file other
//     tables make large, is read into an array that grows with its rows (was a slot, and
//     a page of memory, per rowid: ~40 KB a row).
//     Nested NVTX ranges cost n log n (depth is capped at 16384); `--nvtx-category` merges
//     nested matching ranges, so memory does not grow with depth x launches (100,000 nested
//     ranges: 0.2 s, 32 MB).
//   - Rules files: at most 256 KiB (compiled rules take ~140 times their text); larger is an
//     error, exit 1.
//   - Flags: `--batch` up to 2^30; `--alpha`, `--confidence` in (0, 1) and `--min-change` a
//     finite, non-negative value (NaN is refused); each `diff` side must name a file; `-o`
//     and `--html` must not name one file. `--min-change` is a percentage (`1%`) or a
//     non-negative time per step (`5us`).
//   - Output paths: only a regular file (or a new path) is replaced, by rename, keeping its
//     mode and, as root, its owner; a character device, pipe or socket is written into; a
//     symlink stays and its target is written.
//   - Signals: SIGINT or SIGTERM removes the run's temporary files and export folder, kills
//     a running `nsys export`, renames no output after the signal, and exits 128 + the
//     signal number (130, 143) with one line on stderr.
//   - WAL and journal: the trace is read immutably. `-wal` and `-journal` are looked for
//     beside the file a symlink names, as SQLite does. A WAL with frames holds committed
//     changes that are not read (open the file once with sqlite3 to apply them); a hot
//     journal holds the rollback of an unfinished write, so the file may hold part of that
//     write (open it once with sqlite3 to roll it back). Either is a warning; a WAL without
//     frames or a zeroed journal header is not.
//   - Damaged files: when the direct reader finds a damaged B-tree (a page met twice,
//     rowids out of order, a cell past its page, ...), SQLite's `PRAGMA quick_check` of
//     that table decides: if it fails too, exit 1 with one line naming the table, the page
//     and quick_check's findings (the same answer on every run); only if it passes is the
//     table read through SQLite, with a warning in every output. String ids a table uses
//     that StringIds lacks (read through SQLite) are an error naming StringIds when its
//     quick_check fails (its B-tree read as it stands drops names: kernels became
//     "other"), else a warning.
//   - Columns: names match in any letter case, as in SQLite; an optional column a table
//     lacks is a warning saying what is lost. A REAL that is a whole number is read as that
//     integer on both readers; any other REAL drops its row, as other bad values do.
//   - Memory follows the pages the file's B-trees reach, not the page count its size or
//     header claims (a sparse file "of 2 TiB": 16 MB). A step's distinct kernel names cost
//     linear time (320,000 distinct attention names).
//   - Files that change while read: an export is opened once, and the direct reader's map
//     and every SQLite connection (all opened at the start, each checked to be the file
//     opened: same device and inode) read that one open file, so a file renamed over while
//     read gives the report of the file opened; renamed over in the moment between its
//     open and its connections' (the name no longer names it), it is opened again, up
//     to three times: 40 of 40 runs under a loop of renames gave one file's report (before,
//     2 of 40 a mix of both). A file truncated while mapped (SIGBUS on
//     the B-tree walk, the rowid bounds or the leaf scan) is one line naming the file
//     ("the file changed while being read"), exit 1.
//   - Non-regular inputs (a FIFO or device named .sqlite or .nsys-rep) are refused before
//     they are opened ("is not a regular file"). SIGINT/SIGTERM during the analysis end the
//     run within a second (checked per device and per range of steps).
//   - Run configuration: knobs are allow-listed by prefix, and credential-shaped parts of
//     their values are replaced by `[redacted]`: URL user:password, webhook URL paths, query
//     parameters (the first one too) and key=value pairs whose key is a credential word
//     (token, sig, password, api-key, ...; quoted as in JSON or not), flags of such a name
//     and their value after a space (`--password VALUE`), the credential after
//     Bearer/Basic/Token, tokens by their prefix (`hf_`, `ghp_`, `sk-`, `glpat-`, `xoxb-`)
//     whatever their letters, 40-character base64 keys holding `/` or `+` (AWS secret
//     keys), runs of 20+ letters and digits that mix case or letters and digits (a 40-hex
//     git hash too), and a *SALT* knob whole. A warning in every output names the redacted
//     knobs. A knob is dropped when a credential word is a whole part of its name
//     (`VLLM_API_KEY`, `..._TOKEN`), not when a part merely holds one
//     (`VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE`, `NCCL_IB_PKEY` are kept).
//   - Step timeline (HTML): each device draws its busiest 32 streams and 8 host threads, the
//     others folded into one row each (said in the subtitle); at most 64 devices.
//   - Speed of light: a floor above the measured median step is a warning naming the likely
//     unit mistake (`--bandwidth` is in GB/s: 4.8 TB/s is 4800); a floor outside 1ns-24h is a
//     usage error.
//   - Text output: all untrusted text (kernel names, NVTX text, GPU names, file names, knob
//     values, flag values in usage errors, the `--progress` line) goes through one escaping
//     function (`render.TerminalSafe`): C0 controls, DEL, C1 controls (also as raw bytes,
//     such as `0x9b`, an 8-bit CSI), bidirectional controls (U+202E and the like), the
//     characters shown as nothing (zero-width space and joiners, BOM, soft hyphen, tag
//     characters, variation selectors: names differing by them print apart) and bytes
//     that are not UTF-8 are printed escaped (`\x1b`, `\x9b`, `\xff`, `\u202e`, `\u200b`), so the text
//     output is valid UTF-8 holding no control character but its own newlines. The HTML
//     pages are valid UTF-8 too (bytes that are not UTF-8 become U+FFFD, as in JSON).
//   - Child output: of the output of `nsys export`, only the last 64 KiB is kept (its last
//     line is quoted when it fails): an `nsys` printing 400 MB before failing costs 38 MB.
//
// # Inputs it survives
//
// Every schema generation in `../shared/traces/public` (nsys 2021 without a metadata table,
// `EXPORT_META_DATA` 2022-2023, `META_DATA_EXPORT` 2023-2026), legacy and modern GPU tables
// (device names follow `TARGET_INFO_GPU.cuDevice`, not `.id`), text inline or through
// `textId`, missing optional tables (warnings, not errors). The input is opened read-only
// and immutable (`file:` URI, `mode=ro&immutable=1`): no journal, WAL or SHM file appears
// beside it and its bytes and mtime do not change. Output files are written under a
// temporary name and renamed, so a failure leaves no half-written report. A missing file, a
// directory, an empty, text, truncated or corrupt file, a gzip-, xz-, zstd- or bzip2-compressed
// export (the message names the command that decompresses it), an SQLite file that is not an nsys export, or an export
// without GPU activity gets one line naming the file and the problem, and exit status 1.
// Arrays are sized from the file's size, never from its rowids alone (a row at rowid 3e9 in
// a small file is read like any other). Kernel names and NVTX text are untrusted: control
// characters are escaped in text output, and everything is escaped in HTML.
package main
