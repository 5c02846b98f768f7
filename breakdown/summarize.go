package breakdown

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// Summarize classifies the trace's kernels (each distinct name once), finds steps on each
// device, and accounts every step's wall time to categories.
func Summarize(t *nsys.Trace, opt Options) (*Report, error) {
	if !t.HasGPUActivity() {
		return nil, &nsys.Error{Path: t.Path, Err: nsys.ErrNoGPUActivity}
	}
	cls := opt.Classifier
	if cls == nil {
		cls = kernelclass.DefaultClassifier()
	}
	if err := checkSOL(opt); err != nil {
		return nil, optionError(opt, err)
	}
	rep := &Report{Path: t.Path, Meta: t.Meta}
	rep.Warnings = append(rep.Warnings, t.Warnings...)

	cats, rules := classifyNames(t, cls)
	h := newHostIndex(t)
	over := nvtxOverrides(t, opt.NVTXCategories)
	// The whole-trace kernel table is independent of the steps: build it on the other core.
	kernelsDone := make(chan []KernelStat, 1)
	go func() { kernelsDone <- kernelStats(t, cats, rules, over) }()
	defer func() {
		if rep.Kernels == nil {
			<-kernelsDone // on an early error return, do not leave the goroutine behind
		}
	}()

	devs := make([]nsys.DeviceID, 0, len(t.Devices))
	for _, d := range t.Devices {
		if opt.Device == nil || *opt.Device == d.ID {
			devs = append(devs, d.ID)
		}
	}
	if len(devs) == 0 {
		var have []string
		for _, d := range t.Devices {
			have = append(have, fmt.Sprint(d.ID))
		}
		return nil, &nsys.Error{Path: t.Path, Err: fmt.Errorf("no activity on device %d (devices with activity: %s)", *opt.Device, strings.Join(have, ", "))}
	}
	tls := map[nsys.DeviceID]*timeline{}
	for _, d := range devs {
		tls[d] = &timeline{t: t, dev: d, cats: cats, over: over}
	}

	method, userRe, err := parseSteps(opt.Steps)
	if err != nil {
		return nil, err
	}
	var nvtx map[nsys.DeviceID]*detection
	if method == "auto" || method == "nvtx" {
		nvtx = nvtxDetect(t, h, devs, userRe, tls)
		if method == "nvtx" && len(nvtx) == 0 {
			what := "no NVTX range of a known step dialect"
			if userRe != nil {
				what = fmt.Sprintf("no NVTX range matching /%s/", userRe)
			}
			return nil, &nsys.Error{Path: t.Path, Err: fmt.Errorf("%s launched GPU work", what)}
		}
	}
	// Devices are independent once NVTX ranges are matched: one goroutine each.
	drs := make([]DeviceReport, len(devs))
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for i, dev := range devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			drs[i], errs[i] = deviceReport(t, h, tls[dev], nvtx[dev], method, opt)
		}()
	}
	wg.Wait()
	for i := range devs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		rep.Devices = append(rep.Devices, drs[i])
	}
	rep.Kernels = <-kernelsDone
	var other time.Duration
	var total time.Duration
	for _, k := range rep.Kernels {
		total += k.Total
		if k.Category == kernelclass.Other {
			other += k.Total
		}
	}
	if total > 0 && float64(other)/float64(total) > 0.05 {
		rep.Warnings = append(rep.Warnings, fmt.Errorf("%.1f%% of kernel time is in unclassified kernels (other); 'stepstat classify' lists them", 100*float64(other)/float64(total)))
	}
	for _, d := range rep.Devices {
		rep.Warnings = append(rep.Warnings, d.Warnings...)
	}
	if rep.Ranks = rankReport(t, tls, rep, opt); rep.Ranks != nil {
		rep.Warnings = append(rep.Warnings, rep.Ranks.Warnings...)
	}
	return rep, nil
}

