package breakdown

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/stepstat/stepstat/nsys"
)

// A boundary starts a step: the first GPU activity of the step on the device.
type boundary struct {
	start   nsys.Time
	phase   Phase
	label   string
	outside bool // the activity from here to the next boundary belongs to no step
}

// A detection is the result of one step-detection method on one device.
type detection struct {
	method Method
	detail string
	bounds []boundary // sorted by start, distinct
}

// A dialect is a family of NVTX step ranges emitted by a serving framework.
type dialect struct {
	name  string
	re    *regexp.Regexp
	phase func(m []string) Phase
}

var dialects = []dialect{
	{"TensorRT-LLM", regexp.MustCompile(`^\[Executor\] _forward_step (\d+): (\d+) ctx reqs, (\d+) gen reqs`),
		func(m []string) Phase {
			if atoi(m[2]) > 0 {
				return Prefill
			}
			if atoi(m[3]) > 0 {
				return Decode
			}
			return Unknown
		}},
	{"vLLM", regexp.MustCompile(`execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)`),
		func(m []string) Phase {
			if atoi(m[1]) > 0 {
				return Prefill
			}
			if atoi(m[3]) > 0 {
				return Decode
			}
			return Unknown
		}},
	{"plain", regexp.MustCompile(`(?i)^\s*(prefill|decode|extend|step)([^a-z].*)?$`),
		func(m []string) Phase { return phaseFromText(m[0]) }},
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

var (
	prefillWords = regexp.MustCompile(`(?i)prefill|extend|context|\bctx\b`)
	decodeWords  = regexp.MustCompile(`(?i)decode|generat`)
)

// phaseFromText guesses a phase from a step range's text.
func phaseFromText(s string) Phase {
	p, d := prefillWords.MatchString(s), decodeWords.MatchString(s)
	switch {
	case p && !d:
		return Prefill
	case d && !p:
		return Decode
	}
	return Unknown
}

// textPhase returns the phase a step range's text gives: by the first dialect that matches
// it, else by its words.
func textPhase(text string) Phase {
	for _, d := range dialects {
		if m := d.re.FindStringSubmatch(text); m != nil {
			return d.phase(m)
		}
	}
	return phaseFromText(text)
}

// hostIndex gives fast access to the API calls of the trace.
type hostIndex struct {
	t      *nsys.Trace
	graphs map[uint64]bool // keys of graph launches
	roles  []role          // what each kernel name says of its place in a layer, per NameID
}

func isLaunchLike(k nsys.APIKind) bool {
	return k == nsys.APILaunch || k == nsys.APIGraphLaunch || k == nsys.APIMemcpy || k == nsys.APIMemset
}

func newHostIndex(t *nsys.Trace) *hostIndex {
	h := &hostIndex{t: t, graphs: map[uint64]bool{}, roles: make([]role, len(t.Names))}
	for i, n := range t.Names {
		h.roles[i] = nameRole(n)
	}
	for _, c := range t.APICalls {
		if w := &t.Callers[c.Caller]; w.Kind == nsys.APIGraphLaunch {
			h.graphs[actKey(w.Proc, c.Correlation)] = true
		}
	}
	return h
}

// matchedRange is an NVTX range chosen as a step.
type matchedRange struct {
	r     nsys.Range
	phase Phase
	text  string
}

// stepRanges picks the NVTX ranges that are steps: those matching re (or, with re nil, the
// first known dialect that matches), outermost only on each thread.
func stepRanges(t *nsys.Trace, re *regexp.Regexp) ([]matchedRange, string) {
	try := func(re *regexp.Regexp, phase func([]string) Phase) []matchedRange {
		var out []matchedRange
		lastEnd := map[int64]nsys.Time{}
		// Each distinct text is matched once (a trace repeats a few texts in many ranges):
		// 0 not yet, 1 no match, 2+p matched with phase p.
		seen := make([]uint8, len(t.RangeTexts))
		for _, r := range t.Ranges {
			text := t.RangeTexts[r.Text]
			if seen[r.Text] == 0 {
				seen[r.Text] = 1
				if m := re.FindStringSubmatch(text); m != nil {
					var p Phase
					if phase != nil {
						p = phase(m)
					} else {
						p = textPhase(text) // a user regex: the whole text, not only the match
					}
					seen[r.Text] = 2 + uint8(p)
				}
			}
			if seen[r.Text] == 1 {
				continue
			}
			if e, ok := lastEnd[r.Thread]; ok && r.Start < e {
				continue // nested in (or overlapping) a step range already kept
			}
			end := r.End
			if r.Open() {
				end = 1<<63 - 1
			}
			lastEnd[r.Thread] = end
			out = append(out, matchedRange{r: r, phase: Phase(seen[r.Text] - 2), text: text})
		}
		return out
	}
	if re != nil {
		return try(re, nil), "nvtx /" + re.String() + "/"
	}
	for _, d := range dialects {
		if ms := try(d.re, d.phase); len(ms) > 0 {
			return ms, d.name + " NVTX ranges"
		}
	}
	return nil, ""
}

// nvtxDetect maps step ranges to the first GPU activity each launched on each device,
// through the launching API call's thread and correlation id (not by GPU time overlap).
func nvtxDetect(t *nsys.Trace, h *hostIndex, devs []nsys.DeviceID, re *regexp.Regexp, tls map[nsys.DeviceID]*timeline) map[nsys.DeviceID]*detection {
	ranges, detail := stepRanges(t, re)
	if len(ranges) == 0 {
		return nil
	}
	ors := make([]ownerRange, len(ranges))
	for i, mr := range ranges {
		end := mr.r.End
		if mr.r.Open() {
			end = 1<<63 - 1
		}
		ors[i] = ownerRange{mr.r.Thread, mr.r.Start, end}
	}
	lo := newLaunchOwners(t, ors, func(*nsys.Caller) bool { return true })
	// One goroutine per device, each filling its own detection.
	dets := make([]*detection, len(devs))
	var wg sync.WaitGroup
	for di, dev := range devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dets[di] = nvtxBounds(tls[dev], lo, ranges, detail)
		}()
	}
	wg.Wait()
	out := map[nsys.DeviceID]*detection{}
	for i, dev := range devs {
		if dets[i] != nil {
			out[dev] = dets[i]
		}
	}
	return out
}

