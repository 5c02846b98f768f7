package steps

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stepstat/stepstat/nsys"
)

// A dialect is a family of NVTX step ranges emitted by a serving framework; read says what
// a matching text tells of its step.
type dialect struct {
	name string
	re   *regexp.Regexp
	read func(m []string) stepText
	// iteration: the range marks the engine's iteration but holds only part of it (vLLM's
	// range is around execute_model: the sampler and the token read-back follow it; SGLang's
	// scheduler ranges split the iteration in five): a step runs from one range's start to
	// the next's on its thread, and the work launched in between is its own.
	iteration bool
}

// stepText is what a step range's text says: the phase, the sequences in the batch (0:
// not said), and whether the step is idle (SGLang's step[idle]: no request scheduled; its
// work, if any, is in no step).
type stepText struct {
	phase Phase
	batch int
	idle  bool
}

// requestsPhase is the phase of a batch of ctx requests in their prompt and gen requests
// generating: mixed when it holds both.
func requestsPhase(ctx, gen int) stepText {
	t := stepText{batch: ctx + gen}
	switch {
	case ctx > 0 && gen > 0:
		t.phase = Mixed
	case ctx > 0:
		t.phase = Prefill
	case gen > 0:
		t.phase = Decode
	}
	return t
}

var dialects = []dialect{
	// TensorRT-LLM's PyExecutor._forward_step: "[Executor] _forward_step N: X ctx reqs, Y gen
	// reqs" (N the iteration), in releases before the iteration counter without " N".
	{"TensorRT-LLM", regexp.MustCompile(`^\[Executor\] _forward_step( \d+)?: (\d+) ctx reqs, (\d+) gen reqs`),
		func(m []string) stepText { return requestsPhase(atoi(m[2]), atoi(m[3])) }, false},
	// vLLM's Worker.annotate_profile: execute_context_C(c)_generation_G(g), requests and
	// tokens per phase; with detailed_trace_annotation execute_T_context_C(sq..sk..sqsq..
	// sqsk..)_generation_G(sq..sk..sqsq..sqsk..), T the scheduled tokens, per phase the sums
	// of query lengths, sequence lengths, and their squares and products.
	{"vLLM", regexp.MustCompile(`execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)`),
		func(m []string) stepText { return requestsPhase(atoi(m[1]), atoi(m[3])) }, true},
	{"vLLM detailed", regexp.MustCompile(`execute_(\d+)_context_(\d+)\(sq\d+sk\d+sqsq\d+sqsk\d+\)_generation_(\d+)\(sq\d+sk\d+sqsq\d+sqsk\d+\)`),
		func(m []string) stepText { return requestsPhase(atoi(m[2]), atoi(m[3])) }, true},
	// SGLang's scheduler ranges (SGLANG_ENABLE_NVTX_SCHEDULER): scheduler.recv_requests,
	// .process_input_requests, .get_next_batch_to_run, .run_batch, .process_batch_result,
	// in this order every iteration of the event loop; the first starts the iteration. Its
	// text says no phase.
	{"SGLang scheduler", regexp.MustCompile(`^scheduler\.recv_requests$`),
		func(m []string) stepText { return stepText{} }, true},
	// SGLang's forward modes: step[DECODE bs=64], step[prefill ...], step[mixed ...],
	// step[idle], step[target_verify ...] (a speculative round's verify: decode),
	// step[draft_extend ...] (the draft's catch-up in a round: decode).
	{"SGLang", regexp.MustCompile(`(?i)^\s*step\[\s*(extend|prefill|decode|mixed|idle|target[_ -]?verify|draft[_ -]?extend|dummy[_ -]?first)\b([^\]]*)\]`),
		func(m []string) stepText {
			t := stepText{}
			if bs := sglangBatch.FindStringSubmatch(m[2]); bs != nil {
				t.batch = atoi(bs[1])
			}
			switch mode := strings.ToLower(m[1]); {
			case mode == "extend" || mode == "prefill":
				t.phase = Prefill
			case mode == "decode" || strings.HasPrefix(mode, "target") || strings.HasPrefix(mode, "draft"):
				t.phase = Decode
			case mode == "mixed":
				t.phase = Mixed
			case mode == "idle":
				t.idle = true
			}
			return t
		}, false},
	{"plain", regexp.MustCompile(`(?i)^\s*(prefill|decode|extend|step)([^a-z].*)?$`),
		func(m []string) stepText { return stepText{phase: phaseFromText(m[0])} }, false},
}

