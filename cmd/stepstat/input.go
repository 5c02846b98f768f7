package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
)

// skipLeavesSteps refuses a --skip that drops every step found on every device: the
// report would have nothing to summarise. The error names the file, the steps found and
// the largest --skip that leaves one.
func skipLeavesSteps(path string, skip int, r *breakdown.Report) error {
	if skip == 0 || len(r.Devices) == 0 {
		return nil
	}
	most := 0
	var found []string
	for i := range r.Devices {
		d := &r.Devices[i]
		if len(d.Steps) > 0 {
			return nil
		}
		most = max(most, d.Skipped)
		found = append(found, fmt.Sprintf("%d on device %d", d.Skipped, d.Device))
	}
	if most == 0 {
		return nil // no steps found at all: not --skip's doing
	}
	return &nsys.Error{Path: path, Err: fmt.Errorf("--skip %d drops every step (found %s); give --skip %d or less", skip, strings.Join(found, ", "), most-1)}
}

// readTrace reads a trace for analysis (an export, or a report exported first, see
// readInput) and calls f with it: it must have GPU activity. The trace's memory goes back
// when f returns.
func readTrace(ctx context.Context, path string, o *stdio, showProgress, cache bool, f func(*nsys.Trace) error) error {
	t, err := openTrace(ctx, path, o, showProgress, cache)
	if err != nil {
		return err
	}
	defer t.Release()
	return f(t)
}

// openTrace opens a trace for analysis as readTrace reads it; its maker releases it
// (readTrace, readRun).
func openTrace(ctx context.Context, path string, o *stdio, showProgress, cache bool) (*nsys.Trace, error) {
	t, err := openInput(ctx, path, nsys.Options{Progress: progressFor(path, o, showProgress)}, cache)
	if err != nil {
		return nil, err
	}
	logReads(o, t)
	if !t.HasGPUActivity() {
		err := &nsys.Error{Path: path, Err: noGPUActivity(ctx, path, t)}
		t.Release()
		return nil, err
	}
	return t, nil
}

// noGPUActivity explains a trace without GPU work: what nsys recorded (its warnings and
// errors, the processes they name or that called CUDA), and how to capture a server whose
// GPU work runs in child processes: the error is the one line, the rest its details.
func noGPUActivity(ctx context.Context, path string, t *nsys.Trace) error {
	var lines []string
	if rec, err := nsys.ReadRecorded(ctx, path); err == nil { // a .nsys-rep input: its export is gone, say the rest
		if len(rec.Processes) > 0 {
			var ps []string
			for _, p := range rec.Processes {
				s := fmt.Sprintf("%s (pid %d)", orUnnamed(p.Name), p.PID)
				if p.CUDACall {
					s += " with CUDA calls"
				}
				ps = append(ps, s)
			}
			lines = append(lines, "nsys saw: "+strings.Join(ps, ", "))
		}
		for _, d := range rec.Diagnostics {
			s := fmt.Sprintf("nsys %s: %s", strings.ToLower(d.Severity), d.Text)
			if len(d.PIDs) > 0 {
				var ps []string
				for _, p := range d.PIDs {
					ps = append(ps, strconv.FormatInt(p, 10))
				}
				s += " (pid " + strings.Join(ps, ", ") + ")"
			}
			lines = append(lines, s)
		}
	}
	if len(t.APICalls) > 0 {
		lines = append(lines, fmt.Sprintf("the trace has %d CUDA API calls but no GPU work: the work may have run in processes nsys did not trace", len(t.APICalls)))
	}
	lines = append(lines, "servers that run their GPU work in child processes (vLLM's engine core and workers, SGLang's schedulers, torch.multiprocessing) need the whole process tree traced: "+
		"nsys profile -t cuda,nvtx --trace-fork-before-exec=true --cuda-graph-trace=node -o out <server command>, and profile long enough for the workers to start (-y/--delay, --duration); or profile one worker process")
	return &detailedError{err: nsys.ErrNoGPUActivity, details: lines}
}

func orUnnamed(s string) string {
	if s == "" {
		return "unnamed"
	}
	return s
}
