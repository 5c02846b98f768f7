package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/nsys"
)

var diffCmd = &command{
	name:  "diff",
	args:  "[flags] [label=]BASE[,BASE2...] [label=]NEW[,NEW2...]",
	short: "compare two traces (or sets of repeated runs) per category, with significance",
	long: `
Compares the steps of one phase (decode unless --phase says otherwise) of two traces, or
of two sets of repeated runs (comma-separated files per side, optionally labelled
label=files). A run of several files (one per node or process, as report reads them) is a
folder or its files joined by "+": diff base=DIR new=DIR, diff base=a0.sqlite+a1.sqlite
new=b0.sqlite+b1.sqlite, or repeated runs of them: base=runA1/,runA2/ new=runB1/,runB2/.
A side or a run that exists as given is one file, whatever "=", "," or "+" its name holds.
Files given as runs (commas) that ran at the same time on other RANKs or devices are
ranks of one run: a warning says so and how to join them. Sides captured with other nsys
options (META_DATA_CAPTURE: traces, sampling, backtraces, graph tracing) get a warning
naming each difference: the profiler's own overhead differs.
It leads with what changed: the change of the mean per step of the whole step and of each
category (the means add up to the mean step), tested by a permutation
test on the difference of means, biggest change first, with the ranks whose change
differs from the pooled one, and a reason when the median disagrees; with 2+ GPUs, each
rank's wait and transfer in matched collectives and the straggler, before and after.
Then benchstat's table per row: median per step with a confidence interval on each side,
the change, and a Mann-Whitney U p-value; and the means table. A change smaller than
--min-change (1% of the base mean step by default, or a time per step such as 5us) gets
no verdict (~). A category that one side cannot measure (CUDA graphs traced at graph
level, a rank missing or without steps) is not comparable, with the reason. Every
warning of either capture comes first. With 2+ GPUs, ranks are not pooled: one sample per
aligned step (the step on the slowest rank, as ranks run in lock step), so n counts
aligned steps, and each rank has its own rows.

--fail-on-regression (for CI): exit status 3 when the new side is significantly slower,
the mean step (per token where both sides know their tokens) up by at least --min-change
at p < --alpha; 4 when the diff cannot decide (too few samples a side for the test to
reach --alpha, as --unit run with fewer than 4 runs a side or a phase with one step, or a
headline that one side cannot measure), with one line saying why; 0 otherwise. Exit
status 1 (an error) and 2 (a usage mistake) keep their meaning.

Caveats: consecutive steps of one run are not independent samples (step time drifts with
KV-cache length and batch makeup), so with hundreds of steps small shifts test as
significant: read the change per step. With 4 or more runs per side, --unit run takes each
run's mean (and median) per step as one sample; with fewer, the test cannot reach
p < 0.05 and the diff says so first and gives no verdict. Several categories are tested at
once: expect about one false positive per 1/alpha rows.`,
	setup: func(fs *pflag.FlagSet) func(context.Context, []string, *stdio) error {
		f := &diffFlags{}
		f.register(fs)
		return func(ctx context.Context, args []string, o *stdio) error { return f.run(ctx, fs, args, o) }
	},
}

// diffFlags are diff's flags.
type diffFlags struct {
	af                   analysisFlags
	format, output, html *string
	alpha, conf          *float64
	minChange, unit      *string
	tokens               *string
	failOnRegression     *bool
	form                 format[*diffOutput] // --format's, once checked
	minFrac, minNS       float64             // --min-change's, once checked: of the base mean step, or ns
	runs                 [2][]*traceRun      // each side's runs, once checked
	tok                  [2]int              // --tokens', once checked: each side's tokens (0: not given)
}

