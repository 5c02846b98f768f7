package render

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// ClassifyText writes every distinct kernel name with its category, matching rule, count,
// total time and share, unclassified names first, then a coverage line.
func ClassifyText(w io.Writer, path string, ks []breakdown.KernelStat) error {
	var buf strings.Builder
	ew := &errWriter{w: &buf}
	out, total, other := classifyOrder(ks)
	ew.printf("%10s %7s %7s  %-12s %-22s %s\n", "total", "share", "count", "category", "rule", "name")
	// Names are elided to keep each row within MaxTextLine (the JSON has them whole).
	// Rules too (FILE:LINE of a rules file deep in folders), told apart, to maxRuleText.
	names := make([]string, len(out))
	rules := make([]string, len(out))
	limits := make([]int, len(out))
	for i, k := range out {
		names[i] = TerminalSafe(k.Name)
		rules[i] = TerminalSafe(k.Rule)
		if rules[i] == "" {
			rules[i] = "-"
		}
	}
	rules = elideNames(rules, maxRuleText)
	for i := range out {
		rule := max(22, utf8.RuneCountInString(rules[i]))
		limits[i] = max(MaxTextLine-(10+1+7+1+7+2+12+1+rule+1), 40)
	}
	names = elideNamesEach(names, limits)
	for i, k := range out {
		ew.printf("%10s %7s %7d  %-12s %-22s %s\n", breakdown.FormatDuration(int64(k.Total)), breakdown.FormatPercent(frac(int64(k.Total), total)), k.Count,
			k.Category, rules[i], names[i])
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

// maxRuleText is the widest rule name classify's text shows (elided, told apart).
const maxRuleText = 40
