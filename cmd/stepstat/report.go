package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/render"
)

var reportCmd = &command{
	name:  "report",
	args:  "[flags] TRACE [TRACE...]",
	short: "break each step's GPU time down by category (text, JSON, CSV or HTML)",
	long: `
Finds the steps of the serving loop on each GPU and accounts every nanosecond of each step
` + categoryHelp() + `

` + wrap("Steps (--steps auto tries these in order): "+steps.StepMethodsHelp(), 90) + `

With two or more GPUs in the trace, collectives are matched across ranks and split into
time waiting for the last rank and transfer time. --sol-step or --sol-bytes give a
speed-of-light floor for the step.

One run in several files (one export per node or per process): give them all, or their
folder (its .sqlite exports, and .nsys-rep reports without an export beside them, in name
order: rank_2 before rank_10), and they are read in parallel and analysed as one run.
Every file's GPUs become ranks of it, numbered in file order (by RANK where every file's
recorded environment has one) and named by file, process, device and RANK/LOCAL_RANK.
The files are placed on one clock by their session starts (TARGET_INFO_SESSION_START_TIME),
then each file's offset is refined from the collectives matched across ranks (a collective
ends at nearly the same instant on every rank: the median difference of their ends, looked
for within 100ms of the session starts); the report states each file's offset and its
uncertainty (half the 10-90% range of the ends' differences, at least 1us), a drift of the
hosts' clock rates where the differences grow over the capture, or that cross-rank timing
is by wall clock only when no collective matches. Files that are not one run (another program, GPU work that does not
overlap in time, collectives that do not end together or run another number of kernels
per step) are refused, naming the file; --apart analyses each file on its own instead. One
capture given twice is refused, naming both files: one file under two names (a link, a hard
link) or a copy (the same session start, processes and kernels).`,
	setup: func(fs *pflag.FlagSet) func(context.Context, []string, *stdio) error {
		var af analysisFlags
		format := reportFormats.flag(fs)
		output := fs.StringP("output", "o", "", "write to this file instead of stdout")
		html := fs.String("html", "", "also write the HTML report to this file")
		top := fs.Int("top", 10, "kernel rows in the text report (0: none)")
		tokens := fs.Int("tokens", 0, "the tokens the capture generated (for time per token: speculative rounds make several tokens per step); vLLM's step NVTX gives them without it")
		topKernels := fs.String("top-kernels", "steps", "what the top-kernels table (text, HTML) covers: steps (the summarised steps, graph replays and memory operations as rows) or whole (every kernel of the trace)")
		apart := fs.Bool("apart", false, "several traces or a folder: analyse each file on its own (text: one report after the other; json: one document per line) instead of as one run")
		af.register(fs)
		return func(ctx context.Context, args []string, o *stdio) error {
			run, err := runFiles("report", args)
			if err != nil {
				return err
			}
			files, name := run.files, run.name
			if *tokens < 0 {
				return usagef("report", "--tokens must not be negative (got %d)", *tokens)
			}
			if *top < 0 {
				return usagef("report", "--top must not be negative (got %d)", *top)
			}
			tk, err := render.ParseTopKernels(*topKernels)
			if err != nil {
				return usagef("report", "%v", err)
			}
			if err := checkOutputs("report", []string{*output, *html}, files); err != nil {
				return err
			}
			f, err := reportFormats.lookup("report", *format)
			if err != nil {
				return err
			}
			if f.noTerminal && (*output == "" || *output == "-") && isTerminal(o.out) {
				return usagef("report", "refusing to write HTML to a terminal; use -o report.html")
			}
			if *apart && len(files) > 1 && (*format == "html" || *format == "csv" || *html != "") {
				return usagef("report", "--apart writes text or json (one report per file); for HTML or CSV, run report on each file")
			}
			opt, err := af.options("report")
			if err != nil {
				return err
			}
			if *apart && len(files) > 1 && *tokens > 0 {
				return usagef("report", "--tokens counts the tokens of one run; with --apart, run report --tokens on each file")
			}
			out := &reportOutput{text: render.TextOptions{Top: *top, TopKernels: tk, Width: textWidth(*output, o.out)}, html: render.DefaultHTMLOptions()}
			out.html.TopKernels = tk
			if *apart && len(files) > 1 {
				return reportApart(ctx, files, o, &af, opt, *output, f, out)
			}
			var sum *breakdown.Report
			err = run.read(ctx, o, af.progress, af.cache, opt.Classifier, func(t *nsys.Trace) error {
				o.phase("read")
				var err error
				sum, err = breakdown.SummarizeContext(ctx, t, opt)
				return notOneRun(optionUsage("report", err))
			})
			if err != nil {
				return err
			}
			if err := skipLeavesSteps(name, opt.Skip, sum); err != nil {
				return err
			}
			rep := findings.Of(sum)
			rep.Tokens = *tokens
			if ctx.Err() != nil {
				return ctx.Err()
			}
			o.phase("summarize")
			out.rep = rep
			if err := writeOutput(*output, o.out, func(w io.Writer) error { return f.write(w, out) }); err != nil {
				return err
			}
			o.phase("render")
			if *html != "" {
				return writeOutput(*html, o.out, func(w io.Writer) error { return render.HTML(w, rep, out.html) })
			}
			return nil
		}
	},
}

// reportApart analyses each file on its own (--apart), one after the other, each trace
// given back before the next is read, and writes the reports in file order with f (text
// or json; out holds the formats' options): text reports one after the other under a line
// naming the file, JSON one document per line.
func reportApart(ctx context.Context, files []string, o *stdio, af *analysisFlags, opt breakdown.Options, output string, f format[*reportOutput], out *reportOutput) error {
	var reps []*findings.Report
	for _, file := range files {
		var sum *breakdown.Report
		err := readTrace(ctx, file, o, af.progress, af.cache, func(t *nsys.Trace) error {
			var err error
			sum, err = breakdown.SummarizeContext(ctx, t, opt)
			return optionUsage("report", err)
		})
		if err != nil {
			return err
		}
		if err := skipLeavesSteps(file, opt.Skip, sum); err != nil {
			return err
		}
		reps = append(reps, findings.Of(sum))
	}
	return writeOutput(output, o.out, func(w io.Writer) error {
		for i, rep := range reps {
			v := *out
			v.rep = rep
			if f.name != "text" {
				if err := f.write(w, &v); err != nil {
					return err
				}
				continue
			}
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "=== %s (file %d of %d, analysed apart) ===\n", render.TerminalSafe(files[i]), i+1, len(files))
			if err := f.write(w, &v); err != nil {
				return err
			}
		}
		return nil
	})
}