func (f *diffFlags) register(fs *pflag.FlagSet) {
	f.format = diffFormats.flag(fs)
	f.output = fs.StringP("output", "o", "", "write to this file instead of stdout")
	f.html = fs.String("html", "", "also write the HTML comparison to this file")
	f.alpha = fs.Float64("alpha", 0.05, "significance level of both tests (permutation test of the means, Mann-Whitney U of the medians)")
	f.conf = fs.Float64("confidence", 0.95, "confidence level of the ± intervals")
	f.minChange = fs.String("min-change", "1%", "changes per step smaller than this get no verdict (~) whatever the p-value: a percentage of the base side's mean step (1%) or a time per step (5us)")
	f.tokens = fs.String("tokens", "", "BASE,NEW: the tokens each side's run generated (one run a side), for time per token; the verdict is then per token. vLLM's step NVTX gives them without it")
	f.failOnRegression = fs.Bool("fail-on-regression", false, "exit 3 when the new side is significantly slower: the mean step (per token where both sides know their tokens) up by at least --min-change at p < --alpha; 4 when it cannot decide (too few samples); 0 otherwise (1 and 2 keep their meaning: error, usage)")
	f.unit = fs.String("unit", "step", "sample unit: step (every step is a sample) or run (each file: its mean per step, its median per step)")
	f.af.register(fs)
	// The speed-of-light flags are report's: registered so that giving one says so
	// (check), hidden so that diff's help does not offer them.
	for _, n := range reportOnlyFlags {
		fs.MarkHidden(n)
	}
}

func (f *diffFlags) run(ctx context.Context, fs *pflag.FlagSet, args []string, o *stdio) error {
	if err := f.check(fs, args, o); err != nil {
		return err
	}
	opt, err := f.af.options("diff")
	if err != nil {
		return err
	}
	phase := opt.Phase.Phase()
	sides, err := f.readSides(ctx, args, o, opt)
	if err != nil {
		return err
	}
	if opt.Phase == breakdown.AllSteps {
		phase = breakdown.Decode
	}
	c := compare.Compare(sides[0], sides[1], phase, compare.Options{Alpha: *f.alpha, Confidence: *f.conf,
		MinChange: f.minFrac, MinChangeNS: f.minNS, PerRun: *f.unit == "run"})
	o.phase("compare")
	out := &diffOutput{c: c, width: textWidth(*f.output, o.out)}
	if err := writeOutput(*f.output, o.out, func(w io.Writer) error { return f.form.write(w, out) }); err != nil {
		return err
	}
	o.phase("render")
	if *f.html != "" {
		if err := writeOutput(*f.html, o.out, func(w io.Writer) error { return diffHTML(w, out) }); err != nil {
			return err
		}
	}
	if !*f.failOnRegression {
		return nil
	}
	if slower, what := c.Regression(); slower {
		return &regressionError{what: what}
	}
	if why := c.Undecided(); why != "" {
		return &undecidedError{why: why}
	}
	return nil
}

// check checks the command line before any trace is read.
func (f *diffFlags) check(fs *pflag.FlagSet, args []string, o *stdio) error {
	if len(args) != 2 {
		return usagef("diff", "need exactly two inputs (got %d)", len(args))
	}
	for _, n := range reportOnlyFlags {
		if fs.Changed(n) {
			return usagef("diff", "--%s applies to report only (diff compares steps, not a speed-of-light floor)", n)
		}
	}
	var inputs []string
	for i, a := range args {
		_, items := splitSide(a, i)
		if len(items) == 0 {
			return usagef("diff", "%s side %q names no file", [...]string{"base", "new"}[i], a)
		}
		f.runs[i] = nil
		for _, it := range items {
			r, err := runFiles("diff", runItems(it))
			if err != nil {
				return err
			}
			f.runs[i] = append(f.runs[i], r)
			inputs = append(inputs, r.files...)
		}
	}
	if err := checkOutputs("diff", []string{*f.output, *f.html}, inputs); err != nil {
		return err
	}
	var err error
	if f.form, err = diffFormats.lookup("diff", *f.format); err != nil {
		return err
	}
	if *f.unit != "step" && *f.unit != "run" {
		return usagef("diff", "--unit: want step or run (got %q)", *f.unit)
	}
	if !(*f.alpha > 0 && *f.alpha < 1 && *f.conf > 0 && *f.conf < 1) { // NaN fails every comparison
		return usagef("diff", "--alpha and --confidence must be between 0 and 1")
	}
	if f.minFrac, f.minNS, err = parseMinChange(*f.minChange); err != nil {
		return usagef("diff", "--min-change: %v", err)
	}
	if f.form.noTerminal && (*f.output == "" || *f.output == "-") && isTerminal(o.out) {
		return usagef("diff", "refusing to write HTML to a terminal; use -o diff.html")
	}
	if f.tok, err = parseTokens(*f.tokens, [2]int{len(f.runs[0]), len(f.runs[1])}); err != nil {
		return usagef("diff", "--tokens: %v", err)
	}
	return nil
}