// deviceReport finds the steps of one device (nvtx: its NVTX detection, if any) and
// accounts them.
func deviceReport(t *nsys.Trace, h *hostIndex, tl *timeline, nvtx *detection, method string, opt Options) (DeviceReport, error) {
	dev := tl.dev
	var det *detection
	try := func(m string, f func() *detection) {
		if det == nil && (method == "auto" || method == m) {
			det = f()
		}
	}
	try("nvtx", func() *detection {
		// A single matching range in auto mode is a phase marker (warm-up, benchmark
		// loop), not a step.
		if nvtx != nil && (method == "nvtx" || len(nvtx.bounds) >= 2) {
			return nvtx
		}
		return nil
	})
	try("graph", func() *detection { return graphDetect(h, tl) })
	try("sync", func() *detection { return syncDetect(t, h, tl) })
	try("periodic", func() *detection { return periodicDetect(tl) })
	dr := DeviceReport{Device: dev}
	if d, ok := t.Device(dev); ok {
		dr.GPU = d.Name
	}
	if det == nil {
		if method != "auto" && method != "whole" {
			dr.Warnings = append(dr.Warnings, fmt.Errorf("device %d: --steps %s found no steps; the whole trace is one step", dev, method))
		} else if method == "auto" {
			dr.Warnings = append(dr.Warnings, fmt.Errorf("device %d: no step markers found (NVTX, graph launches, synchronisation, periodicity); the whole trace is one step", dev))
		}
		det = &detection{method: MethodWhole, detail: "whole trace"}
		tl.each(func(a *activity) bool {
			det.bounds = []boundary{{start: a.start}}
			return false
		})
	}
	dr.Method, dr.MethodDetail = det.method, det.detail
	steps, shapes := account(t, h, tl, det)
	if det.method != MethodWhole {
		inferPhases(steps, shapes)
	}
	if opt.Skip > 0 {
		dr.Skipped = min(opt.Skip, len(steps))
		steps = steps[dr.Skipped:]
	}
	dr.Steps = steps
	var err error
	dr.Summary, err = summarize(steps, opt)
	if err != nil {
		dr.Warnings = append(dr.Warnings, fmt.Errorf("device %d: %w", dev, err))
	}
	if dr.SOL, err = deviceSOL(&dr, opt); err != nil {
		return dr, optionError(opt, err)
	}
	return dr, nil
}

// optionError passes an error in the options through Options.UsageError.
func optionError(opt Options, err error) error {
	if opt.UsageError != nil {
		return opt.UsageError(err)
	}
	return err
}

// CheckSteps reports whether s is a valid Options.Steps value (the --steps flag), with an
// error a command line can show.
func CheckSteps(s string) error {
	_, _, err := parseSteps(s)
	return err
}

func parseSteps(s string) (method string, re *regexp.Regexp, err error) {
	switch {
	case s == "" || s == "auto":
		return "auto", nil, nil
	case strings.HasPrefix(s, "nvtx:"):
		re, err := regexp.Compile(strings.TrimPrefix(s, "nvtx:"))
		if err != nil {
			return "", nil, fmt.Errorf("--steps: bad regular expression: %w", err)
		}
		return "nvtx", re, nil
	case s == "nvtx", s == "graph", s == "sync", s == "periodic", s == "whole":
		return s, nil, nil
	}
	return "", nil, fmt.Errorf("--steps: unknown method %q (want auto, nvtx, nvtx:REGEX, graph, sync, periodic or whole)", s)
}

// overrides assigns categories to kernels launched inside NVTX ranges (--nvtx-category).
type overrides struct {
	rules []*launchOwners // one per rule, in rule order: the first match wins
	cats  []kernelclass.Category
}

// category returns the category the first matching rule gives the launch (proc, corr).
func (o *overrides) category(proc nsys.ProcID, corr uint32) (kernelclass.Category, bool) {
	if o == nil {
		return 0, false
	}
	for i, lo := range o.rules {
		if _, ok := lo.owner(proc, corr); ok {
			return o.cats[i], true
		}
	}
	return 0, false
}

// nvtxOverrides builds the --nvtx-category rules; nil when there are none.
func nvtxOverrides(t *nsys.Trace, rules []NVTXCategory) *overrides {
	if len(rules) == 0 {
		return nil
	}
	o := &overrides{}
	for _, rl := range rules {
		matches := make([]bool, len(t.RangeTexts))
		for j, s := range t.RangeTexts {
			matches[j] = rl.Match.MatchString(s)
		}
		var rs []ownerRange
		for _, r := range t.Ranges {
			if !matches[r.Text] {
				continue
			}
			end := r.End
			if r.Open() {
				end = 1<<63 - 1
			}
			rs = append(rs, ownerRange{r.Thread, r.Start, end})
		}
		o.rules = append(o.rules, newLaunchOwners(t, rs, func(w *nsys.Caller) bool {
			return w.Kind == nsys.APILaunch || w.Kind == nsys.APIGraphLaunch
		}))
		o.cats = append(o.cats, rl.Category)
	}
	return o
}

