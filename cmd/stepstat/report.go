package main

import (
	"context"
	"io"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/render"
)

var reportCmd = &command{
	name:  "report",
	args:  "[flags] TRACE",
	short: "break each step's GPU time down by category (text, JSON, CSV or HTML)",
	long: `
Finds the steps of the serving loop on each GPU and accounts every nanosecond of each step
` + categoryHelp() + `

` + wrap("Steps (--steps auto tries these in order): "+breakdown.StepMethodsHelp(), 90) + `

With two or more GPUs in the trace, collectives are matched across ranks and split into
time waiting for the last rank and transfer time. --sol-step or --sol-bytes give a
speed-of-light floor for the step.`,
	setup: func(fs *pflag.FlagSet) func(context.Context, []string, *stdio) error {
		var af analysisFlags
		format := reportFormats.flag(fs)
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
			f, err := reportFormats.lookup("report", *format)
			if err != nil {
				return err
			}
			if f.noTerminal && (*output == "" || *output == "-") && isTerminal(o.out) {
				return usagef("report", "refusing to write HTML to a terminal; use -o report.html")
			}
			opt, err := af.options("report")
			if err != nil {
				return err
			}
			var sum *breakdown.Report
			err = readTrace(ctx, path, o, af.progress, af.cache, func(t *nsys.Trace) error {
				o.phase("read")
				var err error
				sum, err = breakdown.Summarize(t, opt)
				return optionUsage("report", err)
			})
			if err != nil {
				return err
			}
			if err := skipLeavesSteps(path, opt.Skip, sum); err != nil {
				return err
			}
			rep := findings.Of(sum)
			o.phase("summarize")
			out := &reportOutput{rep: rep, text: render.TextOptions{Top: *top, TopKernels: tk}, html: render.DefaultHTMLOptions()}
			out.html.TopKernels = tk
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
