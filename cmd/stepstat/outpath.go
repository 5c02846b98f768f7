package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// outputTarget returns the path a report for path is to be written at, and what is there
// now (nil: nothing). A symlink is followed to its target, so that the link stays and
// its target gets the report; a dangling one names the file to create.
func outputTarget(path string) (string, fs.FileInfo, error) {
	target := path
	for range 40 { // as the kernel's limit of links followed
		fi, err := os.Lstat(target)
		if errors.Is(err, fs.ErrNotExist) {
			return target, nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return target, fi, nil
		}
		link, err := os.Readlink(target)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(target), link)
		}
		target = link
	}
	return "", nil, syscall.ELOOP
}

// writeInto writes the output into what is at path (a character device such as
// /dev/null, a named pipe, a socket), without replacing it: renaming a file over
// /dev/full as root would destroy the device. The output is made first, so that a
// failure writes nothing.
func writeInto(path string, fn func(w io.Writer) error, fail func(error) error) error {
	var buf bytes.Buffer
	if err := fn(&buf); err != nil {
		return fail(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fail(err)
	}
	w := bufio.NewWriter(f)
	if _, err := w.Write(buf.Bytes()); err != nil {
		f.Close()
		return fail(err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	return nil
}

// keepMode gives the temporary file the mode of the file it replaces (and, as root, its
// owner and group), or 0644 for a new file.
func keepMode(tmp *os.File, old fs.FileInfo) error {
	if old == nil {
		return tmp.Chmod(0o644)
	}
	if st, ok := old.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	return tmp.Chmod(old.Mode().Perm() | old.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
}

// sameOutputs refuses two outputs at one path: the second would replace the first.
func sameOutputs(cmd string, outputs []string) error {
	for i, a := range outputs {
		if a == "" || a == "-" {
			continue
		}
		for _, b := range outputs[i+1:] {
			if b == "" || b == "-" {
				continue
			}
			same := filepath.Clean(a) == filepath.Clean(b)
			if fa, err := os.Stat(a); err == nil {
				if fb, err := os.Stat(b); err == nil && os.SameFile(fa, fb) {
					same = true
				}
			}
			if same {
				return usagef(cmd, "-o and --html name one file (%s); the second would replace the first", a)
			}
		}
	}
	return nil
}

// Temporary files the run has made and not yet renamed or removed: a signal removes them
// before the process exits.
var temps = struct {
	sync.Mutex
	paths map[string]bool
}{paths: map[string]bool{}}

// trackTemp records a temporary path; the returned func forgets it.
func trackTemp(path string) func() {
	temps.Lock()
	temps.paths[path] = true
	temps.Unlock()
	return func() {
		temps.Lock()
		delete(temps.paths, path)
		temps.Unlock()
	}
}

// removeTemps removes every temporary path still recorded (files, or export folders).
func removeTemps() {
	temps.Lock()
	defer temps.Unlock()
	for p := range temps.paths {
		os.RemoveAll(p)
		delete(temps.paths, p)
	}
}

// signalGrace is how long a run has to return after SIGINT or SIGTERM before
// catchSignals ends the process.
const signalGrace = 800 * time.Millisecond

// exitNow ends the process (os.Exit; main is the only other caller).
var exitNow = os.Exit

// signalled is set once a run caught SIGINT or SIGTERM: no output is renamed into place
// after it.
var signalled atomic.Bool

// catchSignals makes SIGINT and SIGTERM cancel the returned context (which kills a child
// nsys export through exec.CommandContext, and stops the reader), remove the temporary
// files and export folders the run has made, and stop outputs being renamed into place;
// caught reports the signal (0: none). stop ends the catching. A run that has not
// returned signalGrace after the signal (blocked in a system call, or in a stage that
// checks ctx rarely) is ended there: its temporaries removed, the interrupted line on
// stderr, exit 128+signal, as run itself would; its outputs were never renamed into place.
func catchSignals(stderr io.Writer) (ctx context.Context, stop func(), caught func() syscall.Signal) {
	ctx, cancel := context.WithCancel(context.Background())
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var got atomic.Int32
	go func() {
		select {
		case s := <-c:
			if ss, ok := s.(syscall.Signal); ok {
				got.Store(int32(ss))
			}
			signalled.Store(true)
			cancel()
			removeTemps()
			select {
			case <-done:
			case <-time.After(signalGrace):
				removeTemps()
				fmt.Fprintf(stderr, "stepstat: interrupted by %s; temporary files removed\n", signalName(s))
				exitNow(128 + int(got.Load()))
			}
		case <-done:
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			signal.Stop(c)
			close(done)
			cancel()
		})
	}
	return ctx, stop, func() syscall.Signal {
		if s := got.Load(); s != 0 {
			removeTemps() // a temporary made after the signal was handled
			return syscall.Signal(s)
		}
		return 0
	}
}

// writeOutput writes through fn to path ("" or "-" is stdout). Nothing is written
// half-way: a file is written under a temporary name in the same folder (".NAME.tmp*"),
// flushed, and renamed over path only when fn and every write succeeded, so a failure
// leaves no partial report and an earlier file at path intact, and the temporary file is
// removed; stdout gets the output only once fn has succeeded.
func writeOutput(path string, stdout io.Writer, fn func(w io.Writer) error) error {
	if path == "" || path == "-" {
		var buf bytes.Buffer
		if err := fn(&buf); err != nil {
			return err
		}
		if signalled.Load() {
			return context.Canceled // nothing written after SIGINT or SIGTERM
		}
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	fail := func(err error) error { return fmt.Errorf("writing %s: %w", path, unwrapPath(err)) }
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fail(errors.New("is a directory"))
	}
	// What is at the path decides how it is written: a device, a pipe or a socket is
	// written into, a symlink is followed to its target, a regular file keeps its mode.
	target, old, err := outputTarget(path)
	if err != nil {
		return fail(err)
	}
	if old != nil && !old.Mode().IsRegular() {
		return writeInto(target, fn, fail)
	}
	path = target
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fail(err)
	}
	untrack := trackTemp(tmp.Name())
	defer untrack()
	defer os.Remove(tmp.Name()) // a no-op once renamed
	bw := bufio.NewWriter(tmp)
	if err := fn(bw); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := keepMode(tmp, old); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if signalled.Load() {
		return fail(errors.New("interrupted"))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	return nil
}

// checkOutputs refuses output paths that name one of the inputs: writing the report
// there would replace the trace; and two outputs at one path (-o X --html X), of which the
// second would replace the first.
func checkOutputs(cmd string, outputs []string, inputs []string) error {
	if err := sameOutputs(cmd, outputs); err != nil {
		return err
	}
	for _, o := range outputs {
		if o == "" || o == "-" {
			continue
		}
		ofi, err := os.Stat(o)
		if err != nil {
			continue // does not exist yet: cannot be an input
		}
		for _, in := range inputs {
			if ifi, err := os.Stat(in); err == nil && os.SameFile(ofi, ifi) {
				return usagef(cmd, "output %s is the input trace; choose another file", o)
			}
		}
	}
	return nil
}