// nvtxBounds maps the step ranges to a device's timeline: a step starts at the first GPU
// activity its range launched. Activity that no step range launched and that starts after
// every earlier step's work has ended (before the first step, between steps, after the last)
// belongs to no step: it gets an outside boundary. Nil when no range launched work here.
func nvtxBounds(tl *timeline, lo *launchOwners, ranges []matchedRange, detail string) *detection {
	sc := scanOwners(tl, lo)
	if len(sc.first) == 0 {
		return nil
	}
	d := &detection{method: MethodNVTX, detail: detail}
	// In range order, so that of two ranges whose work starts at the same instant
	// the earlier one always names the step.
	owners := slices.Sorted(maps.Keys(sc.first))
	type span struct{ start, end nsys.Time }
	spans := make([]span, 0, len(owners))
	for _, i := range owners {
		d.bounds = append(d.bounds, boundary{start: sc.first[i], phase: ranges[i].phase, label: ranges[i].text})
		spans = append(spans, span{sc.first[i], sc.lastEnd[i]})
	}
	d.bounds = sortBounds(d.bounds)
	// An unowned run is outside when it starts at or after the latest end of the steps
	// begun before it.
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	var out []boundary
	j := 0
	var done nsys.Time = math.MinInt64 // latest end of the steps begun so far
	for _, u := range sc.unowned {
		for j < len(spans) && spans[j].start <= u.start {
			done = max(done, spans[j].end)
			j++
		}
		if sc.stepProcs[u.proc] && (j == 0 || u.start >= done) {
			// After a step, the window outside starts where the step's work ended: the
			// step does not take the wait for work that is not its own as idle time.
			at := u.start
			if j > 0 && done > spans[j-1].start {
				at = done
			}
			out = append(out, boundary{start: at, outside: true})
		}
	}
	if len(out) > 0 {
		d.bounds = sortBounds(append(d.bounds, out...))
	}
	return d
}

// ownerScan is what one pass over a device's timeline finds of the step ranges' work.
type ownerScan struct {
	first, lastEnd map[int32]nsys.Time // per range: its work's first start and last end
	// unowned are the starts of runs of activities no step range launched, and their
	// processes: only a process that launched step work (stepProcs) can work outside its
	// steps (another process's work runs beside them).
	unowned   []unownedRun
	stepProcs []bool // by ProcID
}

type unownedRun struct {
	start nsys.Time
	proc  nsys.ProcID
}

// scanOwners looks up the owning range of each activity of the device. A graph's kernels
// share their launch's key: the owner is looked up once per run of equal keys. A step's
// activities come in runs too: the maps are updated once per run of one owner, not once per
// activity.
func scanOwners(tl *timeline, lo *launchOwners) *ownerScan {
	sc := &ownerScan{first: map[int32]nsys.Time{}, lastEnd: map[int32]nsys.Time{}, stepProcs: make([]bool, 1<<16)}
	lastKey, lastOwner, lastOK, any := uint64(0), int32(0), false, false
	cur, curEnd := int32(-1), nsys.Time(0)
	flush := func() {
		if cur >= 0 {
			sc.lastEnd[cur] = max(sc.lastEnd[cur], curEnd)
		}
	}
	prevOwned := true
	tl.each(func(a *activity) bool {
		if k := a.key(); !any || k != lastKey {
			lastKey, any = k, true
			lastOwner, lastOK = lo.owner(a.proc, a.corr)
		}
		if lastOK {
			if lastOwner != cur {
				flush()
				cur, curEnd = lastOwner, a.end
				if _, seen := sc.first[lastOwner]; !seen {
					sc.first[lastOwner] = a.start
				}
			} else {
				curEnd = max(curEnd, a.end)
			}
			sc.stepProcs[a.proc] = true
		} else if prevOwned || a.proc != sc.unowned[len(sc.unowned)-1].proc {
			sc.unowned = append(sc.unowned, unownedRun{a.start, a.proc})
		}
		prevOwned = lastOK
		return true
	})
	flush()
	return sc
}