// KernelStats classifies the trace's kernels (each distinct name once, NVTX category rules
// applied per launch) and totals them per name and category over the whole trace, by total
// time, descending.
func KernelStats(t *nsys.Trace, opt Options) []KernelStat {
	cls := opt.Classifier
	if cls == nil {
		cls = kernelclass.DefaultClassifier()
	}
	cats, rules := classifyNames(t, cls)
	return kernelStats(t, cats, rules, nvtxOverrides(t, opt.NVTXCategories))
}

// classifyNames classifies each distinct kernel name once.
func classifyNames(t *nsys.Trace, cls *kernelclass.Classifier) ([]kernelclass.Category, []string) {
	cats := make([]kernelclass.Category, len(t.Names))
	rules := make([]string, len(t.Names))
	for i, name := range t.Names {
		c, r := cls.Classify(name)
		cats[i] = c
		if r != nil {
			rules[i] = r.Name
		}
	}
	return cats, rules
}

// kernelStats totals kernels per distinct name over the whole trace; a name whose launches
// NVTX category rules moved gets a row per category.
func kernelStats(t *nsys.Trace, cats []kernelclass.Category, rules []string, over *overrides) []KernelStat {
	type key struct {
		name nsys.NameID
		cat  kernelclass.Category
	}
	type acc struct {
		n     int
		total time.Duration
	}
	per := map[key]*acc{}
	if over == nil {
		// Without NVTX rules a name has one category: totals per site in a slice (a map
		// lookup per kernel costs several times more), then per name, then one map entry
		// per distinct name.
		bySite := make([]acc, len(t.Sites))
		for i := range t.Kernels {
			k := &t.Kernels[i]
			bySite[k.Site].n++
			bySite[k.Site].total += k.Duration()
		}
		byName := make([]acc, len(t.Names))
		for s, a := range bySite {
			n := t.Sites[s].Name
			byName[n].n += a.n
			byName[n].total += a.total
		}
		for id := range byName {
			if byName[id].n > 0 {
				per[key{nsys.NameID(id), cats[id]}] = &byName[id]
			}
		}
	} else {
		for i := range t.Kernels {
			k := &t.Kernels[i]
			st := &t.Sites[k.Site]
			kk := key{st.Name, cats[st.Name]}
			if c, ok := over.category(st.Proc, k.Correlation); ok {
				kk.cat = c
			}
			a := per[kk]
			if a == nil {
				a = &acc{}
				per[kk] = a
			}
			a.n++
			a.total += k.Duration()
		}
	}
	out := make([]KernelStat, 0, len(per))
	for kk, a := range per {
		ks := KernelStat{Name: t.Names[kk.name], Category: kk.cat, Rule: rules[kk.name], Count: a.n, Total: a.total}
		if kk.cat != cats[kk.name] {
			ks.Rule = "nvtx-category"
		}
		if nk, ok := kernelclass.DecodeNCCL(ks.Name); ok {
			ks.NCCL = &nk
		}
		out = append(out, ks)
	}
	slices.SortFunc(out, func(a, b KernelStat) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.Category, b.Category)
	})
	return out
}

// endHeap is a min-heap of running activities by end time. It is typed (not
// container/heap) so that pushing an activity does not allocate.
type endHeap []runningAct

type runningAct struct {
	end nsys.Time
	cat kernelclass.Category
}

