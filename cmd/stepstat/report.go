package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/render"
)

var reportCmd = &command{
	name:  "report",
	args:  "[flags] TRACE [TRACE...]",
	short: "break each step's GPU time down by category (text, JSON, CSV or HTML)",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string, *stdio) error {
		var af analysisFlags
		format := fs.StringP("format", "f", "text", "output format: text, json, csv or html")
		output := fs.StringP("output", "o", "", "write to this file instead of stdout")
		html := fs.String("html", "", "also write the HTML report to this file")
		top := fs.Int("top", 10, "kernel rows in the text report (0: none)")
		tokens := fs.Int("tokens", 0, "the tokens the capture generated (for time per token: speculative rounds make several tokens per step); vLLM's step NVTX gives them without it")
		topKernels := fs.String("top-kernels", "steps", "what the top-kernels table (text, HTML) covers: steps (the summarised steps, graph replays and memory operations as rows) or whole (every kernel of the trace)")
		apart := fs.Bool("apart", false, "several traces or a folder: analyse each file on its own (text: one report after the other; json: one document per line) instead of as one run")
		af.register(fs)
		return func(ctx context.Context, args []string, o *stdio) error {
			files, name, err := runFiles("report", args)
			if err != nil {
				return err
			}
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
			switch *format {
			case "text", "json", "csv", "html":
			default:
				return usagef("report", "unknown format %q (want text, json, csv or html)", *format)
			}
			if *format == "html" && (*output == "" || *output == "-") && isTerminal(o.out) {
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
			if *apart && len(files) > 1 {
				return reportApart(ctx, files, o, &af, opt, *output, *format, render.TextOptions{Top: *top, TopKernels: tk})
			}
			t, err := openRun(ctx, files, name, o, af.progress, af.cache, opt.Classifier)
			if err != nil {
				return err
			}
			o.phase("read")
			sum, err := breakdown.SummarizeContext(ctx, t, opt)
			if err != nil {
				return notOneRun(optionUsage("report", err))
			}
			if err := skipLeavesSteps(name, opt.Skip, sum); err != nil {
				return err
			}
			t.Release() // the report holds none of it
			rep := findings.Of(sum)
			rep.Tokens = *tokens
			if ctx.Err() != nil {
				return ctx.Err()
			}
			o.phase("summarize")
			htmlOpt := render.DefaultHTMLOptions()
			htmlOpt.TopKernels = tk
			write := func(w io.Writer) error {
				switch *format {
				case "json":
					return render.JSON(w, rep)
				case "csv":
					return render.CSV(w, rep.Report)
				case "html":
					return render.HTML(w, rep, htmlOpt)
				}
				return render.Text(w, rep, render.TextOptions{Top: *top, TopKernels: tk, Width: textWidth(*output, o.out)})
			}
			if err := writeOutput(*output, o.out, write); err != nil {
				return err
			}
			o.phase("render")
			if *html != "" {
				return writeOutput(*html, o.out, func(w io.Writer) error {
					return render.HTML(w, rep, htmlOpt)
				})
			}
			return nil
		}
	},
}

// reportApart analyses each file on its own (--apart), one after the other, each trace
// given back before the next is read, and writes the reports in file order: text reports
// one after the other under a line naming the file, JSON one document per line.
func reportApart(ctx context.Context, files []string, o *stdio, af *analysisFlags, opt breakdown.Options, output, format string, topt render.TextOptions) error {
	var reps []*findings.Report
	for _, f := range files {
		t, err := openTrace(ctx, f, o, af.progress, af.cache)
		if err != nil {
			return err
		}
		sum, err := breakdown.Summarize(t, opt)
		if err != nil {
			return optionUsage("report", err)
		}
		if err := skipLeavesSteps(f, opt.Skip, sum); err != nil {
			return err
		}
		t.Release()
		reps = append(reps, findings.Of(sum))
	}
	return writeOutput(output, o.out, func(w io.Writer) error {
		for i, rep := range reps {
			if format == "json" {
				if err := render.JSON(w, rep); err != nil {
					return err
				}
				continue
			}
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "=== %s (file %d of %d, analysed apart) ===\n", render.TerminalSafe(files[i]), i+1, len(files))
			if err := render.Text(w, rep, topt); err != nil {
				return err
			}
		}
		return nil
	})
}