// readSides reads and summarises every run of both sides (check's runs), in order.
func (f *diffFlags) readSides(ctx context.Context, args []string, o *stdio, opt breakdown.Options) ([]compare.Side, error) {
	sides := make([]compare.Side, 2)
	for i, arg := range args {
		label, _ := splitSide(arg, i)
		sides[i].Label = label
		for _, r := range f.runs[i] {
			var rep *breakdown.Report
			err := r.read(ctx, o, f.af.progress, f.af.cache, opt.Classifier, func(t *nsys.Trace) error {
				o.phase("read")
				var err error
				rep, err = breakdown.SummarizeContext(ctx, t, opt)
				return notOneRun(optionUsage("diff", err))
			})
			if err != nil {
				return nil, err
			}
			if err := skipLeavesSteps(r.name, opt.Skip, rep); err != nil {
				return nil, err
			}
			o.phase("summarize")
			fr := findings.Of(rep)
			fr.Tokens = f.tok[i]
			sides[i].Reports = append(sides[i].Reports, fr)
		}
	}
	return sides, nil
}

// reportOnlyFlags are the analysis flags that diff refuses: the speed-of-light floor.
var reportOnlyFlags = []string{"sol-step", "sol-bytes", "bandwidth", "batch"}

// parseMinChange parses --min-change: a percentage of the base mean step ("1%", "0.5%")
// or a time per step ("5us", "1µs", "0.2ms"); the other is 0.
func parseMinChange(s string) (frac, ns float64, err error) {
	if strings.HasSuffix(s, "%") {
		f, err := parsePercent(s)
		return f, 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, 0, fmt.Errorf("want a percentage of the mean step such as 1%% or a time per step such as 5us (got %q)", s)
	}
	return 0, float64(d), nil
}

// splitSide parses "[label=]file[,file...]"; a side that exists as given is one file
// whatever "=" and "," it holds (run=3.sqlite). Without a label, a side is named after its
// first file's base name (without extensions), or "base"/"new" when both would be equal.
func splitSide(arg string, i int) (string, []string) {
	label := ""
	// As for "+" (runItems), a name that exists as given is a file: run=3.sqlite.
	if _, err := os.Stat(arg); err != nil {
		if j := strings.Index(arg, "="); j > 0 && !strings.ContainsAny(arg[:j], "/\\") {
			label, arg = arg[:j], arg[j+1:]
		}
	}
	var files []string
	for _, f := range strings.Split(arg, ",") {
		if f != "" {
			files = append(files, f)
		}
	}
	if label == "" {
		if len(files) > 0 {
			first := runItems(files[0])[0] // a run of several files is named by its first
			label = strings.TrimSuffix(filepath.Base(first), filepath.Ext(first))
		} else {
			label = [...]string{"base", "new"}[i]
		}
	}
	return label, files
}

// A regressionError is diff --fail-on-regression's verdict: the new side is significantly
// slower. Exit status 3.
type regressionError struct{ what string }

func (e *regressionError) Error() string { return "regression: " + e.what }

// An undecidedError is diff --fail-on-regression's answer when the comparison cannot decide
// (too few samples, the headline row not comparable or not tested): exit status 4, so that
// a gate never passes what it could not test.
type undecidedError struct{ why string }

func (e *undecidedError) Error() string {
	return "cannot decide whether the new side is slower: " + e.why
}

// parseTokens parses diff's --tokens BASE,NEW: two positive counts, one run a side (runs
// counts each side's); both zero when s is empty.
func parseTokens(s string, runs [2]int) ([2]int, error) {
	var out [2]int
	if s == "" {
		return out, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return out, fmt.Errorf("want the tokens of each side, BASE,NEW (got %q)", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n <= 0 {
			return out, fmt.Errorf("want two positive counts, BASE,NEW (got %q)", s)
		}
		out[i] = n
	}
	for i, n := range runs {
		if n != 1 {
			return out, fmt.Errorf("counts the tokens of one run a side (the %s side has %d runs)", [...]string{"base", "new"}[i], n)
		}
	}
	return out, nil
}