func (h *endHeap) push(x runningAct) {
	*h = append(*h, x)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].end <= a[i].end {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *endHeap) pop() runningAct {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a[l].end < a[m].end {
			m = l
		}
		if r < n && a[r].end < a[m].end {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// account sweeps the device's activities once and fills the steps' exclusive and busy time,
// kernel and launch counts, and idle gaps. Step i covers [bound i, bound i+1); the last step
// ends at the last end of the activities that start in it. Long timelines are swept in two
// halves at once, split at a step boundary (see accountSplit).
func account(t *nsys.Trace, h *hostIndex, tl *timeline, det *detection) ([]Step, []stepShape) {
	m := 0
	if len(det.bounds) >= 4 && len(t.Kernels) >= splitKernels {
		m = splitPoint(len(det.bounds))
	}
	return accountSplit(t, h, tl, det, m)
}

// Variables for tests: the size of trace from which account sweeps two halves at once,
// and the step where the second half starts.
var (
	splitKernels = 1 << 20
	splitPoint   = func(steps int) int { return steps / 2 }
)

// accountSplit is account with the steps from m on swept on their own goroutine (m = 0:
// one sweep). The second half starts at B, the start of step m, knowing the activities
// still running then, so that it gives every instant the owner one sweep would; the first
// half stops at B and hands over the busy time of activities that run past it. Graph
// launches whose kernels fall on both sides are counted once, in the first half, as one
// sweep would. The result is the same as one sweep's, to the nanosecond (TestAccountSplit).
func accountSplit(t *nsys.Trace, h *hostIndex, tl *timeline, det *detection, m int) ([]Step, []stepShape) {
	steps := make([]Step, len(det.bounds))
	shapes := make([]stepShape, len(det.bounds))
	for i, b := range det.bounds {
		steps[i] = Step{Index: i, Phase: b.phase, Label: b.label, Start: b.start}
		if i+1 < len(det.bounds) {
			steps[i].End = det.bounds[i+1].start
		}
	}
	last := &steps[len(steps)-1]
	last.End = last.Start
	if m <= 0 || m >= len(steps) {
		w := newSweep(t, h, tl, steps, shapes, 0, len(steps))
		tl.each(w.add)
		w.finish(math.MaxInt64)
		return steps, shapes
	}
	b := steps[m].Start
	tl.procs() // built once, before two goroutines read it
	first := newSweep(t, h, tl, steps, shapes, 0, m)
	second := newSweep(t, h, tl, steps, shapes, m, len(steps))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tl.each(func(a *activity) bool { return a.start < b && first.add(a) })
		first.finish(b)
	}()
	second.startAt(b, tl.runningAt(b, longest(t)))
	tl.eachFrom(b, second.add)
	second.finish(math.MaxInt64)
	wg.Wait()
	for _, x := range first.beyond {
		steps[x.step].Busy[x.cat] += x.d
	}
	last.End = max(last.End, first.lastEnd)
	for _, g := range second.counted {
		if first.graphSeen[g.key] {
			steps[g.step].Launches-- // counted at its first kernel, in the first half
		}
	}
	return steps, shapes
}

// longest returns the longest duration of any kernel, memory operation or graph execution.
func longest(t *nsys.Trace) time.Duration {
	var d nsys.Time
	for i := range t.Kernels {
		d = max(d, t.Kernels[i].End-t.Kernels[i].Start)
	}
	for _, m := range t.Memops {
		d = max(d, m.End-m.Start)
	}
	for _, g := range t.Graphs {
		d = max(d, g.End-g.Start)
	}
	return time.Duration(d)
}

// A sweep accounts steps [lo, hi) of a device, seeing its activities in start order.
type sweep struct {
	h      *hostIndex
	steps  []Step
	shapes []stepShape
	lo, hi int
	host   *hostGaps

	active  [kernelclass.NumCategories]int
	live    uint32 // bit Priority(c) set while a category c activity runs
	running endHeap
	now     nsys.Time
	started bool
	si      int // step of the current instant (for exclusive time)
	ai      int // step of the latest activity start
	// lastGraphKey is the graph launch whose kernels are being seen: its kernels are
	// mostly consecutive, so this spares a map lookup per kernel.
	lastGraphKey uint64
	// graphSeen holds the graph launches already counted: a graph launch counts once
	// however many kernels it ran.
	graphSeen map[uint64]bool
	counted   []graphCount // launches counted, when not the first half
	beyond    []busyBeyond // busy time in steps from hi on (the first half)
	lastEnd   nsys.Time    // the latest end of an activity in the last step (the first half)
}

type graphCount struct {
	key  uint64
	step int
}

type busyBeyond struct {
	step int
	cat  kernelclass.Category
	d    time.Duration
}

func newSweep(t *nsys.Trace, h *hostIndex, tl *timeline, steps []Step, shapes []stepShape, lo, hi int) *sweep {
	return &sweep{h: h, steps: steps, shapes: shapes, lo: lo, hi: hi, host: newHostGaps(t, tl),
		si: lo, ai: lo, lastGraphKey: 1<<64 - 1, graphSeen: map[uint64]bool{}}
}

// startAt begins a sweep that is not the first at b, with the activities running then:
// they own instants from b on, and their busy time and counts belong to the first half.
func (w *sweep) startAt(b nsys.Time, running []activity) {
	w.now, w.started = b, true
	for i := range running {
		w.start(running[i].cat)
		w.running.push(runningAct{running[i].end, running[i].cat})
	}
}

func (w *sweep) start(c kernelclass.Category) {
	if w.active[c]++; w.active[c] == 1 {
		w.live |= 1 << c.Priority()
	}
}

func (w *sweep) stop(c kernelclass.Category) {
	if w.active[c]--; w.active[c] == 0 {
		w.live &^= 1 << c.Priority()
	}
}

// byPriority gives the category of each priority (they are distinct and below 32,
// TestPriorities checks), for the bitmask of running categories in the sweep.
var byPriority = func() (b [32]kernelclass.Category) {
	for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
		b[c.Priority()] = c
	}
	return b
}()

