package kernelclass

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// A Classifier assigns a category to kernel names with an ordered list of rules: user rules
// first, then the built-in ones; the first rule that matches wins. It holds no mutable state
// and is safe for concurrent use. Classify runs the rules for every call, so callers classify
// each distinct name once (as the aggregator does) rather than every launch.
type Classifier struct {
	rules []Rule
	// needles[i] lists lower-case strings one of which a name must contain (after
	// lower-casing) for rules[i] to match; nil when the rule has no such requirement. It
	// spares most regular-expression runs: demangled names run to kilobytes.
	needles [][]string
}

// DefaultClassifier returns a classifier with the built-in rules only.
func DefaultClassifier() *Classifier {
	return NewClassifier(nil)
}

// NewClassifier returns a classifier that tries the extra rules, in order, ahead of the
// built-in ones. Rules with a nil Match, or whose category is Other, UntracedGraph, Idle or
// out of range, cannot assign a kernel category and are left out.
func NewClassifier(extra []Rule) *Classifier {
	rules := make([]Rule, 0, len(extra)+len(builtinRules))
	for _, r := range extra {
		if r.Match == nil || r.Category == Other || !r.Category.Assignable() {
			continue
		}
		rules = append(rules, r)
	}
	rules = append(rules, builtinRules...)
	needles := make([][]string, len(rules))
	for i, r := range rules {
		needles[i] = requiredSubstrings(r.Match)
	}
	return &Classifier{rules: rules, needles: needles}
}

// Classify returns the category of the kernel with the given demangled name and the rule
// that matched it, or Other and a nil rule when no rule matches. The category is Other
// exactly when the rule is nil. The returned rule belongs to c and must not be modified.
// Any string is accepted.
func (c *Classifier) Classify(name string) (Category, *Rule) {
	lower, ascii := strings.ToLower(name), isASCII(name)
	for i := range c.rules {
		if ascii && !containsAny(lower, c.needles[i]) {
			continue
		}
		r := &c.rules[i]
		if r.Match.MatchString(name) {
			return r.Category, r
		}
	}
	return Other, nil
}

// Rules returns a copy of the classifier's rules in match order.
func (c *Classifier) Rules() []Rule {
	return append([]Rule(nil), c.rules...)
}

// containsAny reports whether s contains one of the needles; a nil list always matches.
func containsAny(s string, needles []string) bool {
	if needles == nil {
		return true
	}
	for _, n := range needles {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// requiredSubstrings returns lower-case ASCII strings one of which every ASCII string that
// re matches contains in lower case, or nil when the expression has no such requirement
// (it can match without a literal, or a literal is not ASCII).
func requiredSubstrings(re *regexp.Regexp) []string {
	if re == nil {
		return nil
	}
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	set, ok := literalRequirement(t.Simplify())
	if !ok {
		return nil
	}
	return set
}

// literalRequirement returns a set of lower-case strings one of which any match of re
// contains; ok is false when there is no such set.
func literalRequirement(re *syntax.Regexp) (set []string, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		s := strings.ToLower(string(re.Rune))
		if s == "" || !isASCII(s) {
			return nil, false
		}
		return []string{s}, true
	case syntax.OpCapture, syntax.OpPlus:
		return literalRequirement(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return literalRequirement(re.Sub[0])
		}
	case syntax.OpConcat:
		// The sub-expression whose shortest required string is longest filters best.
		best, bestLen := []string(nil), 0
		for _, sub := range re.Sub {
			s, ok := literalRequirement(sub)
			if !ok {
				continue
			}
			n := len(s[0])
			for _, x := range s[1:] {
				n = min(n, len(x))
			}
			if n > bestLen {
				best, bestLen = s, n
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			s, ok := literalRequirement(sub)
			if !ok {
				return nil, false
			}
			set = append(set, s...)
		}
		return set, true
	}
	return nil, false
}
