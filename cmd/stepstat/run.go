package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// This file reads a run given as several files (one Nsight Systems export per node or per
// process): the command-line arguments become files, read in parallel and merged onto one
// clock (nsys.MergeRun; breakdown refines the offsets from the collectives), and freed
// once the caller's function has analysed the run (traceRun.read).

// A traceRun is the traces the command line names for one run (as benchfmt.Files is for
// benchmark files): its files, each known by what it is (device and inode), and its name
// in the outputs. Its read opens each file once (nsys.Open) and refuses the same capture
// given twice: one file under two names (a link, a hard link) before anything is read, a
// copy (the same session start, processes and kernels) once read.
type traceRun struct {
	files []string
	name  string
}

// runFiles expands the traces named on the command line into the files of one run: a
// folder stands for the exports in it (*.sqlite, and Nsight Systems reports without an
// export of the same name beside them), in natural name order (rank_2 before rank_10). name
// is the run's name in the outputs: the one file, the one folder, or the files joined by
// "+". A folder of one file is that file. One file named twice, or by two names (a link in
// a folder beside its target: latest.sqlite -> rank0.sqlite), is a usage error.
func runFiles(cmd string, args []string) (*traceRun, error) {
	var files []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil || !fi.IsDir() {
			files = append(files, a) // a missing or bad file: opening it says what is wrong
			continue
		}
		in, err := folderTraces(a)
		if err != nil {
			return nil, err
		}
		files = append(files, in...)
	}
	if len(files) == 0 {
		return nil, usagef(cmd, "need at least one trace (got 0)")
	}
	seen := map[string]bool{}
	ids := map[nsys.FileID]string{}
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			if seen[abs] {
				return nil, usagef(cmd, "%s is given twice (the files of one run are different files)", f)
			}
			seen[abs] = true
		}
		if id, ok := nsys.IdentifyFile(f); ok {
			if first, dup := ids[id]; dup {
				return nil, usagef(cmd, "%s and %s are one file (a link to it, or a hard link): the files of one run are different files", first, f)
			}
			ids[id] = f
		}
	}
	r := &traceRun{files: files}
	switch {
	case len(files) == 1:
		r.name = files[0]
	case len(args) == 1:
		r.name = args[0]
	default:
		r.name = strings.Join(files, "+")
	}
	return r, nil
}

// folderTraces lists the traces of a folder: its .sqlite exports, and its reports
// (.nsys-rep, .qdrep) that have no .sqlite of the same name beside them.
func folderTraces(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, &nsys.Error{Path: dir, Err: unwrapPath(err)}
	}
	have := map[string]bool{}
	for _, e := range ents {
		have[e.Name()] = true
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") {
			continue
		}
		switch {
		case strings.HasSuffix(n, ".sqlite"):
		case isReport(n) && !have[filepath.Base(cachePath(n))]:
		default:
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	if len(out) == 0 {
		return nil, &nsys.Error{Path: dir, Err: errors.New("is a directory, not an nsys SQLite export, and holds none (no .sqlite export or .nsys-rep report in it)")}
	}
	slices.SortFunc(out, naturalCompare)
	return out, nil
}

// naturalCompare orders names with their digit runs compared as numbers: rank_2 before
// rank_10.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			x, y := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(x), len(y)); c != 0 {
				return c
			}
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// read reads the files of the run, in parallel (as many at once as Go may use cores),
// merges them onto one clock (nsys.MergeRun, placed by the session starts and the ends of
// their collectives as cls classifies them), ordered by RANK when every file's environment
// has a distinct one, else as given, and calls fn with the run's trace; every trace it
// read goes back when fn returns (or the read fails). One file is read as readTrace reads
// it. Files that are not one run are refused with the error naming the file, and so is a
// copy of another file of the run (sameCapture).
func (r *traceRun) read(ctx context.Context, o *stdio, showProgress, cache bool, cls *kernelclass.Classifier, fn func(*nsys.Trace) error) error {
	files := r.files
	if len(files) == 1 {
		return readTrace(ctx, files[0], o, showProgress, cache, fn)
	}
	traces := make([]*nsys.Trace, len(files))
	defer func() {
		for _, t := range traces { // MergeRun empties those it merged: then a no-op
			if t != nil {
				t.Release()
			}
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, runtime.GOMAXPROCS(0)))
	for i, f := range files {
		g.Go(func() error {
			t, err := openTrace(gctx, f, o, showProgress, cache)
			traces[i] = t
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := sameCapture(files, traces); err != nil {
		return err
	}
	ranks := map[int]bool{}
	for _, t := range traces {
		if t.Origin.Rank >= 0 {
			ranks[t.Origin.Rank] = true
		}
	}
	in := slices.Clone(traces)
	if len(ranks) == len(in) {
		slices.SortStableFunc(in, func(a, b *nsys.Trace) int { return cmp.Compare(a.Origin.Rank, b.Origin.Rank) })
	}
	m, err := nsys.MergeRun(r.name, in, nsys.MergeOptions{Refine: breakdown.CollectiveOffsets(cls)})
	if err != nil {
		return notOneRun(err)
	}
	defer m.Release()
	return fn(m)
}

// sameCapture refuses two files of a run that hold one capture (a byte copy, or two
// exports of one report): the same session start, processes, kernel count and first and
// last kernels. Ranks of one run differ in their processes (and session starts); merged,
// a copy would be an extra rank whose collectives match at offset 0.
func sameCapture(files []string, traces []*nsys.Trace) error {
	seen := map[string]int{}
	for i, t := range traces {
		id := captureIdentity(t)
		if j, dup := seen[id]; dup {
			return &nsys.Error{Path: files[i], Err: fmt.Errorf("is the same capture as %s (same session start, processes and kernels: a copy): the files of one run are different captures", files[j])}
		}
		seen[id] = i
	}
	return nil
}

// captureIdentity is what tells one capture from another: its session start, its
// processes, its kernel count and its first and last kernels (when, where, which).
func captureIdentity(t *nsys.Trace) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %d %v %d", t.Origin.HasStart, t.Origin.SessionStart, t.Procs, len(t.Kernels))
	for _, i := range []int{0, len(t.Kernels) - 1} {
		if i >= 0 && i < len(t.Kernels) {
			k := t.Kernels[i]
			s := t.SiteOf(k)
			fmt.Fprintf(&b, " %d %d %d %d %q", k.Start, k.End, s.Device, t.Procs[s.Proc], t.Name(k))
		}
	}
	return b.String()
}

// notOneRun adds what to do to an error refusing files that are not one run.
func notOneRun(err error) error {
	if !errors.Is(err, nsys.ErrNotOneRun) {
		return err
	}
	return &detailedError{err: err, details: []string{"the files are analysed as one run (one export per node or process); --apart analyses each on its own"}}
}

// runItems splits one run of a diff side, "A.sqlite+B.sqlite" or a folder, into what
// runFiles expands: a name that exists as it is (a file whose name holds "+") is one item.
func runItems(item string) []string {
	if _, err := os.Stat(item); err == nil || !strings.Contains(item, "+") {
		return []string{item}
	}
	var out []string
	for _, f := range strings.Split(item, "+") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}
