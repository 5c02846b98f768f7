package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/render"
)

// reportExts are the extensions of Nsight Systems reports (.qdrep before 2021.4).
var reportExts = []string{".nsys-rep", ".qdrep"}

// isReport reports whether path names an Nsight Systems report rather than its export.
func isReport(path string) bool {
	for _, ext := range reportExts {
		if strings.HasSuffix(path, ext) {
			return true
		}
	}
	return false
}

// cachePath is where --cache keeps the SQLite export of a report: beside it, with .sqlite
// for the report's extension, where `nsys export` and `nsys stats` put it too.
func cachePath(report string) string {
	for _, ext := range reportExts {
		if s, ok := strings.CutSuffix(report, ext); ok {
			return s + ".sqlite"
		}
	}
	return report + ".sqlite"
}

// readInput reads a trace named on the command line and calls f with it: the trace's
// memory goes back when f returns (openInput, then Trace.Release). f's error is returned
// as it is.
func readInput(ctx context.Context, path string, opt nsys.Options, cache bool, f func(*nsys.Trace) error) error {
	t, err := openInput(ctx, path, opt, cache)
	if err != nil {
		return err
	}
	defer t.Release()
	return f(t)
}

// openInput opens a trace named on the command line: an nsys SQLite export, or an Nsight
// Systems report (.nsys-rep, .qdrep), which it first exports with `nsys export` (see
// exportReport). A report that is in fact an SQLite file is read as an export. Errors name
// path; the trace's Path is path. Its maker releases it (Trace.Release): readInput, or
// readRun for the files of a run.
func openInput(ctx context.Context, path string, opt nsys.Options, cache bool) (*nsys.Trace, error) {
	// STEPSTAT_READER=sqlite reads every table through SQLite, none with the direct
	// reader: the reference the direct reader is checked and measured against.
	if os.Getenv("STEPSTAT_READER") == "sqlite" {
		opt.SQLiteOnly = true
	}
	if !isReport(path) {
		return nsys.Open(ctx, path, opt)
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		// Missing, a directory, a FIFO, empty...: CheckFile says which, naming path,
		// before anything opens it (open(2) of a FIFO blocks).
		if err := nsys.CheckFile(path); err != nil {
			return nil, err
		}
	}
	// One open says both whether it is readable and whether it is in fact an export.
	f, err := nsys.OpenRegular(path)
	if err != nil {
		return nil, &nsys.Error{Path: path, Err: unwrapPath(err)} // unreadable
	}
	sqlite := looksLikeSQLite(f)
	f.Close()
	if sqlite {
		return nsys.Open(ctx, path, opt)
	}
	db, cleanup, err := exportReport(ctx, path, cache)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	t, err := nsys.Open(ctx, db, opt)
	if err != nil {
		var ne *nsys.Error
		if errors.As(err, &ne) && ne.Path == db {
			what := "its SQLite export"
			if cache {
				what += " " + db
			}
			return nil, &nsys.Error{Path: path, Err: fmt.Errorf("%s: %w", what, ne.Err)}
		}
		return nil, err
	}
	t.Path = path
	return t, nil
}

// looksLikeSQLite reports whether the open file f starts with the SQLite header.
func looksLikeSQLite(f *os.File) bool {
	var hdr [16]byte
	_, err := f.ReadAt(hdr[:], 0)
	return err == nil && string(hdr[:]) == "SQLite format 3\x00"
}

// registerCache registers --cache, which keeps the export of a report beside it.
func registerCache(fs *pflag.FlagSet, cache *bool) {
	fs.BoolVar(cache, "cache", false, "for a .nsys-rep input, keep its SQLite export beside it (NAME.sqlite) and reuse it while newer than the report")
	fs.BoolVarP(&verbose, "verbose", "v", false, "say on stderr how each large table was read: decoded from the file directly, or through SQLite and why")
}

// verbose is --verbose of the command running (set when its flags are registered).
var verbose bool

// logReads writes, with --verbose, how the reader read each large table of t.
func logReads(o *stdio, t *nsys.Trace) {
	if !verbose {
		return
	}
	for _, rd := range t.Reads {
		if rd.Direct {
			fmt.Fprintf(o.errOut, "stepstat: %s: %s read directly from the file\n", render.TerminalSafe(t.Path), rd.Table)
		} else {
			fmt.Fprintf(o.errOut, "stepstat: %s: %s read through SQLite: %s\n", render.TerminalSafe(t.Path), rd.Table, render.TerminalSafe(rd.Why))
		}
	}
}