// owner is the category of the highest priority running (priorities are distinct, below 32).
func (w *sweep) owner() kernelclass.Category {
	if w.live == 0 {
		return kernelclass.Idle
	}
	return byPriority[bits.Len32(w.live)-1]
}

// advance attributes [now, to) to the current owner, split at step boundaries.
func (w *sweep) advance(to nsys.Time) {
	if !w.started || to <= w.now {
		if to > w.now {
			w.now = to
		}
		return
	}
	steps := w.steps
	c := w.owner()
	for w.now < to {
		for w.si < len(steps) && steps[w.si].End <= w.now && w.si+1 < len(steps) {
			w.si++
		}
		if w.si >= len(steps) || w.now < steps[w.si].Start {
			// Before the first step: skip ahead.
			next := to
			if w.si < len(steps) && steps[w.si].Start < next {
				next = steps[w.si].Start
			}
			w.now = next
			continue
		}
		end := to
		if w.si+1 < len(steps) && steps[w.si].End < end {
			end = steps[w.si].End
		}
		st := &steps[w.si]
		d := end.Sub(w.now)
		st.Exclusive[c] += d
		if c == kernelclass.Idle {
			st.Busy[kernelclass.Idle] += d
			st.Gaps.Count++
			st.Gaps.Total += d
			sz := gapSize(d)
			st.Gaps.Sizes[sz]++
			st.Gaps.SizeNS[sz] += d
			w.host.attribute(w.now, end, &st.Gaps.Host)
		}
		w.now = end
	}
}

func (w *sweep) stepOf(at nsys.Time) int {
	for w.ai+1 < len(w.steps) && w.steps[w.ai+1].Start <= at {
		w.ai++
	}
	return w.ai
}

// add sees the next activity; it returns true (for timeline.each).
func (w *sweep) add(a *activity) bool {
	steps := w.steps
	for len(w.running) > 0 && w.running[0].end <= a.start {
		r := w.running.pop()
		w.advance(r.end)
		w.stop(r.cat)
	}
	if !w.started {
		w.now, w.started = a.start, true
	}
	w.advance(a.start)
	i := w.stepOf(a.start)
	if a.start >= steps[i].Start {
		st := &steps[i]
		st.Kernels[a.cat]++
		switch a.src {
		case srcKernel:
			w.shapes[i].add(a)
			k := a.key()
			switch {
			case k == w.lastGraphKey:
				// another kernel of the graph launch counted just before
			case !w.h.graphs[k]:
				st.Launches++
			default:
				w.lastGraphKey = k
				if !w.graphSeen[k] {
					w.graphSeen[k] = true
					st.Launches++
					if w.lo > 0 {
						w.counted = append(w.counted, graphCount{k, i})
					}
				}
			}
		case srcGraph:
			st.Launches++
		}
		if i == len(steps)-1 && a.end > st.End {
			st.End = a.end
		}
	}
	// Busy time, clipped to each step window the activity overlaps; also for an activity
	// that starts before the first step and runs into it, whose time in the steps is
	// accounted as exclusive time too. The first half keeps what falls in the second's
	// steps apart (the last step's end moves as the second half runs).
	for j := i; j < len(steps); j++ {
		s, e := max(a.start, steps[j].Start), a.end
		if j+1 < len(steps) {
			e = min(e, steps[j].End)
		} else if j >= w.hi {
			w.lastEnd = max(w.lastEnd, e)
		} else if e > steps[j].End {
			steps[j].End = e
		}
		if e <= s {
			break
		}
		if j >= w.hi {
			w.beyond = append(w.beyond, busyBeyond{j, a.cat, e.Sub(s)})
		} else {
			steps[j].Busy[a.cat] += e.Sub(s)
		}
	}
	w.start(a.cat)
	w.running.push(runningAct{a.end, a.cat})
	return true
}

