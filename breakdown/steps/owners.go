package steps

import (
	"cmp"
	"slices"
	"sort"

	"github.com/stepstat/stepstat/nsys"
)

// LaunchOwners answers "which NVTX range launched the work with this key?" in memory
// proportional to the number of ranges, not of launches.
//
// CUPTI gives a process's API calls increasing correlation ids, so the launches a range's
// thread made inside the range span an interval [lo, hi] of correlation ids. The interval
// identifies them exactly unless another thread of the process launched work with an id
// inside it (or another range's interval overlaps); those ranges keep explicit keys instead.
type LaunchOwners struct {
	spans []corrSpan // exact intervals, by (proc, lo)
	keys  []keyOwner // explicit keys of the other ranges, by key
}

type corrSpan struct {
	proc   nsys.ProcID
	lo, hi uint32
	owner  int32
}

// keyOwner says which range launched the work with this key.
type keyOwner struct {
	key   uint64
	owner int32
}

// OwnerRange is a range whose launches are to be owned: calls of Thread within [Start, End].
type OwnerRange struct {
	Thread     int64
	Start, End nsys.Time
}

// callsIn calls fn with the index of each launch-like call of t that starts within [s, e].
func callsIn(t *nsys.Trace, s, e nsys.Time, fn func(i int)) {
	calls := t.APICalls
	i := sort.Search(len(calls), func(i int) bool { return calls[i].Start >= s })
	for ; i < len(calls) && calls[i].Start <= e; i++ {
		if isLaunchLike(t.Callers[calls[i].Caller].Kind) {
			fn(i)
		}
	}
}

// NewLaunchOwners builds the owner table of ranges; ok(w) filters the calls that count by
// their caller.
func NewLaunchOwners(t *nsys.Trace, ranges []OwnerRange, ok func(w *nsys.Caller) bool) *LaunchOwners {
	lo := &LaunchOwners{}
	calls := t.APICalls
	var inexact []int
	// One pass over each range's calls: the interval of its own launches, and the other
	// calls (other threads', or ones that do not count), checked against the interval
	// once it is known.
	type other struct {
		proc nsys.ProcID
		corr uint32
	}
	var others []other // scratch, reused from range to range
	for i, r := range ranges {
		sp := corrSpan{owner: int32(i)}
		n := 0
		others = others[:0]
		callsIn(t, r.Start, r.End, func(j int) {
			c := &calls[j]
			w := &t.Callers[c.Caller]
			if w.Thread != r.Thread || !ok(w) {
				others = append(others, other{w.Proc, c.Correlation})
				return
			}
			if n == 0 || c.Correlation < sp.lo {
				sp.lo = c.Correlation
			}
			if n == 0 || c.Correlation > sp.hi {
				sp.hi = c.Correlation
			}
			sp.proc = w.Proc
			n++
		})
		if n == 0 {
			continue
		}
		exact := true
		for _, o := range others {
			if o.proc == sp.proc && o.corr >= sp.lo && o.corr <= sp.hi {
				exact = false
				break
			}
		}
		if exact {
			lo.spans = append(lo.spans, sp)
		} else {
			inexact = append(inexact, i)
		}
	}
	slices.SortFunc(lo.spans, func(a, b corrSpan) int {
		if c := cmp.Compare(a.proc, b.proc); c != 0 {
			return c
		}
		return cmp.Compare(a.lo, b.lo)
	})
	// Overlapping intervals (ranges on two threads of one process) are not exact either.
	keep := lo.spans[:0]
	for k := 0; k < len(lo.spans); k++ {
		s := lo.spans[k]
		overlap := (k > 0 && lo.spans[k-1].proc == s.proc && lo.spans[k-1].hi >= s.lo) ||
			(k+1 < len(lo.spans) && lo.spans[k+1].proc == s.proc && lo.spans[k+1].lo <= s.hi)
		if overlap {
			inexact = append(inexact, int(s.owner))
			continue
		}
		keep = append(keep, s)
	}
	lo.spans = keep
	for _, i := range inexact {
		r := ranges[i]
		callsIn(t, r.Start, r.End, func(j int) {
			c := &calls[j]
			w := &t.Callers[c.Caller]
			if w.Thread == r.Thread && ok(w) {
				lo.keys = append(lo.keys, keyOwner{actKey(w.Proc, c.Correlation), int32(i)})
			}
		})
	}
	slices.SortFunc(lo.keys, func(a, b keyOwner) int { return cmp.Compare(a.key, b.key) })
	return lo
}

// Owner returns the range that launched the work of (proc, corr).
func (lo *LaunchOwners) Owner(proc nsys.ProcID, corr uint32) (int32, bool) {
	if len(lo.keys) > 0 {
		k := actKey(proc, corr)
		if i, ok := slices.BinarySearchFunc(lo.keys, k, func(o keyOwner, k uint64) int { return cmp.Compare(o.key, k) }); ok {
			return lo.keys[i].owner, true
		}
	}
	// The last span with (proc, lo) <= (proc, corr).
	i := sort.Search(len(lo.spans), func(i int) bool {
		s := lo.spans[i]
		return s.proc > proc || (s.proc == proc && s.lo > corr)
	}) - 1
	if i >= 0 && lo.spans[i].proc == proc && corr <= lo.spans[i].hi {
		return lo.spans[i].owner, true
	}
	return 0, false
}

// MergeOwnerRanges merges the ranges of each thread that overlap or nest into one, for
// owner tables that only answer "inside some range of the rule?" (the NVTX category mapping): N
// nested matching ranges each spanning every launch would cost N x launches in keys and
// time; merged, each launch is looked at once. rs must be sorted by start.
func MergeOwnerRanges(rs []OwnerRange) []OwnerRange {
	open := map[int64]int{} // thread -> index in out of its last merged range
	out := rs[:0:0]
	for _, r := range rs {
		if i, ok := open[r.Thread]; ok && r.Start <= out[i].End {
			out[i].End = max(out[i].End, r.End)
			continue
		}
		open[r.Thread] = len(out)
		out = append(out, r)
	}
	return out
}
