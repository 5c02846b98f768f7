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
	setup: func(fs *pflag.FlagSet) func(context.Context, []string, *stdio) error {
		format := fs.StringP("format", "f", "text", "output format: text or json")
		var cache bool
		registerCache(fs, &cache)
		return func(ctx context.Context, args []string, o *stdio) error {
			path, err := needOne("info", args)
			if err != nil {
				return err
			}
			if *format != "text" && *format != "json" {
				return usagef("info", "unknown format %q (want text or json)", *format)
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
			if *format == "json" {
				return render.InfoJSON(o.out, in)
			}
			return render.InfoText(o.out, in)
		}
	},
}