// lookNsys finds the nsys command; tests replace PATH to choose a fake one or none.
func lookNsys() (string, error) { return exec.LookPath("nsys") }

// exportReport exports the report at path to SQLite with `nsys export` and returns the
// export's path and a function that removes what is temporary. The export goes into a new
// temporary directory, or with cache to cachePath(path), reused without running nsys
// while it is newer than the report. Either way nsys writes under a temporary name that
// is renamed when nsys succeeds, so a failed export leaves nothing behind. Without nsys
// on the PATH, the error says how to export the report by hand.
func exportReport(ctx context.Context, path string, cache bool) (string, func(), error) {
	nop := func() {}
	out := cachePath(path)
	if cache {
		rep, err := os.Stat(path)
		if err != nil {
			return "", nop, nsys.CheckFile(path)
		}
		if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() && fi.ModTime().After(rep.ModTime()) {
			return out, nop, nil
		}
	}
	bin, err := lookNsys()
	if err != nil {
		return "", nop, &nsys.Error{Path: path, Err: fmt.Errorf("is an Nsight Systems report; export it first: nsys export --type sqlite %s", shellQuote(path))}
	}
	var tmp string
	cleanup := nop
	if cache {
		f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp*.sqlite")
		if err != nil {
			return "", nop, &nsys.Error{Path: path, Err: fmt.Errorf("exporting to %s: %w", out, unwrapPath(err))}
		}
		tmp = f.Name()
		f.Close()
		defer trackTemp(tmp)()
		defer os.Remove(tmp) // a no-op once renamed
	} else {
		dir, err := os.MkdirTemp("", "stepstat-export-")
		if err != nil {
			return "", nop, &nsys.Error{Path: path, Err: fmt.Errorf("exporting: %w", err)}
		}
		untrack := trackTemp(dir) // a signal removes it, and kills nsys through ctx
		cleanup = func() { os.RemoveAll(dir); untrack() }
		tmp = filepath.Join(dir, filepath.Base(out))
		out = tmp
	}
	arg := path
	if strings.HasPrefix(arg, "-") {
		arg = "./" + arg // not an option of nsys
	}
	log := &tailBuffer{max: maxChildOutput}
	cmd := exec.CommandContext(ctx, bin, "export", "--type", "sqlite", "--output", tmp, "--force-overwrite", "true", arg)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		cleanup()
		if ctx.Err() != nil {
			return "", nop, &nsys.Error{Path: path, Err: ctx.Err()}
		}
		msg := fmt.Sprintf("nsys export failed (%v)", err)
		if line := lastLine(log.String()); line != "" {
			msg += ": " + line
		}
		return "", nop, &nsys.Error{Path: path, Err: errors.New(msg)}
	}
	if fi, err := os.Stat(tmp); err != nil || fi.Size() == 0 {
		cleanup()
		return "", nop, &nsys.Error{Path: path, Err: errors.New("nsys export wrote no SQLite file")}
	}
	if cache {
		if err := os.Rename(tmp, out); err != nil {
			return "", nop, &nsys.Error{Path: path, Err: fmt.Errorf("exporting to %s: %w", out, unwrapPath(err))}
		}
	}
	return out, cleanup, nil
}

// maxChildOutput is how much of a child process's output (nsys export's) is kept: its
// last 64 KiB, where the line that says why it failed is. A child printing without end
// costs no more memory than this.
const maxChildOutput = 64 << 10

// A tailBuffer keeps the last max bytes written to it (between max and 2*max held).
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if len(t.buf)+len(p) > 2*t.max {
		keep := t.max - len(p)
		t.buf = t.buf[:copy(t.buf, t.buf[len(t.buf)-keep:])]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the last max bytes written (or all of them, when fewer).
func (t *tailBuffer) String() string {
	if len(t.buf) > t.max {
		return string(t.buf[len(t.buf)-t.max:])
	}
	return string(t.buf)
}

// lastLine returns the last non-blank line of s, trimmed and cut to 200 bytes.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		n := 200
		for n > 0 && !utf8.RuneStart(l[n]) {
			n--
		}
		l = l[:n] + "..."
	}
	return l
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./,:+@%=-]+$`)

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// unwrapPath drops the operation and path of an *os.PathError or *os.LinkError (the
// caller names the file), keeping the reason.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
