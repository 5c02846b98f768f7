package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
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
	solStep  time.Duration
	solBytes string
	bw       float64
	batch    int
}

func (f *analysisFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.device, "device", -1, "analyse only this CUDA device; -1 means every device")
	fs.StringVar(&f.steps, "steps", "auto", "step detection: "+steps.StepMethodChoices())
	fs.StringVar(&f.phase, "phase", "decode", "phase to summarise: decode, prefill, mixed or all")
	fs.IntVar(&f.skip, "skip", 0, "drop the first N steps of each device (warm-up)")
	fs.StringVar(&f.rules, "rules", "", "file of extra classification rules, tried before the built-in ones")
	fs.StringArrayVar(&f.nvtxCats, "nvtx-category", nil, "REGEX=CATEGORY: kernels launched inside matching NVTX ranges count as CATEGORY (repeatable)")
	fs.DurationVar(&f.solStep, "sol-step", 0, "speed of light: the expected minimum step time, a `DURATION` such as 7ms; the report compares the median step with it")
	fs.StringVar(&f.solBytes, "sol-bytes", "", "speed of light: `BYTES` every step must read from memory (e.g. 34.2GB, 16GiB); floor = BYTES / bandwidth")
	fs.Float64Var(&f.bw, "bandwidth", 0, "memory bandwidth in `GB/s` for --sol-bytes (e.g. 4800 for 4.8 TB/s); default: the GPU's datasheet value (H100 SXM/PCIe, H200, B200, RTX PRO 6000 Blackwell)")
	fs.IntVar(&f.batch, "batch", 0, "speed of light: `N` sequences per decode step, for total tokens/s")
	fs.BoolVar(&f.progress, "progress", false, "show reading progress on stderr even when it is not a terminal")
	registerCache(fs, &f.cache)
}

// maxRulesBytes is the largest --rules file read: 256 KiB, thousands of rules.
const maxRulesBytes = 256 << 10

// options turns the flags into breakdown options. Errors are usage errors of cmd.
func (f *analysisFlags) options(cmd string) (breakdown.Options, error) {
	var opt breakdown.Options
	if f.device > math.MaxInt16 {
		return opt, usagef(cmd, "--device %d: CUDA device ids go up to %d", f.device, math.MaxInt16)
	}
	if f.device < -1 { // -2 is a typo, not "every device"
		return opt, usagef(cmd, "--device %d: want -1 (every device) or a CUDA device id, 0 to %d", f.device, math.MaxInt16)
	}
	if f.batch > 1<<30 {
		return opt, usagef(cmd, "--batch %d: at most %d sequences", f.batch, 1<<30)
	}
	if f.device >= 0 {
		d := nsys.DeviceID(f.device)
		opt.Device = &d
	}
	var err error
	if opt.Steps, err = steps.ParseStepMethod(f.steps); err != nil {
		return opt, optionUsage(cmd, err)
	}
	if opt.Phase, err = breakdown.ParsePhaseSelection(f.phase); err != nil {
		return opt, usagef(cmd, "--phase: %v", err)
	}
	if f.skip < 0 {
		return opt, usagef(cmd, "--skip must not be negative")
	}
	opt.Skip = f.skip
	var extra []kernelclass.Rule
	if f.rules != "" {
		fh, err := os.Open(f.rules)
		if err != nil {
			return opt, fmt.Errorf("rules file: %w", err)
		}
		// Compiled rules take ~140 times their text in memory: a limit keeps a hostile
		// or mistaken file (a trace given as rules) from taking gigabytes. The text is
		// read through the limit, so a pipe or FIFO is held to it too.
		text, err := io.ReadAll(io.LimitReader(fh, maxRulesBytes+1))
		fh.Close()
		if err != nil {
			return opt, fmt.Errorf("rules file: %w", err)
		}
		if len(text) > maxRulesBytes {
			return opt, fmt.Errorf("rules file %s: more than the %d bytes a rules file may have", f.rules, maxRulesBytes)
		}
		extra, err = kernelclass.ParseRules(bytes.NewReader(text), f.rules)
		if err != nil {
			return opt, err
		}
	}
	opt.Classifier = kernelclass.NewClassifier(extra)
	for _, nc := range f.nvtxCats {
		i := strings.LastIndex(nc, "=")
		if i <= 0 {
			return opt, usagef(cmd, "--nvtx-category %q: want REGEX=CATEGORY", nc)
		}
		re, err := regexp.Compile(nc[:i])
		if err != nil {
			return opt, usagef(cmd, "--nvtx-category %q: bad regular expression: %v", nc, err)
		}
		c, err := kernelclass.ParseAssignable(nc[i+1:])
		if err != nil {
			return opt, usagef(cmd, "--nvtx-category %q: %v", nc, err)
		}
		opt.NVTXCategories = append(opt.NVTXCategories, breakdown.NVTXCategory{Match: re, Category: c})
	}
	if err := f.solOptions(cmd, &opt); err != nil {
		return opt, err
	}
	return opt, nil
}

