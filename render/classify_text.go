package render

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// maxRuleColumn is the widest rule column of the classify table; a longer rule (FILE:LINE
// of a rules file deep in folders) is elided to it, the rules told apart (elideNames).
const maxRuleColumn = 64

// ClassifyText writes every distinct kernel name with its category, matching rule, count,
// total time and share, unclassified names first, then a coverage line. Every line is
// within MaxTextLine (the coverage line of a long path wraps).
func ClassifyText(w io.Writer, path string, ks []breakdown.KernelStat) error {
	var buf strings.Builder
	ew := &errWriter{w: &buf}
	out, total, other := classifyOrder(ks)
	// One rule column, as wide as its longest rule (up to maxRuleColumn), so that the
	// names start in one column.
	rules := make([]string, len(out))
	for i, k := range out {
		rules[i] = TerminalSafe(k.Rule)
		if rules[i] == "" {
			rules[i] = "-"
		}
	}
	rules = elideNames(rules, maxRuleColumn)
	ruleW := 22
	for i := range rules {
		ruleW = max(ruleW, utf8.RuneCountInString(rules[i]))
	}
	pad := func(s string, w int) string { return s + strings.Repeat(" ", max(w-utf8.RuneCountInString(s), 0)) }
	ew.printf("%10s %7s %7s  %-12s %s %s\n", "total", "share", "count", "category", pad("rule", ruleW), "name")
	// Names are elided to keep each row within MaxTextLine (the JSON has them whole).
	names := make([]string, len(out))
	limits := make([]int, len(out))
	for i, k := range out {
		names[i] = TerminalSafe(k.Name)
		limits[i] = max(MaxTextLine-(10+1+7+1+7+2+12+1+ruleW+1), 40)
	}
	names = elideNamesEach(names, limits)
	for i, k := range out {
		ew.printf("%10s %7s %7d  %-12s %s %s\n", breakdown.FormatDuration(int64(k.Total)), breakdown.FormatPercent(frac(int64(k.Total), total)), k.Count,
			k.Category, pad(rules[i], ruleW), names[i])
	}
	nOther := 0
	for _, k := range ks {
		if k.Category == kernelclass.Other {
			nOther++
		}
	}
	ew.printf("\nCoverage: %s of kernel time (%d of %d names) is unclassified (other) in %s\n",
		breakdown.FormatPercent(frac(other, total)), nOther, len(ks), TerminalSafe(path))
	if ew.err != nil {
		return ew.err
	}
	_, err := io.WriteString(w, wrapText(buf.String(), MaxTextLine)) // the coverage line of a long path
	return err
}