var sglangBatch = regexp.MustCompile(`(?i)\bbs\s*=\s*(\d+)`)

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

// readText returns what a step range's text says: by the first dialect that matches it,
// else its phase by its words.
func readText(text string) stepText {
	for _, d := range dialects {
		if m := d.re.FindStringSubmatch(text); m != nil {
			return d.read(m)
		}
	}
	return stepText{phase: phaseFromText(text)}
}

// matchedRange is an NVTX range chosen as a step.
type matchedRange struct {
	r     nsys.Range
	phase Phase
	batch int
	text  string
}

// stepRanges picks the NVTX ranges that are steps: those matching re (or, with re nil, the
// first known dialect that matches), outermost only on each thread.
func stepRanges(t *nsys.Trace, re *regexp.Regexp) ([]matchedRange, string, bool) {
	try := func(re *regexp.Regexp, read func([]string) stepText) []matchedRange {
		var out []matchedRange
		lastEnd := map[int64]nsys.Time{}
		// Each distinct text is matched once (a trace repeats a few texts in many ranges):
		// state 0 not yet, 1 no match (or an idle step), 2 matched, saying said.
		state := make([]uint8, len(t.RangeTexts))
		said := make([]stepText, len(t.RangeTexts))
		for _, r := range t.Ranges {
			text := t.RangeTexts[r.Text]
			if state[r.Text] == 0 {
				state[r.Text] = 1
				if m := re.FindStringSubmatch(text); m != nil {
					if read != nil {
						said[r.Text] = read(m)
					} else {
						said[r.Text] = readText(text) // a user regex: the whole text, not only the match
					}
					if !said[r.Text].idle {
						state[r.Text] = 2
					}
				}
			}
			if state[r.Text] == 1 {
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
			out = append(out, matchedRange{r: r, phase: said[r.Text].phase, batch: said[r.Text].batch, text: text})
		}
		return out
	}
	if re != nil {
		return try(re, nil), "nvtx /" + re.String() + "/", false
	}
	for _, d := range dialects {
		if ms := try(d.re, d.read); len(ms) > 0 {
			return ms, d.name + " NVTX ranges", d.iteration
		}
	}
	return nil, "", false
}

// nvtxDetect maps step ranges to the first GPU activity each launched on each device,
// through the launching API call's thread and correlation id (not by GPU time overlap).
// tls are the timelines (one per device, or per process of a shared device); the result
// has one detection per timeline, nil where no range launched work; nil when no range matches.
func nvtxDetect(t *nsys.Trace, h *HostIndex, re *regexp.Regexp, tls []*Timeline) []*Detection {
	ranges, detail, iteration := stepRanges(t, re)
	if len(ranges) == 0 {
		return nil
	}
	ors := make([]OwnerRange, len(ranges))
	next := map[int64]nsys.Time{} // per thread, the start of the range after (walking back)
	for i := len(ranges) - 1; i >= 0; i-- {
		mr := ranges[i]
		end := mr.r.End
		if mr.r.Open() {
			end = 1<<63 - 1
		}
		if iteration {
			// The whole iteration: up to the next range's start on the thread (the last
			// one's, to the end of the capture).
			end = 1<<63 - 1
			if n, ok := next[mr.r.Thread]; ok {
				end = n - 1
			}
			next[mr.r.Thread] = mr.r.Start
		}
		ors[i] = OwnerRange{mr.r.Thread, mr.r.Start, end}
	}
	lo := NewLaunchOwners(t, ors, func(*nsys.Caller) bool { return true })
	// One goroutine per device, each filling its own detection.
	dets := make([]*Detection, len(tls))
	var wg sync.WaitGroup
	found := false
	for di, tl := range tls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dets[di] = nvtxBounds(tl, lo, ranges, detail)
		}()
	}
	wg.Wait()
	for _, d := range dets {
		found = found || d != nil
	}
	if !found {
		return nil
	}
	return dets
}

