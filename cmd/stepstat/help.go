package main

import (
	"cmp"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

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
