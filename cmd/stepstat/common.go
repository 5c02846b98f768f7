package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
)

// analysisFlags are the flags shared by report and diff.
type analysisFlags struct {
	device   int
	steps    string
	phase    string
	skip     int
	rules    string
	nvtxCats []string
	progress bool
	cache    bool
}

func (f *analysisFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.device, "device", -1, "analyse only this CUDA device; -1 means every device")
	fs.StringVar(&f.steps, "steps", "auto", "step detection: auto, nvtx, nvtx:REGEX, graph, sync, periodic or whole")
	fs.StringVar(&f.phase, "phase", "decode", "phase to summarise: decode, prefill or all")
	fs.IntVar(&f.skip, "skip", 0, "drop the first N steps of each device (warm-up)")
	fs.StringVar(&f.rules, "rules", "", "file of extra classification rules, tried before the built-in ones")
	fs.StringArrayVar(&f.nvtxCats, "nvtx-category", nil, "REGEX=CATEGORY: kernels launched inside matching NVTX ranges count as CATEGORY (repeatable)")
	fs.BoolVar(&f.progress, "progress", false, "show reading progress on stderr even when it is not a terminal")
	registerCache(fs, &f.cache)
}

// options turns the flags into breakdown options. Errors are usage errors of cmd.
func (f *analysisFlags) options(cmd string) (breakdown.Options, error) {
	var opt breakdown.Options
	if f.device >= 0 {
		d := nsys.DeviceID(f.device)
		opt.Device = &d
	}
	opt.Steps = f.steps
	if _, err := regexp.Compile(strings.TrimPrefix(f.steps, "nvtx:")); err != nil && strings.HasPrefix(f.steps, "nvtx:") {
		return opt, usagef(cmd, "--steps: bad regular expression: %v", err)
	}
	switch f.steps {
	case "auto", "nvtx", "graph", "sync", "periodic", "whole":
	default:
		if !strings.HasPrefix(f.steps, "nvtx:") {
			return opt, usagef(cmd, "--steps: unknown method %q (want auto, nvtx, nvtx:REGEX, graph, sync, periodic or whole)", f.steps)
		}
	}
	switch f.phase {
	case "decode":
		opt.Phase = breakdown.Decode
	case "prefill":
		opt.Phase = breakdown.Prefill
	case "all":
		opt.AllPhases = true
	default:
		return opt, usagef(cmd, "--phase: unknown phase %q (want decode, prefill or all)", f.phase)
	}
	if f.skip < 0 {
		return opt, usagef(cmd, "--skip must not be negative")
	}
	opt.Skip = f.skip
	var extra []breakdown.Rule
	if f.rules != "" {
		fh, err := os.Open(f.rules)
		if err != nil {
			return opt, fmt.Errorf("rules file: %w", err)
		}
		extra, err = breakdown.ParseRules(bufio.NewReader(fh), f.rules)
		fh.Close()
		if err != nil {
			return opt, err
		}
	}
	opt.Classifier = breakdown.NewClassifier(extra)
	for _, nc := range f.nvtxCats {
		i := strings.LastIndex(nc, "=")
		if i <= 0 {
			return opt, usagef(cmd, "--nvtx-category %q: want REGEX=CATEGORY", nc)
		}
		re, err := regexp.Compile(nc[:i])
		if err != nil {
			return opt, usagef(cmd, "--nvtx-category %q: bad regular expression: %v", nc, err)
		}
		c, err := breakdown.ParseCategory(nc[i+1:])
		if err != nil || c == breakdown.Idle {
			return opt, usagef(cmd, "--nvtx-category %q: unknown category %q", nc, nc[i+1:])
		}
		opt.NVTXCategories = append(opt.NVTXCategories, breakdown.NVTXCategory{Match: re, Category: c})
	}
	return opt, nil
}

// openTrace reads a trace for analysis (an export, or a report exported first, see
// openInput): it must have GPU activity.
func openTrace(ctx context.Context, path string, o *stdio, showProgress, cache bool) (*nsys.Trace, error) {
	t, err := openInput(ctx, path, nsys.Options{Progress: progressFor(path, o, showProgress)}, cache)
	if err != nil {
		return nil, err
	}
	if !t.HasGPUActivity() {
		return nil, &nsys.Error{Path: path, Err: nsys.ErrNoGPUActivity}
	}
	return t, nil
}

// writeOutput writes through fn to path ("" or "-" is stdout). Nothing is written
// half-way: a file is written under a temporary name in the same folder (".NAME.tmp*"),
// flushed, and renamed over path only when fn and every write succeeded, so a failure
// leaves no partial report and an earlier file at path intact, and the temporary file is
// removed; stdout gets the output only once fn has succeeded.
func writeOutput(path string, stdout io.Writer, fn func(w io.Writer) error) error {
	if path == "" || path == "-" {
		var buf bytes.Buffer
		if err := fn(&buf); err != nil {
			return err
		}
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	fail := func(err error) error { return fmt.Errorf("writing %s: %w", path, unwrapPath(err)) }
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fail(errors.New("is a directory"))
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	bw := bufio.NewWriter(tmp)
	if err := fn(bw); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	return nil
}

// parsePercent parses "1%", "0.5%" or "0.01" into a fraction.
func parsePercent(s string) (float64, error) {
	var f float64
	var err error
	if strings.HasSuffix(s, "%") {
		_, err = fmt.Sscanf(strings.TrimSuffix(s, "%"), "%g", &f)
		f /= 100
	} else {
		_, err = fmt.Sscanf(s, "%g", &f)
	}
	if err != nil || f < 0 {
		return 0, fmt.Errorf("want a percentage such as 1%% (got %q)", s)
	}
	return f, nil
}