// finish ends the sweep at until: the running activities that end by then are seen to
// their end, and the time up to until attributed (math.MaxInt64: the end of all).
func (w *sweep) finish(until nsys.Time) {
	for len(w.running) > 0 && w.running[0].end <= until {
		r := w.running.pop()
		w.advance(r.end)
		w.stop(r.cat)
	}
	if until != math.MaxInt64 {
		w.advance(until)
	}
}

func gapSize(d time.Duration) int {
	switch {
	case d < 10*time.Microsecond:
		return GapUnder10us
	case d < 100*time.Microsecond:
		return Gap10to100us
	case d < time.Millisecond:
		return Gap100usTo1ms
	}
	return GapOver1ms
}

// hostGaps attributes idle time to what the host threads of the device's processes were doing.
type hostGaps struct {
	calls   []nsys.APICall // every call of the trace, by start
	callers []nsys.Caller  // of the trace
	tl      *timeline      // the device: only its processes' calls count
	pts     []nsys.Time    // scratch
	next    int
	active  []int
}

func newHostGaps(t *nsys.Trace, tl *timeline) *hostGaps {
	return &hostGaps{calls: t.APICalls, callers: t.Callers, tl: tl}
}

func hostKind(k nsys.APIKind) HostActivity {
	switch k {
	case nsys.APISync:
		return HostSync
	case nsys.APIMemcpy, nsys.APIMemset:
		return HostCopy
	case nsys.APILaunch, nsys.APIGraphLaunch:
		return HostLaunch
	}
	return HostNone
}

// attribute splits [g0, g1) among host activities: at each instant the highest-priority
// kind of call in progress owns it (synchronize > copy > launch), else "no CUDA call".
// Gaps must come in increasing time order.
func (g *hostGaps) attribute(g0, g1 nsys.Time, out *[NumHostActivities]time.Duration) {
	// A call that ended by g0 overlaps no later gap either: it is never kept.
	for ; g.next < len(g.calls) && g.calls[g.next].Start < g1; g.next++ {
		if c := &g.calls[g.next]; c.End > g0 && g.tl.hasProc(g.callers[c.Caller].Proc) {
			g.active = append(g.active, g.next)
		}
	}
	keep := g.active[:0]
	for _, i := range g.active {
		if g.calls[i].End > g0 {
			keep = append(keep, i)
		}
	}
	g.active = keep
	if len(g.active) == 0 {
		out[HostNone] += g1.Sub(g0)
		return
	}
	pts := append(g.pts[:0], g0, g1)
	defer func() { g.pts = pts[:0] }()
	for _, i := range g.active {
		c := &g.calls[i]
		if c.Start > g0 && c.Start < g1 {
			pts = append(pts, c.Start)
		}
		if c.End > g0 && c.End < g1 {
			pts = append(pts, c.End)
		}
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	for k := 0; k+1 < len(pts); k++ {
		a, b := pts[k], pts[k+1]
		who := HostNone
		for _, i := range g.active {
			c := &g.calls[i]
			if c.Start <= a && c.End >= b {
				if hk := hostKind(g.callers[c.Caller].Kind); hk < who {
					who = hk
				}
			}
		}
		out[who] += b.Sub(a)
	}
}

// A stepShape is what inferPhases needs of a step: a signature of its kernel mix (a sum
// of a hash per kernel name, so independent of order) and its attention kernels' names.
// account fills it in its one pass.
type stepShape struct {
	sig  uint64
	attn []nsys.NameID // distinct
}

func (s *stepShape) add(a *activity) {
	s.sig += mix64(uint64(a.name) + 1)
	if a.cat == kernelclass.Attention && !slices.Contains(s.attn, a.name) {
		s.attn = append(s.attn, a.name)
	}
}

// inferPhases gives a phase to steps whose detection gave none, from their shape: the most
// common kernel mix is decode; a step with another mix is prefill when it runs attention
// kernels that decode steps never run, or takes at least three times the decode median.
func inferPhases(steps []Step, shapes []stepShape) {
	unknown := 0
	for _, s := range steps {
		if s.Phase == Unknown {
			unknown++
		}
	}
	if unknown == 0 || len(steps) < 2 {
		return
	}
	count := map[uint64]int{}
	for _, s := range shapes {
		count[s.sig]++
	}
	var modal uint64
	best := -1
	for i, s := range shapes { // first-seen order keeps ties deterministic
		if c := count[s.sig]; c > best || (c == best && s.sig == shapes[i].sig && false) {
			modal, best = s.sig, c
		}
	}
	decodeAttn := map[nsys.NameID]bool{}
	var walls []time.Duration
	for i, s := range shapes {
		if s.sig == modal {
			for _, n := range s.attn {
				decodeAttn[n] = true
			}
			walls = append(walls, steps[i].Wall())
		}
	}
	med := quantile(walls, 0.5)
	for i := range steps {
		if steps[i].Phase != Unknown {
			continue
		}
		if shapes[i].sig == modal || best < 2 {
			steps[i].Phase = Decode
			continue
		}
		prefill := steps[i].Wall() >= 3*med
		for _, n := range shapes[i].attn {
			if !decodeAttn[n] {
				prefill = true
			}
		}
		if prefill {
			steps[i].Phase = Prefill
		} else {
			steps[i].Phase = Decode
		}
	}
}

func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// quantile returns the q-quantile of ds with linear interpolation between order statistics,
// rounded to the nanosecond.
func quantile(ds []time.Duration, q float64) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(math.Floor(quantileF(xs, q) + 0.5))
}

