package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/render"
)

var diffCmd = &command{
	name:  "diff",
	args:  "[flags] [label=]BASE[,BASE2...] [label=]NEW[,NEW2...]",
	short: "compare two traces (or sets of repeated runs) per category, with significance",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string, *stdio) error {
		var af analysisFlags
		format := fs.StringP("format", "f", "text", "output format: text, json or html")
		output := fs.StringP("output", "o", "", "write to this file instead of stdout")
		html := fs.String("html", "", "also write the HTML comparison to this file")
		alpha := fs.Float64("alpha", 0.05, "significance level of both tests (permutation test of the means, Mann-Whitney U of the medians)")
		conf := fs.Float64("confidence", 0.95, "confidence level of the ± intervals")
		minChange := fs.String("min-change", "1%", "changes per step smaller than this get no verdict (~) whatever the p-value: a percentage of the base side's mean step (1%) or a time per step (5us)")
		tokens := fs.String("tokens", "", "BASE,NEW: the tokens each side's run generated (one run a side), for time per token; the verdict is then per token. vLLM's step NVTX gives them without it")
		failOnRegression := fs.Bool("fail-on-regression", false, "exit 3 when the new side is significantly slower: the mean step (per token where both sides know their tokens) up by at least --min-change at p < --alpha; 0 otherwise (1 and 2 keep their meaning: error, usage)")
		unit := fs.String("unit", "step", "sample unit: step (every step is a sample) or run (each file: its mean per step, its median per step)")
		af.register(fs)
		// The speed-of-light flags are report's: registered so that giving one says so
		// (below), hidden so that diff's help does not offer them.
		for _, n := range reportOnlyFlags {
			fs.MarkHidden(n)
		}
		return func(ctx context.Context, args []string, o *stdio) error {
			if len(args) != 2 {
				return usagef("diff", "need exactly two inputs (got %d)", len(args))
			}
			for _, n := range reportOnlyFlags {
				if fs.Changed(n) {
					return usagef("diff", "--%s applies to report only (diff compares steps, not a speed-of-light floor)", n)
				}
			}
			var inputs []string
			runs := make([][]diffRun, 2)
			for i, a := range args {
				_, items := splitSide(a, i)
				if len(items) == 0 {
					return usagef("diff", "%s side %q names no file", [...]string{"base", "new"}[i], a)
				}
				for _, it := range items {
					files, name, err := runFiles("diff", runItems(it))
					if err != nil {
						return err
					}
					runs[i] = append(runs[i], diffRun{files, name})
					inputs = append(inputs, files...)
				}
			}
			if err := checkOutputs("diff", []string{*output, *html}, inputs); err != nil {
				return err
			}
			switch *format {
			case "text", "json", "html":
			default:
				return usagef("diff", "unknown format %q (want text, json or html)", *format)
			}
			if *unit != "step" && *unit != "run" {
				return usagef("diff", "--unit: want step or run (got %q)", *unit)
			}
			if !(*alpha > 0 && *alpha < 1 && *conf > 0 && *conf < 1) { // NaN fails every comparison
				return usagef("diff", "--alpha and --confidence must be between 0 and 1")
			}
			mc, mcNS, err := parseMinChange(*minChange)
			if err != nil {
				return usagef("diff", "--min-change: %v", err)
			}
			if *format == "html" && (*output == "" || *output == "-") && isTerminal(o.out) {
				return usagef("diff", "refusing to write HTML to a terminal; use -o diff.html")
			}
			tok, err := parseTokens(*tokens, [2]int{len(runs[0]), len(runs[1])})
			if err != nil {
				return usagef("diff", "--tokens: %v", err)
			}
			opt, err := af.options("diff")
			if err != nil {
				return err
			}
			phase := opt.Phase.Phase()
			sides := make([]compare.Side, 2)
			for i, arg := range args {
				label, _ := splitSide(arg, i)
				sides[i].Label = label
				for _, r := range runs[i] {
					t, err := openRun(ctx, r.files, r.name, o, af.progress, af.cache, opt.Classifier)
					if err != nil {
						return err
					}
					o.phase("read")
					rep, err := breakdown.SummarizeContext(ctx, t, opt)
					if err != nil {
						return notOneRun(optionUsage("diff", err))
					}
					if err := skipLeavesSteps(r.name, opt.Skip, rep); err != nil {
						return err
					}
					t.Release() // the report holds none of it
					o.phase("summarize")
					fr := findings.Of(rep)
					fr.Tokens = tok[i]
					sides[i].Reports = append(sides[i].Reports, fr)
				}
			}
			if opt.Phase == breakdown.AllSteps {
				phase = breakdown.Decode
			}
			c := compare.Compare(sides[0], sides[1], phase, compare.Options{Alpha: *alpha, Confidence: *conf,
				MinChange: mc, MinChangeNS: mcNS, PerRun: *unit == "run"})
			o.phase("compare")
			write := func(w io.Writer) error {
				switch *format {
				case "json":
					return render.DiffJSONWrite(w, c)
				case "html":
					return render.DiffHTML(w, c, render.DefaultHTMLOptions())
				}
				return render.DiffText(w, c, textWidth(*output, o.out))
			}
			if err := writeOutput(*output, o.out, write); err != nil {
				return err
			}
			o.phase("render")
			if *html != "" {
				if err := writeOutput(*html, o.out, func(w io.Writer) error { return render.DiffHTML(w, c, render.DefaultHTMLOptions()) }); err != nil {
					return err
				}
			}
			if slower, what := c.Regression(); *failOnRegression && slower {
				return &regressionError{what: what}
			}
			return nil
		}
	},
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

// splitSide parses "[label=]file[,file...]". Without a label, a side is named after its
// first file's base name (without extensions), or "base"/"new" when both would be equal.
func splitSide(arg string, i int) (string, []string) {
	label := ""
	if j := strings.Index(arg, "="); j > 0 && !strings.ContainsAny(arg[:j], "/\\") {
		label, arg = arg[:j], arg[j+1:]
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

// diffRun is one run of a diff side: its files and its name.
type diffRun struct {
	files []string
	name  string
}

// A regressionError is diff --fail-on-regression's verdict: the new side is significantly
// slower. Exit status 3.
type regressionError struct{ what string }

func (e *regressionError) Error() string { return "regression: " + e.what }

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
