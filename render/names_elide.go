package render

import (
	"cmp"
	"slices"
	"unicode/utf8"
)

// elideNames shortens the names longer than limit runes so that the rows of one table stay
// told apart: what a name shares with the other names of the table (the head of a template,
// the tail of an argument list) is elided with "…", what differs is kept. Each name keeps a
// head (up to elideHead runes, the kernel's own name for a templated one), the runes from
// a little before where it first differs from the most alike other name, and its last
// elideTail runes. Names within limit are returned unchanged; the result of a longer name
// is at most limit runes. Elision is for text and for the cells of HTML tables, which show
// the whole name on hover.
func elideNames(names []string, limit int) []string {
	limits := make([]int, len(names))
	for i := range limits {
		limits[i] = limit
	}
	return elideNamesEach(names, limits)
}

// elideNamesEach is elideNames with a limit for each name (a table whose rows hold other
// columns of varying width).
func elideNamesEach(names []string, limits []int) []string {
	rs := make([][]rune, len(names))
	long := false
	for i, n := range names {
		rs[i] = []rune(n)
		long = long || len(rs[i]) > limits[i]
	}
	out := slices.Clone(names)
	if !long {
		return out
	}
	// The longest prefix a name shares with another name is the one it shares with a
	// neighbour in sorted order (the nearest one that is not the same name); the longest
	// suffix likewise among the names reversed.
	pre := sharedRuns(rs, commonPrefix, func(a, b []rune) int { return slices.Compare(a, b) })
	suf := sharedRuns(rs, commonSuffix, func(a, b []rune) int {
		for k := 1; k <= len(a) && k <= len(b); k++ {
			if c := cmp.Compare(a[len(a)-k], b[len(b)-k]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(a), len(b))
	})
	for i, r := range rs {
		if len(r) > limits[i] {
			out[i] = elideOne(r, pre[i], suf[i], limits[i])
		}
	}
	return out
}

// sharedRuns returns, for each name, the longest run (by common) it shares with another,
// different name: the longer of its runs with its nearest different neighbours in the
// order of compare.
func sharedRuns(rs [][]rune, common func(a, b []rune) int, compare func(a, b []rune) int) []int {
	idx := make([]int, len(rs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return compare(rs[a], rs[b]) })
	best := make([]int, len(rs))
	for k, i := range idx {
		for _, step := range []int{-1, 1} {
			for j := k + step; j >= 0 && j < len(idx); j += step {
				if o := rs[idx[j]]; !slices.Equal(o, rs[i]) {
					best[i] = max(best[i], common(rs[i], o))
					break
				}
			}
		}
	}
	return best
}

// Parts of a name kept by elideNames: its head, the context before the first rune that
// differs, its tail.
const (
	elideHead    = 40
	elideContext = 12
	elideTail    = 24
)

// elideOne shortens r to at most limit runes, keeping its head, the part after the first
// pre runes (shared with another name) and before its last suf runes (shared too), and
// its tail.
func elideOne(r []rune, pre, suf, limit int) string {
	if limit < 8 {
		return string(r[:limit])
	}
	if pre+suf >= len(r) { // no other name shares both ends: the name's own middle
		pre, suf = len(r)/2, 0
	}
	head := min(elideHead, limit/3)
	tail := min(elideTail, limit/4)
	from := max(pre-elideContext, head) // the differing part, with some context
	to := min(len(r)-suf, len(r)-tail)
	if to < from {
		to = from
	}
	// head … middle … tail, with each "…" dropped when nothing is elided there.
	build := func(mid int) string {
		s := string(r[:head])
		if from > head {
			s += "…"
		}
		end := min(from+mid, to)
		s += string(r[from:end])
		if len(r)-tail > end {
			s += "…"
		}
		return s + string(r[len(r)-tail:])
	}
	room := limit - head - tail - 2
	if room < 0 {
		return string(r[:limit-1]) + "…"
	}
	s := build(room)
	for utf8.RuneCountInString(s) > limit && room > 0 {
		room--
		s = build(room)
	}
	return s
}

func commonPrefix(a, b []rune) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func commonSuffix(a, b []rune) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}
