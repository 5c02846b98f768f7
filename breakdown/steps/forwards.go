package steps

import (
	"fmt"
	"slices"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// The model's own structure is a signal of the serving loop: every forward of a language
// model ends with its last large GEMM (the lm_head) and the sampler that picks the tokens
// from its logits (argmax, multinomial, a top-k/top-p sampler; XLA's reduction fusion),
// whatever the batch, the prompt chunk or the host loop. The finder cuts one step per
// forward: a step group of segments (stepfind.go) that holds several forward ends is split
// after each, so that no run of iterations is folded into one step, and windows after the
// loop body that hold forwards become steps again. A speculative round (the draft model's
// shallower forwards, then the target's verify forward) is one step with DraftForwards.

// forwardEnds follows a device's kernels in order and says, per segment, whether a forward
// ends in it: a sampler after a GEMM, with no GEMM or attention kernel after the sampler
// before the segment ends (a top-1 router's argmax is followed by expert GEMMs).
type forwardEnds struct {
	armed   bool      // a GEMM ran since the last sampler
	pending bool      // a sampler ran after a GEMM, and no GEMM or attention since
	at      nsys.Time // the pending sampler's start
}

func (f *forwardEnds) add(a *Activity, role kernelclass.Role) {
	switch {
	case a.Cat == kernelclass.GEMM:
		f.armed, f.pending = true, false
	case a.Cat == kernelclass.Attention:
		f.pending = false
	case role == kernelclass.RoleSampler || role == kernelclass.RoleReduce:
		if f.armed {
			f.armed, f.pending, f.at = false, true, a.Start
		}
	}
}

// close ends a segment and returns the start of the sampler that ends a forward in it, or 0.
func (f *forwardEnds) close() nsys.Time {
	if !f.pending {
		return 0
	}
	f.pending = false
	return f.at
}

// forwardTimes returns the starts of the samplers that end the forwards of segments.
func forwardTimes(segs []segment) []nsys.Time {
	var out []nsys.Time
	for _, s := range segs {
		if s.fwd {
			out = append(out, s.fwdAt)
		}
	}
	return out
}

// Forwards returns the forward ends of a device's timeline, cut by every host signal.
func Forwards(t *nsys.Trace, h *HostIndex, tl *Timeline) []nsys.Time {
	segs, _ := segmentTimeline(t, h, tl, cutSync|cutGraph|cutH2D)
	return forwardTimes(segs)
}

// countForwards counts the segments that end a forward.
func countForwards(segs []segment) int {
	n := 0
	for _, s := range segs {
		if s.fwd {
			n++
		}
	}
	return n
}

// forwardSteps makes the steps of segments from their forward ends: each step runs from the
// segment after a forward's end to the segment that ends the next forward. The segments
// before the first forward's end belong to the first step; those after the last one, to no
// step (work after the loop). It is used when no grouping of segments repeats.
func forwardSteps(segs []segment) []Boundary {
	var b []Boundary
	open := false
	for i, s := range segs {
		if !open {
			b = append(b, Boundary{Start: s.start, split: len(b) > 0})
			open = true
		}
		if s.fwd {
			open = false
		} else if i == len(segs)-1 || !slices.ContainsFunc(segs[i+1:], func(s segment) bool { return s.fwd }) {
			// No forward ends after here: the rest is no step's.
			if len(b) > 0 && b[len(b)-1].Start == s.start {
				b[len(b)-1].Outside = true
			} else {
				b = append(b, Boundary{Start: s.start, Outside: true})
			}
			break
		}
	}
	return b
}

// windowSegments returns, for each boundary of bounds, the segments whose start lies in its
// window (from its start to the next boundary's), as index ranges [lo, hi) into segs; one
// pass over both, both being sorted by start.
func windowSegments(segs []segment, bounds []Boundary) [][2]int {
	out := make([][2]int, len(bounds))
	si := 0
	for bi, b := range bounds {
		end := nsys.Time(1<<63 - 1)
		if bi+1 < len(bounds) {
			end = bounds[bi+1].Start
		}
		for si < len(segs) && segs[si].start < b.Start {
			si++
		}
		j := si
		for j < len(segs) && segs[j].start < end {
			j++
		}
		out[bi] = [2]int{si, j}
	}
	return out
}

// splitForwards splits the steps of bounds (boundaries at segment starts, or outside windows
// that start where a step's work ended) that hold several forward ends: after each forward's
// end but the last, a new step starts at the next segment. Outside windows from body on
// (after the loop body began: work after it, or later requests) that hold forward ends
// become steps the same way; those before it (setup, warm-up before the first graph
// replay) stay outside.
func splitForwards(segs []segment, bounds []Boundary, body nsys.Time) []Boundary {
	var out []Boundary
	for bi, w := range windowSegments(segs, bounds) {
		b, in := bounds[bi], segs[w[0]:w[1]]
		out = append(out, b)
		if b.Outside && b.Start < body {
			continue
		}
		var ends []int
		for k, s := range in {
			if s.fwd {
				ends = append(ends, k)
			}
		}
		if b.Outside && len(ends) > 0 {
			// An outside window after the loop body that holds forwards: its work up to the
			// last forward's end is steps again, the rest stays outside.
			first := 0
			for first < len(in) && in[first].kernels == 0 {
				first++
			}
			if first <= ends[0] {
				out[len(out)-1] = Boundary{Start: in[first].start}
				if first > 0 {
					out[len(out)-1] = b
					out = append(out, Boundary{Start: in[first].start})
				}
				last := ends[len(ends)-1]
				for _, k := range ends[:len(ends)-1] {
					out = append(out, Boundary{Start: in[k+1].start, split: true})
				}
				if last+1 < len(in) {
					out = append(out, Boundary{Start: in[last+1].start, Outside: true})
				}
			}
			continue
		}
		if len(ends) < 2 {
			continue
		}
		for _, k := range ends[:len(ends)-1] {
			if k+1 < len(in) {
				out = append(out, Boundary{Start: in[k+1].start, Phase: b.Phase, split: true})
			}
		}
	}
	return sortBounds(out)
}

// A pause between requests is idle time in no step: when the device idles after a step's
// last work for more than pauseSteps median steps, or pauseGaps times the loop's median idle
// after a step's work (and at least minPause either way), the step ends with its work and
// the pause is outside steps.
const (
	pauseSteps = 2
	pauseGaps  = 20
	minPause   = 2_000_000 // ns
)

// separateRequests puts the long idle windows between steps (the pause between a request's
// last step and the next request's prefill) outside steps.
func separateRequests(segs []segment, bounds []Boundary) []Boundary {
	type win struct {
		bi      int
		workEnd nsys.Time
	}
	var wins []win
	var walls []int64
	ws := windowSegments(segs, bounds)
	for bi, b := range bounds {
		if b.Outside || bi+1 >= len(bounds) {
			continue
		}
		var workEnd nsys.Time
		for _, s := range segs[ws[bi][0]:ws[bi][1]] {
			workEnd = max(workEnd, s.end)
		}
		wins = append(wins, win{bi, workEnd})
		walls = append(walls, int64(bounds[bi+1].Start-b.Start))
	}
	if len(walls) < 2 {
		return bounds
	}
	slices.Sort(walls)
	limit := max(nsys.Time(minPause), nsys.Time(pauseSteps*walls[len(walls)/2]))
	// Or idle after a step's work longer than pauseGaps times the loop's usual idle there
	// (its median): a loop of short host turns between iterations that stops for a while.
	var idles []int64
	for _, w := range wins {
		if w.workEnd > bounds[w.bi].Start {
			idles = append(idles, int64(max(0, bounds[w.bi+1].Start-w.workEnd)))
		}
	}
	if len(idles) >= 3 {
		slices.Sort(idles)
		limit = min(limit, max(nsys.Time(minPause), nsys.Time(pauseGaps*idles[len(idles)/2])))
	}
	var extra []Boundary
	for _, w := range wins {
		next := bounds[w.bi+1].Start
		if w.workEnd > bounds[w.bi].Start && next-w.workEnd > limit {
			extra = append(extra, Boundary{Start: w.workEnd, Outside: true})
		}
	}
	// A pause inside a step's first segment, between copies that end the previous
	// iteration (its read-back) and the step's first kernel: the copies go to the step
	// before (outside when there is none), the pause outside, and the step starts with its
	// first kernel.
	for bi := range bounds {
		b, si := &bounds[bi], ws[bi][0]
		if b.Outside || si == ws[bi][1] || segs[si].start != b.Start {
			continue
		}
		sg := segs[si]
		if sg.leadEnd == 0 || sg.kstart == 0 || sg.kstart-sg.leadEnd <= limit {
			continue
		}
		extra = append(extra, Boundary{Start: sg.kstart, Phase: b.Phase, Label: b.Label, By: CutPause})
		if bi == 0 {
			*b = Boundary{Start: b.Start, Outside: true}
		} else {
			*b = Boundary{Start: sg.leadEnd, Outside: true}
		}
	}
	if len(extra) == 0 {
		return bounds
	}
	return sortBounds(append(bounds, extra...))
}

// roundsDetail says how many speculative rounds and draft forwards bounds hold, for the
// method's detail; "" without rounds.
func roundsDetail(bounds []Boundary) string {
	rounds, drafts := 0, 0
	for _, b := range bounds {
		if b.Drafts > 0 {
			rounds++
			drafts += b.Drafts
		}
	}
	if rounds == 0 {
		return ""
	}
	return fmt.Sprintf("; %d draft forwards in %d speculative rounds, each ending with the target's verify forward", drafts, rounds)
}

// groupRounds joins speculative rounds, claimed only where the trace shows a draft: forwards
// of one distinct smaller depth (attention kernels: layers; at most 3/4 of the verify's)
// recurring before the verify forwards of the full depth (the most common depth of the
// one-forward steps). Each run of draft forwards is one step with the full-depth forward
// that follows, its DraftForwards the run's length, its depths recorded. Steps must hold one
// forward each (the finder's cuts). Without two depths, when fewer than two rounds form or
// they are fewer than half the full-depth forwards (a prompt chunk's pieces, a short warm-up
// forward: no drafter), or when the draft forwards run more than 3/4 of the verify's
// kernels (the same layers: decode iterations beside chunked-prefill ones), bounds are
// returned as they are.
func groupRounds(segs []segment, bounds []Boundary) []Boundary {
	w := newRoundWindows(segs, bounds)
	draft, full, ok := w.depths()
	if !ok {
		return bounds
	}
	verifies := 0
	for bi := range bounds {
		if w.one(bi) && w.depth[bi] == full {
			verifies++
		}
	}
	out, rounds := w.fold(draft, full)
	if rounds < 2 || 2*rounds < verifies {
		return bounds
	}
	out = leadingDraft(out, bounds, func(bi int) bool { return w.fwds[bi] == 1 && w.depth[bi] == draft })
	if !w.lighterDrafts(draft, full) {
		return bounds
	}
	return out
}

// roundWindows is what groupRounds reads of each window of bounds (a step or a window
// outside steps): its attention depth, its kernels and its forward ends.
type roundWindows struct {
	bounds  []Boundary
	depth   []int32
	kernels []int32
	fwds    []int
}

func newRoundWindows(segs []segment, bounds []Boundary) *roundWindows {
	w := &roundWindows{bounds: bounds, depth: make([]int32, len(bounds)), kernels: make([]int32, len(bounds)), fwds: make([]int, len(bounds))}
	for bi, sw := range windowSegments(segs, bounds) {
		for _, s := range segs[sw[0]:sw[1]] {
			w.depth[bi] += s.attn
			w.kernels[bi] += s.kernels
			if s.fwd {
				w.fwds[bi]++
			}
		}
	}
	return w
}

// one reports whether window bi is a step of one forward with attention.
func (w *roundWindows) one(bi int) bool {
	return !w.bounds[bi].Outside && w.fwds[bi] == 1 && w.depth[bi] > 0
}

// depths returns the two most common depths of the single forwards: the draft's is the
// smaller, the verify's (full) the larger; ok is false unless each is seen twice or more
// and the draft is at most 3/4 as deep.
func (w *roundWindows) depths() (draft, full int32, ok bool) {
	count := map[int32]int{}
	for bi := range w.bounds {
		if w.one(bi) {
			count[w.depth[bi]]++
		}
	}
	var top [2]int32
	var n [2]int
	for d, c := range count {
		switch {
		case c > n[0] || (c == n[0] && d > top[0]):
			top[1], n[1] = top[0], n[0]
			top[0], n[0] = d, c
		case c > n[1] || (c == n[1] && d > top[1]):
			top[1], n[1] = d, c
		}
	}
	draft, full = min(top[0], top[1]), max(top[0], top[1])
	return draft, full, n[1] >= 2 && 4*draft <= 3*full
}

// fold makes each run of draft forwards followed by a verify forward one round, and a run
// of draft forwards that ends the device's activity one partial round; it returns the
// boundaries and the number of rounds.
func (w *roundWindows) fold(draft, full int32) ([]Boundary, int) {
	bounds := w.bounds
	shallow := func(bi int) bool { return w.one(bi) && w.depth[bi] == draft }
	var out []Boundary
	rounds := 0
	for bi := 0; bi < len(bounds); {
		if !shallow(bi) {
			out = append(out, bounds[bi])
			bi++
			continue
		}
		j := bi
		for j < len(bounds) && shallow(j) {
			j++
		}
		// A run of draft forwards, then the target's forward of the full depth: one round.
		if j < len(bounds) && w.one(j) && w.depth[j] == full {
			b := bounds[bi]
			b.Drafts, b.DraftDepth, b.VerifyDepth = j-bi, draft, full
			out = append(out, b)
			rounds++
			bi = j + 1
			continue
		}
		if j == len(bounds) && rounds > 0 {
			// Draft forwards that end the device's activity, no verify after them: the
			// capture window ended mid-round. One partial step (kept out of summaries).
			b := bounds[bi]
			b.Drafts, b.DraftDepth, b.Phase = j-bi, draft, Partial
			b.Why = fmt.Sprintf("window end: %d draft forwards and no verify forward after them (the capture stopped mid-round)", j-bi)
			out = append(out, b)
			bi = j
			continue
		}
		out = append(out, bounds[bi:j]...)
		bi = j
	}
	return out, rounds
}

// lighterDrafts reports whether a draft forward runs fewer layer bodies: at most 3/4 of
// the verify's kernels, in the median (a chunked prefill's extra attention calls, one per
// prompt chunk, add a few kernels to a forward of the same layers).
func (w *roundWindows) lighterDrafts(draft, full int32) bool {
	var dk, vk []int32
	for bi := range w.bounds {
		if w.one(bi) && w.depth[bi] == draft {
			dk = append(dk, w.kernels[bi])
		} else if w.one(bi) && w.depth[bi] == full {
			vk = append(vk, w.kernels[bi])
		}
	}
	slices.Sort(dk)
	slices.Sort(vk)
	return 4*dk[len(dk)/2] <= 3*vk[len(vk)/2]
}

// leadingDraft gives the first round (of rounds: groupRounds' boundaries) the one forward of
// the draft's depth just before it that the finder left outside steps (the window before the
// loop's first cut: too few kernels for a step of its own), when that round has one draft
// forward fewer than the most common round: that forward is the round's first draft.
// lone says whether a boundary of bounds holds one forward of the draft's depth.
func leadingDraft(rounds, bounds []Boundary, lone func(int) bool) []Boundary {
	if len(rounds) < 3 || len(bounds) < 2 || !bounds[0].Outside || !lone(0) || rounds[1].Start != bounds[1].Start || rounds[1].Drafts == 0 {
		return rounds
	}
	count := map[int]int{}
	modal, best := 0, 0
	for _, b := range rounds {
		if b.Drafts > 0 && b.Phase != Partial {
			count[b.Drafts]++
			if c := count[b.Drafts]; c > best {
				modal, best = b.Drafts, c
			}
		}
	}
	if best < 2 || rounds[1].Drafts+1 != modal {
		return rounds
	}
	b := rounds[1]
	b.Start, b.By, b.Drafts = bounds[0].Start, bounds[0].By, modal
	return append([]Boundary{b}, rounds[2:]...)
}
