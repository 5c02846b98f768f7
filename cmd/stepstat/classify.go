package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
)

var classifyCmd = &command{
	name:  "classify",
	args:  "[flags] TRACE",
	short: "list every distinct kernel name with its category, rule, count and time share",
	long: `
Lists every distinct kernel name with its category, the rule that matched, its count,
total time and share of kernel time, unclassified (other) names first, and a coverage
line. Add rules with --rules FILE (lines of "<category> <regexp>", tried before the
built-in rules), or map NVTX ranges to categories with --nvtx-category REGEX=CATEGORY.`,
	setup: func(fs *pflag.FlagSet) func(context.Context, []string, *stdio) error {
		var af analysisFlags
		format := classifyFormats.flag(fs)
		output := fs.StringP("output", "o", "", "write to this file instead of stdout")
		fs.StringVar(&af.rules, "rules", "", "file of extra classification rules, tried before the built-in ones")
		fs.StringArrayVar(&af.nvtxCats, "nvtx-category", nil, "REGEX=CATEGORY: kernels launched inside matching NVTX ranges count as CATEGORY (repeatable)")
		fs.BoolVar(&af.progress, "progress", false, "show reading progress on stderr even when it is not a terminal")
		byName := fs.Bool("by-name", false, "classify by name only: no steps, no context rules (faster)")
		registerCache(fs, &af.cache)
		return func(ctx context.Context, args []string, o *stdio) error {
			path, err := needOne("classify", args)
			if err != nil {
				return err
			}
			if err := checkOutputs("classify", []string{*output}, args); err != nil {
				return err
			}
			f, err := classifyFormats.lookup("classify", *format)
			if err != nil {
				return err
			}
			af.steps, af.phase, af.device = "auto", "decode", -1
			opt, err := af.options("classify")
			if err != nil {
				return err
			}
			// By name and without NVTX rules the kernel table is all classify needs: the
			// runtime and NVTX tables (most of an eager trace) are not read. Context
			// classification needs the steps, which need them.
			var ks []breakdown.KernelStat
			err = readInput(ctx, path, nsys.Options{Progress: progressFor(path, o, af.progress),
				KernelsOnly: *byName && len(opt.NVTXCategories) == 0}, af.cache, func(t *nsys.Trace) error {
				logReads(o, t)
				if len(t.Kernels) == 0 {
					return &nsys.Error{Path: path, Err: fmt.Errorf("no kernels to classify")}
				}
				// By default the steps are found and their kernels classified in context, so
				// that the table shows what context classification (the kernel's place in its
				// step) decided, rule by rule; accounting and summaries are not run.
				if *byName {
					ks = breakdown.KernelStats(t, opt)
					return nil
				}
				var err error
				ks, err = breakdown.ContextKernelStats(ctx, t, opt)
				return err
			})
			if err != nil {
				return err
			}
			return writeOutput(*output, o.out, func(w io.Writer) error { return f.write(w, &classifyOutput{path, ks}) })
		}
	},
}
