package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/render"
)

// A command is one subcommand: its flags are registered by setup, which returns the
// function that runs it.
type command struct {
	name  string
	args  string // e.g. "[flags] TRACE"
	short string
	long  string // shown by 'stepstat help NAME'; the README says the same at more length: keep the two in step
	setup func(fs *pflag.FlagSet) func(ctx context.Context, args []string, o *stdio) error
}

// stdio is the command's view of the process's streams.
type stdio struct {
	in          io.Reader
	out, errOut io.Writer
	phases      func(name string) // STEPSTAT_PHASES: marks the end of a phase; nil when off
}

// phase marks the end of a phase of the command (read, summarize, render) for
// STEPSTAT_PHASES, which prints each phase's wall time on stderr.
func (o *stdio) phase(name string) {
	if o.phases != nil {
		o.phases(name)
	}
}

// A usageError is a mistake in the command line: exit status 2.
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string { return e.msg }

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

var commands []*command

func init() {
	commands = []*command{reportCmd, diffCmd, classifyCmd, infoCmd}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func mainUsage(w io.Writer) {
	fmt.Fprintf(w, "stepstat: per-step breakdown of Nsight Systems traces of LLM inference\n\nUsage:\n\n\tstepstat <command> [flags] [arguments]\n\nCommands:\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "\t%-9s %s\n", c.name, c.short)
	}
	fmt.Fprintf(w, "\t%-9s %s\n\t%-9s %s\n\nRun 'stepstat help <command>' for a command's flags.\n", "help", "show help for a command", "version", "print the version")
}

func newFlagSet(c *command) (*pflag.FlagSet, func(context.Context, []string, *stdio) error) {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SortFlags = false
	runFn := c.setup(fs)
	return fs, runFn
}

func commandUsage(w io.Writer, c *command) {
	fs, _ := newFlagSet(c)
	fmt.Fprintf(w, "usage: stepstat %s %s\n\n%s\n", c.name, c.args, c.short)
	if help := c.long; help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(help))
	}
	if fs.HasFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	}
}

// run is the whole program; it returns the exit status: 0 success, 1 runtime error, 2 usage
// error, 3 a regression (diff --fail-on-regression).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop, caught := catchSignals(stderr)
	defer stop()
	if len(args) == 0 {
		mainUsage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help":
		if len(args) > 1 {
			c := lookup(args[1])
			if c == nil {
				fmt.Fprintf(stderr, "stepstat help: unknown command %s\nRun 'stepstat help' for usage.\n", render.TerminalSafe(fmt.Sprintf("%q", args[1])))
				return 2
			}
			commandUsage(stdout, c)
			return 0
		}
		mainUsage(stdout)
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, versionLine())
		return 0
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "stepstat: unknown command %s\nRun 'stepstat help' for usage.\n", render.TerminalSafe(fmt.Sprintf("%q", name)))
		return 2
	}
	fs, runFn := newFlagSet(c)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			commandUsage(stdout, c)
			return 0
		}
		fmt.Fprintf(stderr, "stepstat %s: %s\nusage: stepstat %s %s\nRun 'stepstat help %s' for details.\n", c.name, render.TerminalSafe(err.Error()), c.name, c.args, c.name)
		return 2
	}
	defer startProfiles()()
	o := &stdio{in: stdin, out: stdout, errOut: stderr}
	if os.Getenv("STEPSTAT_PHASES") != "" {
		last := time.Now()
		o.phases = func(name string) {
			now := time.Now()
			fmt.Fprintf(stderr, "stepstat: %-10s %7.3fs%s\n", name, now.Sub(last).Seconds(), residentNow())
			last = now
		}
	}
	err := runFn(ctx, fs.Args(), o)
	return exitStatus(c, err, caught(), stderr)
}

