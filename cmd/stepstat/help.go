package main

import (
	"cmp"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// commandHelp holds each command's long help, shown by 'stepstat help COMMAND'. The README
// says the same at more length; keep the two in step.
var commandHelp = map[string]string{
	"report": `
Finds the steps of the serving loop on each GPU and accounts every nanosecond of each step
` + categoryHelp() + `

Steps (--steps auto tries these in order): NVTX ranges (TensorRT-LLM, vLLM, or plain
prefill/decode/step names; nvtx:REGEX for your own), mapped to the GPU work their thread
launched; CUDA graph launches; host synchronisation each step (device-to-host copy or a
synchronize call); periodicity of the kernel sequence; else the whole trace.

With two or more GPUs in the trace, collectives are matched across ranks and split into
time waiting for the last rank and transfer time. --sol-step or --sol-bytes give a
speed-of-light floor for the step.`,
	"diff": `
Compares the steps of one phase (decode unless --phase says otherwise) of two traces, or
of two sets of repeated runs (comma-separated files per side, optionally labelled
label=files). Per category and for the whole step: median per step with a confidence
interval on each side, the change, and a Mann-Whitney U p-value (benchstat's method);
~ when the change is not significant or smaller than --min-change.

Caveats: consecutive steps of one run are not independent samples (step time drifts with
KV-cache length and batch makeup), so with hundreds of steps tiny shifts test as
significant: read the effect size, use --min-change, and prefer several runs per side
with --unit run, which takes each run's median per step as one sample. Several categories
are tested at once: expect about one false positive per 1/alpha rows.`,
	"classify": `
Lists every distinct kernel name with its category, the rule that matched, its count,
total time and share of kernel time, unclassified (other) names first, and a coverage
line. Add rules with --rules FILE (lines of "<category> <regexp>", tried before the
built-in rules), or map NVTX ranges to categories with --nvtx-category REGEX=CATEGORY.`,
	"info": `
Shows what an export holds: nsys and export-schema versions, GPUs with activity, the
time span of GPU activity, every table with its row count, kernel, memcpy and memset
counts per device, and warnings that matter for analysis (no kernel table, CUDA graphs
traced at graph level, no NVTX ranges, no GPU activity).`,
}

// categoryHelp lists the categories (kernelclass.Order) and their priority when streams
// overlap, wrapped for the help text, from kernelclass itself so that the help never
// leaves one out.
func categoryHelp() string {
	var names []string
	for _, c := range kernelclass.Order {
		names = append(names, c.String())
	}
	prio := slices.Clone(kernelclass.Order[:])
	prio = slices.DeleteFunc(prio, func(c kernelclass.Category) bool { return c == kernelclass.Idle })
	slices.SortStableFunc(prio, func(a, b kernelclass.Category) int { return cmp.Compare(b.Priority(), a.Priority()) })
	var order []string
	for _, c := range prio {
		order = append(order, c.String())
	}
	text := "to one category: " + strings.Join(names, ", ") + " (untraced_graph: CUDA graphs traced at graph level, whose kernels have no rows of their own). " +
		"The categories of a step sum exactly to its wall time; where streams overlap, the higher-priority category owns the instant (" +
		strings.Join(order, " > ") + ")."
	return wrap(text, 90)
}

// wrap breaks text into lines of at most width characters, at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		if i > 0 {
			if n+1+len(w) > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