// sortBounds sorts boundaries by start and drops duplicates (keeping the first).
func sortBounds(b []boundary) []boundary {
	sort.SliceStable(b, func(i, j int) bool { return b[i].start < b[j].start })
	out := b[:0]
	for i, x := range b {
		if i > 0 && x.start == out[len(out)-1].start {
			continue
		}
		out = append(out, x)
	}
	return out
}

// periodicDetect finds the period p of the device's kernel name sequence (findPeriod) and
// starts a step every p kernels from the first whole period that repeats: the start of the
// loop body, right after a prefill whose kernels differ. Kernels before it are one step
// (the prefill; setup in no step when under a quarter of a period); a partial period at the
// end belongs to no step.
func periodicDetect(tl *timeline) *detection {
	var names []nsys.NameID
	var starts []nsys.Time
	tl.each(func(a *activity) bool {
		if a.src == srcKernel {
			names = append(names, a.name)
			starts = append(starts, a.start)
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
	var b []boundary
	if e > 0 {
		// Kernels before the first period: the prefill, or setup when under a quarter of
		// a period (in no step).
		b = append(b, boundary{start: starts[0], outside: 4*e < p})
	}
	i := e
	for ; i+p <= n; i += p {
		b = append(b, boundary{start: starts[i]})
	}
	if i < n {
		b = append(b, boundary{start: starts[i], outside: true})
	}
	d := &detection{method: MethodPeriodic, detail: fmt.Sprintf("kernel sequence repeats every %d kernels", p), bounds: sortBounds(b)}
	if d.steps() < 2 {
		return nil
	}
	return d
}

// repeatStart returns the first index e at which names[e:e+p] equals names[e+p:e+2p], or -1.
func repeatStart(names []nsys.NameID, p int) int {
	for e := 0; e+2*p <= len(names); e++ {
		if slices.Equal(names[e:e+p], names[e+p:e+2*p]) {
			return e
		}
	}
	return -1
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

// matchNVTX matches NVTX ranges to the GPU work of each device, for the methods that use
// them (auto and nvtx); with method nvtx, no match at all is an error.
func matchNVTX(t *nsys.Trace, h *hostIndex, devs []nsys.DeviceID, tls map[nsys.DeviceID]*timeline, method string, userRe *regexp.Regexp) (map[nsys.DeviceID]*detection, error) {
	if method != "auto" && method != "nvtx" {
		return nil, nil
	}
	nvtx := nvtxDetect(t, h, devs, userRe, tls)
	if method == "nvtx" && len(nvtx) == 0 {
		what := "no NVTX range of a known step dialect"
		if userRe != nil {
			what = fmt.Sprintf("no NVTX range matching /%s/", userRe)
		}
		return nil, &nsys.Error{Path: t.Path, Err: fmt.Errorf("%s launched GPU work", what)}
	}
	return nvtx, nil
}

// detectSteps finds the steps of one device with the method asked for, or in auto mode
// the first of nvtx, graph, sync and periodic that finds any (nvtx: the device's NVTX
// detection, if any). When none does, the whole trace is one step, with a warning.
func detectSteps(t *nsys.Trace, h *hostIndex, tl *timeline, nvtx *detection, method string) (*detection, error) {
	var det *detection
	try := func(m string, f func() *detection) {
		if det == nil && (method == "auto" || method == m) {
			det = f()
		}
	}
	try("nvtx", func() *detection {
		// A single matching range in auto mode is a phase marker (warm-up, benchmark
		// loop), not a step.
		if nvtx != nil && (method == "nvtx" || nvtx.steps() >= 2) {
			return nvtx
		}
		return nil
	})
	try("auto", func() *detection { return findSteps(t, h, tl, cutSync|cutGraph|cutH2D, true) })
	try("graph", func() *detection { return findSteps(t, h, tl, cutGraph, false) })
	try("sync", func() *detection { return findSteps(t, h, tl, cutSync, false) })
	try("periodic", func() *detection { return periodicDetect(tl) })
	if det != nil {
		return det, nil
	}
	var warn error
	if method != "auto" && method != "whole" {
		warn = &NoStepsWarning{Device: tl.dev, Method: method}
	} else if method == "auto" {
		warn = fmt.Errorf("device %d: no step markers found (NVTX, graph launches, synchronisation, periodicity); the whole trace is one step", tl.dev)
	}
	det = &detection{method: MethodWhole, detail: "whole trace"}
	tl.each(func(a *activity) bool {
		det.bounds = []boundary{{start: a.start}}
		return false
	})
	return det, warn
}

// A NoStepsWarning says that the step method asked for (not auto) found no steps on a
// device, so that the whole trace is one step.
type NoStepsWarning struct {
	Device nsys.DeviceID
	Method string // the StepMethod's name
}

func (w *NoStepsWarning) Error() string {
	return fmt.Sprintf("device %d: step method %s found no steps; the whole trace is one step", w.Device, w.Method)
}