// nvtxBounds maps the step ranges to a device's timeline: a step starts at the first GPU
// activity its range launched. Activity that no step range launched and that starts after
// every earlier step's work has ended (before the first step, between steps, after the last)
// belongs to no step: it gets an outside boundary. Nil when no range launched work here.
func nvtxBounds(tl *Timeline, lo *LaunchOwners, ranges []matchedRange, detail string) *Detection {
	sc := scanOwners(tl, lo)
	if len(sc.first) == 0 {
		return nil
	}
	d := &Detection{Method: MethodNVTX, Detail: detail}
	// In range order, so that of two ranges whose work starts at the same instant
	// the earlier one always names the step.
	owners := slices.Sorted(maps.Keys(sc.first))
	type span struct{ start, end nsys.Time }
	spans := make([]span, 0, len(owners))
	for _, i := range owners {
		d.Bounds = append(d.Bounds, Boundary{Start: sc.first[i], Phase: ranges[i].phase, Label: ranges[i].text, Batch: ranges[i].batch, By: CutNVTX})
		spans = append(spans, span{sc.first[i], sc.lastEnd[i]})
	}
	d.Bounds = sortBounds(d.Bounds)
	// An unowned run is outside when it starts at or after the latest end of the steps
	// begun before it.
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	var out []Boundary
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
			out = append(out, Boundary{Start: at, Outside: true})
		}
	}
	if len(out) > 0 {
		d.Bounds = sortBounds(append(d.Bounds, out...))
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
func scanOwners(tl *Timeline, lo *LaunchOwners) *ownerScan {
	sc := &ownerScan{first: map[int32]nsys.Time{}, lastEnd: map[int32]nsys.Time{}, stepProcs: make([]bool, 1<<16)}
	lastKey, lastOwner, lastOK, any := uint64(0), int32(0), false, false
	cur, curEnd := int32(-1), nsys.Time(0)
	flush := func() {
		if cur >= 0 {
			sc.lastEnd[cur] = max(sc.lastEnd[cur], curEnd)
		}
	}
	prevOwned := true
	tl.Each(func(a *Activity) bool {
		if k := a.Key(); !any || k != lastKey {
			lastKey, any = k, true
			lastOwner, lastOK = lo.Owner(a.proc, a.corr)
		}
		if lastOK {
			if lastOwner != cur {
				flush()
				cur, curEnd = lastOwner, a.End
				if _, seen := sc.first[lastOwner]; !seen {
					sc.first[lastOwner] = a.Start
				}
			} else {
				curEnd = max(curEnd, a.End)
			}
			sc.stepProcs[a.proc] = true
		} else if prevOwned || a.proc != sc.unowned[len(sc.unowned)-1].proc {
			sc.unowned = append(sc.unowned, unownedRun{a.Start, a.proc})
		}
		prevOwned = lastOK
		return true
	})
	flush()
	return sc
}

// MatchNVTX matches NVTX ranges to the GPU work of each device, for the methods that use
// them (auto and nvtx); with method nvtx, no match at all is an error.
func MatchNVTX(t *nsys.Trace, h *HostIndex, tls []*Timeline, method Method, userRe *regexp.Regexp) ([]*Detection, error) {
	if method != MethodAuto && method != MethodNVTX {
		return nil, nil
	}
	nvtx := nvtxDetect(t, h, userRe, tls)
	if method == MethodNVTX && len(nvtx) == 0 {
		what := "no NVTX range of a known step dialect"
		if userRe != nil {
			what = fmt.Sprintf("no NVTX range matching /%s/", userRe)
		}
		return nil, &nsys.Error{Path: t.Path, Err: fmt.Errorf("%s launched GPU work", what)}
	}
	return nvtx, nil
}
