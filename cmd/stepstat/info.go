package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/render"
	"github.com/stepstat/stepstat/render/schema"
)

var infoCmd = &command{
	name:  "info",
	args:  "[flags] TRACE",
	short: "show what an export holds: versions, GPUs, tables, counts, gaps in the capture",
	long: `
Shows what an export holds: nsys and export-schema versions, GPUs with activity, the
time span of GPU activity, every table with its row count, kernel, memcpy and memset
counts per device, and warnings that matter for analysis (no kernel table, CUDA graphs
traced at graph level, no NVTX ranges, no GPU activity).`,
	setup: func(fs *pflag.FlagSet) func(context.Context, []string, *stdio) error {
		format := infoFormats.flag(fs)
		var cache bool
		registerCache(fs, &cache)
		return func(ctx context.Context, args []string, o *stdio) error {
			path, err := needOne("info", args)
			if err != nil {
				return err
			}
			f, err := infoFormats.lookup("info", *format)
			if err != nil {
				return err
			}
			var in *schema.Info
			err = readInput(ctx, path, nsys.Options{CountRows: true, Progress: progressFor(path, o, false)}, cache, func(t *nsys.Trace) error {
				logReads(o, t)
				in = render.NewInfo(t)
				return nil
			})
			if err != nil {
				return err
			}
			return f.write(o.out, in)
		}
	},
}
