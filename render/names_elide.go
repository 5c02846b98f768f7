package render

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
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
	return tellApart(rs, out, limits)
}

// tellApart makes the elided names of different names different: the names of a group
// that elide to one label (a grid of variants differing in two places: the first
// difference from one neighbour hides the other's) are elided again keeping every place
// where they differ from the other names that clash (elideSpots); those still alike (or
// too long) get a short disambiguator, "~2" for the second of them in sorted order.
func tellApart(rs [][]rune, out []string, limits []int) []string {
	for pass := 0; pass < 2; pass++ {
		groups := map[string][]int{}
		for i := range out {
			groups[out[i]] = append(groups[out[i]], i)
		}
		var clashing []int
		for _, g := range groups {
			distinct := false
			for _, j := range g[1:] {
				distinct = distinct || !slices.Equal(rs[j], rs[g[0]])
			}
			if !distinct {
				continue
			}
			clashing = append(clashing, g...)
		}
		if len(clashing) == 0 {
			break
		}
		if pass == 0 {
			// Kept apart from every name that clashes, not only from its own group: two
			// groups (alike in the tile, differing in the stages) elided again each against
			// its own would meet.
			for _, i := range clashing {
				out[i] = elideSpots(rs[i], clashing, rs, limits[i])
			}
			continue
		}
		// Still alike: a disambiguator numbering the distinct names among all that clash
		// (so that two groups' tags cannot meet).
		slices.SortStableFunc(clashing, func(a, b int) int { return slices.Compare(rs[a], rs[b]) })
		rank := 0
		for k, i := range clashing {
			if k > 0 && !slices.Equal(rs[i], rs[clashing[k-1]]) {
				rank++
			}
			tag := "~" + strconv.Itoa(rank+1)
			lim := max(limits[i]-len(tag), 1)
			if len(rs[i]) <= lim {
				out[i] = string(rs[i]) + tag
			} else {
				out[i] = elideNames([]string{string(rs[i])}, lim)[0] + tag
			}
		}
	}
	return out
}

// elideSpots shortens r to at most limit runes keeping its head, its tail, and a window
// around each place it differs from the other names of its group (the first rune that
// differs from each, and the last), elided between them with "…"; when the windows do
// not fit, r elided as elideOne does with no context.
func elideSpots(r []rune, group []int, rs [][]rune, limit int) string {
	var spots []int
	for _, j := range group {
		o := rs[j]
		if slices.Equal(o, r) {
			continue
		}
		p := commonPrefix(r, o)
		q := len(r) - commonSuffix(r, o)
		spots = append(spots, p, max(q-1, p))
	}
	slices.Sort(spots)
	spots = slices.Compact(spots)
	for win := 8; win >= 1; win /= 2 {
		keep := make([]bool, len(r))
		head, tail := min(elideHead, limit/4), min(elideTail/2, limit/6)
		for k := 0; k < head && k < len(r); k++ {
			keep[k] = true
		}
		for k := max(0, len(r)-tail); k < len(r); k++ {
			keep[k] = true
		}
		for _, sp := range spots {
			for k := max(0, sp-win/2); k < len(r) && k <= sp+win; k++ {
				keep[k] = true
			}
		}
		var b strings.Builder
		n := 0
		for k := 0; k < len(r); k++ {
			if keep[k] {
				b.WriteRune(r[k])
				n++
			} else if k == 0 || keep[k-1] {
				b.WriteString("…")
				n++
			}
		}
		if n <= limit {
			return b.String()
		}
	}
	return elideOne(r, 0, 0, limit)
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
