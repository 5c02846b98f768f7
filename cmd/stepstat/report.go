package main

import (
	"context"
	"io"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/render"
)

var reportCmd = &command{
	name:  "report",
	args:  "[flags] TRACE",
	short: "break each step's GPU time down by category (text, JSON, CSV or HTML)",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string, *stdio) error {
		var af analysisFlags
		format := fs.StringP("format", "f", "text", "output format: text, json, csv or html")
		output := fs.StringP("output", "o", "", "write to this file instead of stdout")
		html := fs.String("html", "", "also write the HTML report to this file")
		top := fs.Int("top", 10, "kernel rows in the text report (0: none)")
		topKernels := fs.String("top-kernels", "steps", "what the top-kernels table (text, HTML) covers: steps (the summarised steps, graph replays and memory operations as rows) or whole (every kernel of the trace)")
		af.register(fs)
		return func(ctx context.Context, args []string, o *stdio) error {
			path, err := needOne("report", args)
			if err != nil {
				return err
			}
			if *top < 0 {
				return usagef("report", "--top must not be negative (got %d)", *top)
			}
			tk, err := render.ParseTopKernels(*topKernels)
			if err != nil {
				return usagef("report", "%v", err)
			}
			if err := checkOutputs("report", []string{*output, *html}, args); err != nil {
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
			opt, err := af.options("report")
			if err != nil {
				return err
			}
			t, err := openTrace(ctx, path, o, af.progress, af.cache)
			if err != nil {
				return err
			}
			o.phase("read")
			sum, err := breakdown.Summarize(t, opt)
			if err != nil {
				return optionUsage("report", err)
			}
			if err := skipLeavesSteps(path, opt.Skip, sum); err != nil {
				return err
			}
			t.Release() // the report holds none of it
			rep := findings.Of(sum)
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