func quantileF(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// SelectSteps returns the steps a summary covers: those of the phase asked for (decode by
// default), or all steps. When no step has the phase, it returns every step and an error
// saying so.
func SelectSteps(steps []Step, opt Options) ([]Step, Phase, error) {
	if opt.AllPhases {
		return steps, Unknown, nil
	}
	want := opt.Phase
	if want == Unknown {
		want = Decode
	}
	n := 0
	for i := range steps {
		if steps[i].Phase == want {
			n++
		}
	}
	if n == len(steps) {
		return steps, want, nil // every step has the phase: no copy
	}
	out := make([]Step, 0, n) // steps are large: copy each once
	for i := range steps {
		if steps[i].Phase == want {
			out = append(out, steps[i])
		}
	}
	if len(out) == 0 && len(steps) > 0 {
		return steps, Unknown, fmt.Errorf("no %s steps; summarising all %d steps", want, len(steps))
	}
	return out, want, nil
}

func summarize(all []Step, opt Options) (Summary, error) {
	steps, phase, err := SelectSteps(all, opt)
	sum := Summary{Phase: phase, Steps: len(steps)}
	if len(steps) == 0 {
		return sum, err
	}
	walls := make([]time.Duration, len(steps))
	var totalWall time.Duration
	var launches, kernels int
	for i := range steps {
		walls[i] = steps[i].Wall()
		totalWall += walls[i]
		launches += steps[i].Launches
		kernels += steps[i].TotalKernels()
		sum.Gaps.add(&steps[i].Gaps)
	}
	n := float64(len(steps))
	sum.Median, sum.P10, sum.P90 = quantile(walls, 0.5), quantile(walls, 0.1), quantile(walls, 0.9)
	sum.Mean = totalWall / time.Duration(len(steps))
	sum.LaunchesPerStp = float64(launches) / n
	sum.KernelsPerStep = float64(kernels) / n
	sum.GapsPerStep = float64(sum.Gaps.Count) / n
	per := make([]time.Duration, len(steps))
	calls := make([]float64, len(steps))
	for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
		var excl, busy time.Duration
		var k int
		for i := range steps {
			per[i] = steps[i].Exclusive[c]
			calls[i] = float64(steps[i].Kernels[c])
			excl += steps[i].Exclusive[c]
			busy += steps[i].Busy[c]
			k += steps[i].Kernels[c]
		}
		cs := CategorySummary{Median: quantile(per, 0.5), P90: quantile(per, 0.9),
			KernelsPerStep: float64(k) / n, CallsMedian: quantileF(calls, 0.5)}
		if totalWall > 0 {
			cs.Share = float64(excl) / float64(totalWall)
		}
		if k > 0 {
			cs.BusyPerCall = busy / time.Duration(k)
		}
		sum.Categories[c] = cs
	}
	return sum, err
}