// solOptions sets the speed-of-light flags in opt and checks them (breakdown.CheckSOL),
// before any trace is read. A --sol-bytes floor for a GPU whose bandwidth is not known is
// found only once the trace is read; it is a usage error too (optionUsage).
func (f *analysisFlags) solOptions(cmd string, opt *breakdown.Options) error {
	if f.solBytes != "" {
		n, err := parseBytes(f.solBytes)
		if err != nil {
			return usagef(cmd, "--sol-bytes: %v", err)
		}
		opt.SOLBytes = n
	}
	opt.SOLStep = f.solStep
	opt.Bandwidth = f.bw * 1e9
	opt.Batch = f.batch
	return optionUsage(cmd, breakdown.CheckSOL(*opt))
}

// optionFlags are the flags that set each breakdown option an OptionError can name.
var optionFlags = map[breakdown.Option]string{
	breakdown.OptSteps:     "--steps",
	breakdown.OptSOLStep:   "--sol-step",
	breakdown.OptSOLBytes:  "--sol-bytes",
	breakdown.OptBandwidth: "--bandwidth",
	breakdown.OptBatch:     "--batch",
}

// optionUsage turns a breakdown.OptionError into a usage error of cmd that names the flag;
// other errors pass unchanged.
func optionUsage(cmd string, err error) error {
	var oe *breakdown.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	flag := optionFlags[oe.Option]
	var needs *breakdown.NeedsOption
	var excl *breakdown.ExcludesOption
	var msg string
	switch {
	case errors.Is(oe.Err, breakdown.ErrNegative):
		msg = flag + " must not be negative"
	case errors.As(oe.Err, &needs):
		var any []string
		for _, o := range needs.Any {
			any = append(any, optionFlags[o])
		}
		msg = flag + " needs " + strings.Join(any, " or ")
	case errors.As(oe.Err, &excl):
		msg = "give " + optionFlags[excl.Other] + " or " + flag + ", not both"
	default:
		msg = fmt.Sprintf("%s: %v", flag, oe.Err)
	}
	if errors.Is(oe.Err, breakdown.ErrNoBandwidth) {
		msg += "; give --bandwidth GB/s"
	}
	return usagef(cmd, "%s", msg)
}

// byteUnits are the suffixes parseBytes accepts, longest first within each family.
var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12},
	{"b", 1},
}

// parseBytes parses a byte count: a number with an optional unit, decimal (kB, MB, GB, TB,
// or K, M, G, T) or binary (KiB, MiB, GiB, TiB), in any letter case: 34.2GB, 16GiB,
// 34200000000, "512 MB".
func parseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("want a positive byte count such as 34.2GB or 16GiB (got %q)", s)
	}
	b := math.Round(v * mult)
	if b >= math.MaxInt64 || b < 1 {
		return 0, fmt.Errorf("byte count out of range (got %q)", s)
	}
	return int64(b), nil
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
	if err != nil || !(f >= 0) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a percentage such as 1%% (got %q)", s)
	}
	return f, nil
}