// startProfiles starts the profiles the environment asks for (STEPSTAT_CPUPROFILE,
// STEPSTAT_MEMPROFILE: files to write them to); the returned func ends and writes them.
func startProfiles() (stop func()) {
	var stops []func()
	if prof := os.Getenv("STEPSTAT_CPUPROFILE"); prof != "" {
		if f, err := os.Create(prof); err == nil {
			stops = append(stops, func() { f.Close() })
			if pprof.StartCPUProfile(f) == nil {
				stops = append(stops, pprof.StopCPUProfile)
			}
		}
	}
	if prof := os.Getenv("STEPSTAT_MEMPROFILE"); prof != "" {
		runtime.MemProfileRate = 64 << 10
		stops = append(stops, func() {
			if f, err := os.Create(prof); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		})
	}
	return func() {
		for i := len(stops) - 1; i >= 0; i-- { // in the order defer would run them
			stops[i]()
		}
	}
}

// exitStatus says how command c's run ended, on stderr, and returns the exit status: 0,
// 1 for an error (its one line and details), 2 for a usage error, 3 for diff's
// regression, 4 for diff --fail-on-regression that cannot decide, 128+signal when a
// signal (sig, 0 for none) stopped it.
func exitStatus(c *command, err error, sig syscall.Signal, stderr io.Writer) int {
	if sig != 0 {
		// Killed by SIGINT or SIGTERM: what the run created is gone (catchSignals), no
		// output was renamed into place after the signal; say so and exit 128+signal.
		fmt.Fprintf(stderr, "stepstat: interrupted by %s; temporary files removed\n", signalName(sig))
		return 128 + int(sig)
	}
	if err == nil {
		return 0
	}
	var re *regressionError
	if errors.As(err, &re) { // the output is written; the verdict is the exit status
		fmt.Fprintf(stderr, "stepstat %s: %s\n", c.name, oneLine(re.Error()))
		return 3
	}
	var ue4 *undecidedError
	if errors.As(err, &ue4) { // the output is written; the gate could not decide
		fmt.Fprintf(stderr, "stepstat %s: %s\n", c.name, oneLine(ue4.Error()))
		return 4
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "stepstat %s: %s\nusage: stepstat %s %s\nRun 'stepstat help %s' for details.\n", c.name, render.TerminalSafe(ue.msg), c.name, c.args, c.name)
		return 2
	}
	fmt.Fprintf(stderr, "stepstat: %s\n", oneLine(err.Error()))
	var de *detailedError
	if errors.As(err, &de) { // what the user can do about it, indented under the one line
		for _, d := range de.details {
			fmt.Fprintf(stderr, "  %s\n", oneLine(d))
		}
	}
	return 1
}

// A detailedError is an error of one line and lines that explain it (printed indented
// under it).
type detailedError struct {
	err     error
	details []string
}

func (e *detailedError) Error() string { return e.err.Error() }
func (e *detailedError) Unwrap() error { return e.err }

// oneLine keeps an error message on one line, whatever a wrapped error put into it, and
// escapes control characters (from file names, file contents or flag values) through
// render.TerminalSafe, the one escaping path, so that they cannot drive the terminal. Every
// error and usage line goes through it.
func oneLine(s string) string {
	return render.TerminalSafe(strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " "))
}

// needOne checks that exactly one trace argument was given.
func needOne(cmd string, args []string) (string, error) {
	if len(args) != 1 {
		return "", usagef(cmd, "need exactly one trace (got %d)", len(args))
	}
	return args[0], nil
}

// signalName names a signal as a user sent it: "SIGINT (Ctrl-C)", "SIGTERM"; Go's own
// names read "interrupted by interrupt".
func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT (Ctrl-C)"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	if n, ok := s.(syscall.Signal); ok {
		return fmt.Sprintf("signal %d (%s)", int(n), s)
	}
	return s.String()
}

// residentNow returns, for STEPSTAT_PHASES, the process's resident memory now as
// " heap N MB, file N MB" (RssAnon: Go's heap and the arrays mapped outside it; RssFile:
// mapped file pages, the trace's and the executable's), or "" where /proc does not say.
func residentNow() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	var anon, file int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "RssAnon:":
			anon = v
		case "RssFile:":
			file = v
		}
	}
	if anon == 0 {
		return ""
	}
	return fmt.Sprintf("   heap %5d MB, file %4d MB", anon>>10, file>>10)
}
