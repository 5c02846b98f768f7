package steps

import (
	"fmt"
	"sort"

	"github.com/stepstat/stepstat/nsys"
)

// periodicDetect finds the period p of the device's kernel name sequence (findPeriod) and
// starts a step every p kernels from the first whole period that repeats: the start of the
// loop body, right after a prefill whose kernels differ. Kernels before it are one step
// (the prefill; setup in no step when under a quarter of a period); a partial period at the
// end belongs to no step.
func periodicDetect(tl *Timeline) *Detection {
	var names []nsys.NameID
	var starts []nsys.Time
	tl.Each(func(a *Activity) bool {
		if a.Src == SrcKernel {
			names = append(names, a.Name)
			starts = append(starts, a.Start)
		}
		return true
	})
	n := len(names)
	if n < 4 {
		return nil
	}
	p := findPeriod(names)
	if p == 0 {
		return nil
	}
	e := max(repeatStart(names, p), 0)
	var b []Boundary
	if e > 0 {
		// Kernels before the first period: the prefill, or setup when under a quarter of
		// a period (in no step).
		b = append(b, Boundary{Start: starts[0], Outside: 4*e < p, By: CutPeriodicity})
	}
	i := e
	for ; i+p <= n; i += p {
		b = append(b, Boundary{Start: starts[i], By: CutPeriodicity})
	}
	if i < n {
		b = append(b, Boundary{Start: starts[i], Outside: true})
	}
	d := &Detection{Method: MethodPeriodic, Detail: fmt.Sprintf("kernel sequence repeats every %d kernels", p), Bounds: sortBounds(b)}
	if d.steps() < 2 {
		return nil
	}
	return d
}

// repeatStart returns the first index e at which names[e:e+p] equals names[e+p:e+2p], or -1.
// It slides a window of p over the positions where the sequence differs from itself p
// later, so it takes time linear in len(names) whatever p is.
func repeatStart(names []nsys.NameID, p int) int {
	n := len(names)
	if p < 1 || 2*p > n {
		return -1
	}
	differs := func(i int) int {
		if names[i] != names[i+p] {
			return 1
		}
		return 0
	}
	bad := 0 // positions in [e, e+p) that differ from p later
	for i := range p {
		bad += differs(i)
	}
	for e := 0; ; e++ {
		if bad == 0 {
			return e
		}
		if e+2*p >= n {
			return -1
		}
		bad += differs(e+p) - differs(e)
	}
}

// findPeriod returns the smallest period of names with at least two repetitions and a 90%
// match, or 0. Candidate periods are the typical distances between occurrences of names
// that occur rarely (once per period).
func findPeriod(names []nsys.NameID) int {
	n := len(names)
	count := map[nsys.NameID]int{}
	for _, x := range names {
		count[x]++
	}
	// Candidates: for names seen 2..n/2 times, the median distance between occurrences.
	var cs []periodCand
	for x, c := range count {
		if c >= 2 && c <= n/2 {
			cs = append(cs, periodCand{x, c})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].c != cs[j].c {
			return cs[i].c < cs[j].c
		}
		return cs[i].name < cs[j].name
	})
	if len(cs) > 16 {
		cs = cs[:16]
	}
	ps := candidatePeriods(names, cs)
	// A step's layers repeat too, so a layer's length also matches at most positions; but it
	// fails at every step boundary, while the step's own period matches (almost) everywhere.
	// Take the best match; among periods within 0.2% of it, the smallest (multiples of the
	// true period match as well).
	type scored struct {
		p int
		f float64
	}
	var sc []scored
	bestF := 0.0
	for _, p := range ps {
		match := 0
		for i := 0; i+p < n; i++ {
			if names[i] == names[i+p] {
				match++
			}
		}
		f := float64(match) / float64(n-p)
		sc = append(sc, scored{p, f})
		bestF = max(bestF, f)
	}
	if bestF < 0.9 {
		return 0
	}
	for _, s := range sc {
		if s.f >= bestF-0.002 {
			return s.p
		}
	}
	return 0
}

// periodCand is a name that occurs c times, whose spacing suggests a period.
type periodCand struct {
	name nsys.NameID
	c    int
}

// candidatePeriods returns the candidate periods of names, ascending, from 1 to n/2: the
// median spacing of each candidate name, n over its count, and the exact periods of the
// sequence and of its later parts.
func candidatePeriods(names []nsys.NameID, cs []periodCand) []int {
	n := len(names)
	periods := map[int]bool{}
	for _, c := range cs {
		var pos []int
		for i, x := range names {
			if x == c.name {
				pos = append(pos, i)
			}
		}
		d := make([]int, 0, len(pos)-1)
		for i := 1; i < len(pos); i++ {
			d = append(d, pos[i]-pos[i-1])
		}
		sort.Ints(d)
		periods[d[len(d)/2]] = true
		// The period may be a multiple of a name's spacing (a name used once per layer).
		periods[n/c.c] = true
	}
	// Exact periods of the whole sequence and of its later parts (past a prefill that differs).
	for _, from := range []int{0, n / 4, n / 2} {
		if p := kmpPeriod(names[from:]); p > 0 {
			periods[p] = true
		}
	}
	var ps []int
	for p := range periods {
		if p >= 1 && p <= n/2 {
			ps = append(ps, p)
		}
	}
	sort.Ints(ps)
	return ps
}

// kmpPeriod returns the smallest exact period of s when s repeats at least twice, else 0.
func kmpPeriod(s []nsys.NameID) int {
	n := len(s)
	if n < 4 {
		return 0
	}
	pi := make([]int32, n)
	for i := 1; i < n; i++ {
		k := pi[i-1]
		for k > 0 && s[i] != s[k] {
			k = pi[k-1]
		}
		if s[i] == s[k] {
			k++
		}
		pi[i] = k
	}
	p := n - int(pi[n-1])
	if p <= n/2 {
		return p
	}
	return 0
}
