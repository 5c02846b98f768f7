package main

import (
	"cmp"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// commandHelp holds each command's long help, shown by 'stepstat help COMMAND'. The README
// says the same at more length; keep the two in step.
var commandHelp = map[string]string{
	"report": `
Finds the steps of the serving loop on each GPU and accounts every nanosecond of each step
` + categoryHelp() + `

` + wrap("Steps (--steps auto tries these in order): "+breakdown.StepMethodsHelp(), 90) + `

With two or more GPUs in the trace, collectives are matched across ranks and split into
time waiting for the last rank and transfer time. --sol-step or --sol-bytes give a
speed-of-light floor for the step.

One run in several files (one export per node or per process): give them all, or their
folder (its .sqlite exports, and .nsys-rep reports without an export beside them, in name
order: rank_2 before rank_10), and they are read in parallel and analysed as one run.
Every file's GPUs become ranks of it, numbered in file order (by RANK where every file's
recorded environment has one) and named by file, process, device and RANK/LOCAL_RANK.
The files are placed on one clock by their session starts (TARGET_INFO_SESSION_START_TIME),
then each file's offset is refined from the collectives matched across ranks (a collective
ends at nearly the same instant on every rank: the median difference of their ends, looked
for within 100ms of the session starts); the report states each file's offset and its
uncertainty (half the 10-90% range of the ends' differences, at least 1us), a drift of the
hosts' clock rates where the differences grow over the capture, or that cross-rank timing
is by wall clock only when no collective matches. Files that are not one run (another program, GPU work that does not
overlap in time, collectives that do not end together or run another number of kernels
per step) are refused, naming the file; --apart analyses each file on its own instead.`,
	"diff": `
Compares the steps of one phase (decode unless --phase says otherwise) of two traces, or
of two sets of repeated runs (comma-separated files per side, optionally labelled
label=files). A run of several files (one per node or process, as report reads them) is a
folder or its files joined by "+": diff base=DIR new=DIR, diff base=a0.sqlite+a1.sqlite
new=b0.sqlite+b1.sqlite, or repeated runs of them: base=runA1/,runA2/ new=runB1/,runB2/.
It leads with what changed: the change of the mean per step of the whole step and of each
category (the means add up to the mean step), tested by a permutation
test on the difference of means, biggest change first, with the ranks whose change
differs from the pooled one, and a reason when the median disagrees; with 2+ GPUs, each
rank's wait and transfer in matched collectives and the straggler, before and after.
Then benchstat's table per row: median per step with a confidence interval on each side,
the change, and a Mann-Whitney U p-value; and the means table. A change smaller than
--min-change (1% of the base mean step by default, or a time per step such as 5us) gets
no verdict (~). A category that one side cannot measure (CUDA graphs traced at graph
level, a rank missing or without steps) is not comparable, with the reason. Every
warning of either capture comes first. With 2+ GPUs, ranks are not pooled: one sample per
aligned step (the step on the slowest rank, as ranks run in lock step), so n counts
aligned steps, and each rank has its own rows.

--fail-on-regression (for CI): exit status 3 when the new side is significantly slower,
the mean step (per token where both sides know their tokens) up by at least --min-change
at p < --alpha; 0 otherwise. Exit status 1 (an error) and 2 (a usage mistake) keep their
meaning.

Caveats: consecutive steps of one run are not independent samples (step time drifts with
KV-cache length and batch makeup), so with hundreds of steps small shifts test as
significant: read the change per step. With 4 or more runs per side, --unit run takes each
run's mean (and median) per step as one sample; with fewer, the test cannot reach
p < 0.05 and the diff says so first and gives no verdict. Several categories are tested at
once: expect about one false positive per 1/alpha rows.`,
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

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		if i > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
