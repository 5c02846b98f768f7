package breakdown

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// A stepShape is what the window-edge rules and the self-checks need of a step: a signature
// of its kernel mix (a sum of a hash per kernel name, so independent of order), its first
// kernel and its last GEMM. account fills it in its one pass; the phases compare what steps
// hold on the loop's stream instead (holding).
type stepShape struct {
	sig uint64
	// first is the step's first kernel (a forward's embedding), lastGEMM its last GEMM (the
	// lm_head): the recurring pattern of a forward, counted by foldedPatternCheck.
	first, lastGEMM nsys.NameID
	started         bool
}

func (s *stepShape) add(a *steps.Activity) {
	s.sig += steps.Mix64(uint64(a.Name) + 1)
	if !s.started {
		s.first, s.started = a.Name, true
	}
	if a.Cat == kernelclass.GEMM {
		s.lastGEMM = a.Name
	}
}

// What the copies say of an iteration (a step's forwards). Every serving loop copies its
// inputs to the device before a forward (token ids, positions, cache slots: one entry per
// token it processes; offsets and lengths: one per sequence) and reads the sampled tokens
// back after it (one entry per sequence of the batch). In a decode iteration each sequence
// processes the one token it samples, so its inputs are as large as its read-back, entry for
// entry; an iteration that processes prompt tokens copies many times more input than it
// reads back. Batch size cancels out: a batch of 64 decoding sequences copies and reads back
// 64 times one sequence's entries.
type iterCopies struct {
	in  int64 // median size of the iteration's host-to-device copies (bytes); 0: none
	out int64 // bytes read back (device to host) after its last forward's sampler; 0: none
}

// promptRatio: an iteration processes prompt tokens when its input copies are at least this
// many times its read-back, relative to the run's median iteration (a decode one).
const promptRatio = 4

// sameBatchRatio: an iteration also processes prompt tokens when its input copies are at
// least this many times the typical ones of the iterations that read back as much (the same
// batch of sequences): a decode iteration of n sequences copies the same n tokens' entries every
// time, so a few prompt tokens beside them show against it where the run's median does not
// (small batches copy offsets of n+1 entries, which the median ratio mixes in).
const sameBatchRatio = 2

// promptGEMM: a step whose GEMM kernels run at least this many times as long as the decode
// template's same kernels, or whose GEMMs take this many times the template's median time,
// runs them on a prompt's rows, not on a few tokens per sequence.
const promptGEMM = 3

// stepCopies returns what the copies on the loop's copy stream (readBackStream) say of each step (copies on
// other streams, a KV-cache swap-in or export, hold no input of the forward), from the forward ends (sampler
// starts, sorted): a step's inputs are the host-to-device copies after the previous forward's
// end up to its own last one (its first step: from its start); its read-back the
// device-to-host copies after its last forward's end, before the next forward's end or the
// next iteration's first input copy. A step without a forward end says nothing.
func stepCopies(tl *steps.Timeline, stream nsys.StreamID, steps []Step, ends []nsys.Time) []iterCopies {
	out := make([]iterCopies, len(steps))
	var ms []nsys.Memop
	for _, m := range tl.Trace.Memops {
		if tl.Owns(m.Device, m.Proc) && m.Stream == stream && (m.Kind == nsys.MemcpyHtoD || m.Kind == nsys.MemcpyDtoH) {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 || len(ends) == 0 {
		return out
	}
	after := func(at nsys.Time) int { // the first copy that starts after at
		i, _ := slices.BinarySearchFunc(ms, at+1, func(m nsys.Memop, t nsys.Time) int { return cmp.Compare(m.Start, t) })
		return i
	}
	var sizes []int64
	for i, s := range steps {
		j0, _ := slices.BinarySearch(ends, s.Start)
		j1, _ := slices.BinarySearch(ends, s.End)
		if j1 == j0 {
			continue // no forward ends in the step
		}
		lo, last := s.Start-1, ends[j1-1]
		if j0 > 0 {
			lo = ends[j0-1]
		}
		sizes = sizes[:0]
		k := after(lo)
		for ; k < len(ms) && ms[k].Start <= last; k++ {
			if ms[k].Kind == nsys.MemcpyHtoD {
				sizes = append(sizes, ms[k].Bytes)
			}
		}
		if len(sizes) > 0 {
			slices.Sort(sizes)
			out[i].in = sizes[len(sizes)/2]
		}
		for ; k < len(ms) && ms[k].Kind == nsys.MemcpyDtoH && (j1 == len(ends) || ms[k].Start < ends[j1]); k++ {
			out[i].out += ms[k].Bytes
		}
	}
	return out
}

// copyPrompts says which steps process prompt tokens by their copies (iterCopies): their
// input is at least promptRatio times their read-back, compared with the median step's
// ratio (decode steps are most steps). It returns nil unless at least three steps, and at
// least half of them, have both input copies and a read-back: a loop that copies its inputs
// every iteration (one whose inputs stay on the device says nothing); and the smallest
// read-back of those steps: one sequence's worth, or a few. A step that copies no more input
// than a decode iteration of as large a batch or larger (decodeInputs over the template's
// steps: template[i]; a graph's padded static inputs are copied whole whatever the batch)
// holds no prompt by its copies.
func copyPrompts(cp []iterCopies, template []bool) (prompt []bool, why []string, minOut int64) {
	var ratios []float64
	for _, c := range cp {
		if c.in > 0 && c.out > 0 {
			ratios = append(ratios, float64(c.in)/float64(c.out))
			if minOut == 0 || c.out < minOut {
				minOut = c.out
			}
		}
	}
	if len(ratios) < 3 || 2*len(ratios) < len(cp) {
		return nil, nil, 0
	}
	ref := slices.Clone(ratios)
	slices.Sort(ref)
	med := ref[len(ref)/2]
	asDecode := decodeInputs(cp, template, med)
	// By the run's median ratio.
	prompt = make([]bool, len(cp))
	why = make([]string, len(cp))
	for i, c := range cp {
		prompt[i] = c.in > 0 && c.out > 0 && !asDecode[i] && float64(c.in) >= promptRatio*med*float64(c.out)
		if prompt[i] {
			why[i] = fmt.Sprintf("input copies %.1fx its read-back (the run's median %.1fx)", float64(c.in)/float64(c.out), med)
		}
	}
	// By the typical input (lower median) of the other iterations of the same read-back
	// size, when at least three read it back and at most a third of them copy twice the
	// typical input: a loop of two alternating kinds of iteration is not decoding beside a
	// few prompts.
	ins := map[int64][]int64{}
	for i, c := range cp {
		if c.in > 0 && c.out > 0 && !prompt[i] {
			ins[c.out] = append(ins[c.out], c.in)
		}
	}
	typical := map[int64]int64{}
	for out, v := range ins {
		slices.Sort(v)
		t, more := v[(len(v)-1)/2], 0
		for _, in := range v {
			if in >= sameBatchRatio*t {
				more++
			}
		}
		if len(v) >= 3 && 3*more <= len(v) {
			typical[out] = t
		}
	}
	for i, c := range cp {
		if t, ok := typical[c.out]; ok && !prompt[i] && !asDecode[i] && c.in >= sameBatchRatio*t {
			prompt[i] = true
			why[i] = fmt.Sprintf("input copies %.1fx those of the iterations of its batch (as large a read-back)", float64(c.in)/float64(t))
		}
	}
	return prompt, why, minOut
}

// decodeInputs says of each step whether another step of the decode template, of a ratio
// of input to read-back at most twice med (the run's median ratio: a decode one), reads back
// as much or more (as many sequences or more) and copies as much input or more.
func decodeInputs(cp []iterCopies, template []bool, med float64) []bool {
	type io struct {
		out, in, in2 int64 // in2: the second most input, of a step other than in's
		at           int   // the step that copies in
	}
	var ts []io
	for i, c := range cp {
		if template[i] && c.out > 0 && c.in > 0 && float64(c.in) <= 2*med*float64(c.out) {
			ts = append(ts, io{out: c.out, in: c.in, at: i})
		}
	}
	slices.SortFunc(ts, func(a, b io) int { return cmp.Compare(b.out, a.out) }) // most read back first
	for k := 1; k < len(ts); k++ {                                              // the most input of those reading back as much or more
		p, c := ts[k-1], &ts[k]
		switch {
		case c.in >= p.in:
			c.in2 = p.in
		default:
			c.in2 = max(c.in, p.in2)
			c.in, c.at = p.in, p.at
		}
	}
	out := make([]bool, len(cp))
	for i, c := range cp {
		k, _ := slices.BinarySearchFunc(ts, c.out, func(t io, o int64) int { return cmp.Compare(o, t.out) })
		for k < len(ts) && ts[k].out == c.out { // ts[:k] read back as much or more
			k++
		}
		if k > 0 {
			in := ts[k-1].in
			if ts[k-1].at == i {
				in = ts[k-1].in2
			}
			out[i] = in >= c.in && c.in > 0
		}
	}
	return out
}

// inferPhases gives a phase to steps whose detection gave none, by comparing what each step
// holds on the loop's own stream (hs: stepHoldings) with the decode template of the same
// loop: the steps of its most common kernel mix there. Similarity of kernel mixes decides
// nothing alone; each step's PhaseEvidence names the signal that decided:
//
//   - prompt tokens: more attention calls per forward than the template (a prompt chunk's own
//     attention beside the decode rows', or one a chunk); attention kernels the template never
//     runs (a prompt's causal or varlen attention), unless the step otherwise holds the
//     template's GEMMs in their band and as many attention calls (a multi-token decode: a
//     verify forward); eager while the template replays a CUDA graph; GEMMs well above the
//     template's; or, for a language model's forwards (llm), input copies on the loop's
//     stream larger than a decode iteration of its batch copies (copyPrompts). At a request's
//     start (starts[i]: the first step, or the first after a window outside steps) GEMM
//     kernels the template never runs (other shapes) count too. A prompt-holding step is prefill, or mixed when
//     it also runs the template's attention calls beside the prompt's, or reads back more
//     sequences after decoding ones (mixedByReadBack).
//   - decode: a template step, or one that holds what the template holds (its attention calls
//     per forward of its kernels, graph replay or eager as it, GEMMs in its band).
//   - uncertain: another kernel mix that no signal tells from decode or shows prompt tokens in.
//
// The template itself is checked (promptTemplate): when iterations of one kernel mix and one
// read-back size copy several times more input than each other and run longer GEMMs, their
// token count varies at a fixed number of sequences, which decode never does: a prompt-only
// loop (a disaggregated prefill worker), whose steps are prefill.
//
// Speculative rounds (DraftForwards) are decode steps, but a step at a request's start that
// holds what the other rounds do not (the prompt round) is a prefill (roundPhases).
func inferPhases(steps []Step, hs []holding, starts []bool, llm bool, cp []iterCopies) {
	unknown := 0
	rounds := false
	for _, s := range steps {
		if s.Phase == Unknown {
			unknown++
		}
		rounds = rounds || s.DraftForwards > 0
	}
	if unknown == 0 || len(steps) < 2 {
		return
	}
	if rounds {
		roundPhases(steps, hs, starts)
		return
	}
	inferred := make([]bool, len(steps))
	for i := range steps {
		inferred[i] = steps[i].Phase == Unknown
		if inferred[i] && steps[i].GraphCapture && !starts[i] {
			// A graph capture iteration runs a decode step's forward (warm-up, capture,
			// first replay) at far more cost: decode, kept out of the summaries.
			steps[i].Phase = Decode
			steps[i].PhaseEvidence = fmt.Sprintf("captures a CUDA graph (%v host time in graph calls); kept out of the summaries", steps[i].CaptureHost.Round(time.Microsecond))
			inferred[i] = false
		}
	}
	tp, ok := newTemplate(steps, hs, func(i int) bool { return steps[i].GraphCapture || steps[i].Phase == Partial })
	if !ok {
		for i := range steps {
			if steps[i].Phase == Unknown {
				steps[i].Phase, steps[i].PhaseEvidence = Decode, EvidenceNone
			}
		}
		return
	}
	if llm {
		if why := promptTemplate(steps, hs, cp, &tp); why != "" {
			promptLoop(steps, hs, &tp, why)
			return
		}
	}
	phasesByHolding(steps, hs, starts, llm, &tp)
	if !llm {
		return // tokens and sampled sequences: a language model's forwards only
	}
	inTemplate := make([]bool, len(steps))
	for i := range hs {
		inTemplate[i] = hs[i].sig == tp.sig
	}
	prompt, why, minOut := copyPrompts(cp, inTemplate)
	mixedByReadBack(steps, inferred, starts, cp)
	if prompt == nil {
		return
	}
	for i := range steps {
		if !inferred[i] || !prompt[i] || steps[i].Phase == Prefill || steps[i].Phase == Mixed {
			continue
		}
		steps[i].Phase, steps[i].PhaseEvidence = Prefill, why[i]
		if starts[i] || i == 0 || cp[i].out <= minOut {
			continue
		}
		if p := i - 1; steps[p].Phase == Decode || (prompt[p] && cp[p].out > minOut) {
			steps[i].Phase = Mixed
			steps[i].PhaseEvidence = why[i] + ", reading back more sequences than a prompt's beside decoding ones"
		}
	}
}

// A template is the decode-only template of a loop: the steps of its most common kernel mix
// on the loop's stream, and what they hold.
type template struct {
	sig       uint64
	n, of     int     // its steps, of the steps compared
	attn      float64 // median attention calls per forward
	attnNames map[nsys.NameID]bool
	gemms     map[nsys.NameID]nameTime // GEMM kernels per name: calls and time over its steps
	gemmMed   time.Duration            // median GEMM time a step
	gemmN     int                      // median GEMM kernels
	kernels   int                      // median kernels a step
	replays   bool                     // most of its steps replay CUDA graphs
}

// replays reports whether a step replays CUDA graphs (a launch for several kernels); eager
// whether it launches its kernels one by one.
func replays(s *Step) bool { return s.Launches > 0 && 4*s.Launches <= s.TotalKernels() }
func eager(s *Step) bool   { return s.Launches > 0 && 2*s.Launches >= s.TotalKernels() }

// perForward returns a step's attention calls per forward (per forward end; the step's own
// when the finder saw none).
func perForward(s *Step, h *holding) float64 {
	return float64(h.attnCalls()) / float64(max(s.forwards, 1))
}

// newTemplate finds the loop's decode template among the steps skip leaves: its most common
// kernel mix (ties: the least GEMM and attention work, leastWorkMix); false when no mix
// repeats.
func newTemplate(steps []Step, hs []holding, skip func(int) bool) (template, bool) {
	count := map[uint64]int{}
	var tp template
	best := 0
	for i := range hs { // first-seen order keeps ties deterministic
		if skip(i) {
			continue
		}
		tp.of++
		count[hs[i].sig]++
		if c := count[hs[i].sig]; c > best {
			tp.sig, best = hs[i].sig, c
		}
	}
	if best < 2 {
		return tp, false
	}
	tp.sig = leastWorkMix(steps, hs, count, tp.sig, best, skip)
	tp.n = count[tp.sig]
	tp.attnNames, tp.gemms = map[nsys.NameID]bool{}, map[nsys.NameID]nameTime{}
	var per, gemmN, ks []float64
	var gemms []time.Duration
	nrep := 0
	for i := range hs {
		if skip(i) || hs[i].sig != tp.sig {
			continue
		}
		for _, c := range hs[i].attn {
			tp.attnNames[c.name] = true
		}
		for _, c := range hs[i].gemms {
			t := tp.gemms[c.name]
			t.n += c.n
			t.d += c.d
			tp.gemms[c.name] = t
		}
		per = append(per, perForward(&steps[i], &hs[i]))
		gemms = append(gemms, hs[i].gemm)
		gemmN = append(gemmN, float64(hs[i].gemmN))
		ks = append(ks, float64(steps[i].TotalKernels()))
		if replays(&steps[i]) {
			nrep++
		}
	}
	tp.attn = QuantileF(per, 0.5)
	tp.gemmMed = Quantile(gemms, 0.5)
	tp.gemmN = int(QuantileF(gemmN, 0.5))
	tp.kernels = int(QuantileF(ks, 0.5))
	tp.replays = 2*nrep > tp.n
	return tp, true
}

// stepSignals is what a step holds against the decode template.
type stepSignals struct {
	per          float64 // attention calls per forward
	more, fewer  bool    // more or fewer attention calls per forward than the template's
	newAttn      bool    // attention kernels the template never runs
	decodeAttn   float64 // calls per forward of the template's own attention kernels
	eagerVsGraph bool    // eager while the template replays graphs
	graphVsEager bool    // replays graphs while the template is eager
	gemmRatio    float64 // the time of its GEMM kernels that the template runs too, over the template's mean time for as many calls; 0: none shared
	gemmAbove    bool    // gemmRatio, or its GEMM time over the template's median, at least promptGEMM: GEMMs on many more rows
	gemmBand     bool    // gemmRatio under promptGEMM: the decode template's GEMM time, within what batch sizes and tile choices vary (or no GEMM kernel shared: nothing to compare)
	newGEMMs     int     // GEMM kernel names the template never runs
}

func signalsOf(s *Step, h *holding, tp *template) stepSignals {
	g := stepSignals{per: perForward(s, h)}
	g.more = g.per >= 1.5*tp.attn && g.per >= tp.attn+1
	g.fewer = 1.5*g.per <= tp.attn && g.per <= tp.attn-1
	dec := 0
	for _, c := range h.attn {
		if tp.attnNames[c.name] {
			dec += c.n
		} else {
			g.newAttn = true
		}
	}
	g.decodeAttn = float64(dec) / float64(max(s.forwards, 1))
	var got, want float64
	for _, c := range h.gemms {
		t, ok := tp.gemms[c.name]
		if !ok {
			g.newGEMMs++
			continue
		}
		got += float64(c.d)
		want += float64(t.d) / float64(t.n) * float64(c.n)
	}
	if want > 0 {
		g.gemmRatio = got / want
	}
	g.eagerVsGraph = tp.replays && eager(s)
	g.graphVsEager = !tp.replays && replays(s)
	g.gemmAbove = g.gemmRatio >= promptGEMM || (tp.gemmMed > 0 && h.gemm >= promptGEMM*tp.gemmMed)
	g.gemmBand = !g.gemmAbove
	return g
}

// phasesByHolding gives each step of no phase its phase by what it holds against the
// template (inferPhases).
func phasesByHolding(steps []Step, hs []holding, starts []bool, llm bool, tp *template) {
	for i := range steps {
		s := &steps[i]
		if s.Phase != Unknown {
			continue
		}
		h := &hs[i]
		g := signalsOf(s, h, tp)
		var prompt []string
		if g.more {
			prompt = append(prompt, fmt.Sprintf("%s attention calls per forward, the decode template's %s", fnum(g.per), fnum(tp.attn)))
		}
		if g.eagerVsGraph && h.sig != tp.sig {
			prompt = append(prompt, fmt.Sprintf("eager (%d launches for %d kernels) while the decode template replays a CUDA graph", s.Launches, s.TotalKernels()))
		}
		if g.gemmAbove && h.sig != tp.sig { // the template's own kernels, slower: time alone (a throttled or stalled step)
			if g.gemmRatio >= promptGEMM {
				prompt = append(prompt, fmt.Sprintf("its GEMM kernels run %.1fx as long as the decode template's same kernels", g.gemmRatio))
			} else {
				prompt = append(prompt, fmt.Sprintf("its GEMMs take %.1fx the decode template's median", float64(h.gemm)/float64(tp.gemmMed)))
			}
		}
		multi := g.newAttn && !g.more && !g.fewer && h.gemmN == tp.gemmN && g.gemmBand && !g.eagerVsGraph
		start := llm && starts[i] && h.sig != tp.sig
		if g.newAttn && (!multi || start) {
			prompt = append(prompt, "attention kernels the decode template never runs")
		}
		if start && h.gemmN != tp.gemmN && !g.newAttn {
			prompt = append(prompt, fmt.Sprintf("%d GEMM kernels, the decode template's %d (other shapes)", h.gemmN, tp.gemmN))
		}
		if start && len(prompt) == 0 && 20*abs(s.TotalKernels()-tp.kernels) >= tp.kernels {
			prompt = append(prompt, fmt.Sprintf("%d kernels, the decode template's %d", s.TotalKernels(), tp.kernels))
		}
		switch {
		case len(prompt) > 0:
			s.Phase, s.PhaseEvidence = Prefill, strings.Join(prompt, "; ")
			if start {
				s.PhaseEvidence = "starts a request (the first step, or the first after a pause): " + s.PhaseEvidence
			}
			if g.more && g.newAttn && g.decodeAttn >= tp.attn && !start {
				s.Phase = Mixed
				s.PhaseEvidence += fmt.Sprintf(", beside the decode template's %s (its decode rows)", fnum(g.decodeAttn))
			}
		case h.sig == tp.sig:
			s.Phase = Decode
			s.PhaseEvidence = fmt.Sprintf("the decode template (the loop's most common kernel mix, %d of %d steps): %s attention calls per forward, no sign of prompt tokens", tp.n, tp.of, fnum(tp.attn))
		case multi:
			s.Phase = Decode
			s.PhaseEvidence = fmt.Sprintf("a multi-token decode (a verify forward): the decode template's %s attention calls per forward and its %d GEMMs in their band, other attention kernels", fnum(tp.attn), tp.gemmN)
		case !g.newAttn && !g.fewer && !g.graphVsEager && !g.eagerVsGraph && g.gemmBand:
			s.Phase = Decode
			s.PhaseEvidence = fmt.Sprintf("holds what the decode template holds: %s attention calls per forward of its kernels, %s as it, GEMMs in its band (another kernel mix)", fnum(g.per), modeWord(tp.replays))
		default:
			var d []string
			if g.fewer {
				d = append(d, fmt.Sprintf("%s attention calls per forward, the decode template's %s", fnum(g.per), fnum(tp.attn)))
			}
			if g.newAttn {
				d = append(d, "other attention kernels and other GEMMs")
			}
			if g.graphVsEager {
				d = append(d, "replays a CUDA graph while the decode template is eager")
			}
			if g.eagerVsGraph {
				d = append(d, "eager while the decode template replays a CUDA graph")
			}
			if !g.gemmBand {
				d = append(d, fmt.Sprintf("its GEMM kernels run %.1fx as long as the decode template's same kernels", g.gemmRatio))
			}
			s.Phase = Uncertain
			s.PhaseEvidence = "another kernel mix than the decode template's (" + strings.Join(d, "; ") + ") and no sign of prompt tokens"
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// fnum formats a per-forward count: an integer when it is one.
func fnum(x float64) string {
	if x == float64(int64(x)) {
		return fmt.Sprint(int64(x))
	}
	return fmt.Sprintf("%.1f", x)
}

func modeWord(graph bool) string {
	if graph {
		return "graph replay"
	}
	return "eager"
}

// roundPhases gives the phases of a loop of speculative rounds: decode, but a step at a
// request's start that holds attention or GEMM kernels the other rounds never run
// (its prompt), which is a prefill.
func roundPhases(steps []Step, hs []holding, starts []bool) {
	tp, ok := newTemplate(steps, hs, func(i int) bool { return steps[i].DraftForwards == 0 || starts[i] })
	for i := range steps {
		s := &steps[i]
		if s.Phase != Unknown {
			continue
		}
		s.Phase, s.PhaseEvidence = Decode, "decode between speculative rounds"
		if s.DraftForwards > 0 {
			s.PhaseEvidence = fmt.Sprintf("speculative round: %d draft forwards of depth %d, then a verify forward of depth %d", s.DraftForwards, s.DraftDepth, s.VerifyDepth)
		}
		if !starts[i] {
			continue
		}
		if !ok {
			s.Phase, s.PhaseEvidence = Prefill, "starts a request (the first step, or the first after a pause); no two rounds hold the same kernels to compare it with"
			continue
		}
		g := signalsOf(s, &hs[i], &tp)
		switch {
		case g.newAttn:
			s.Phase, s.PhaseEvidence = Prefill, "starts a request (the first step, or the first after a pause): attention kernels the other rounds never run"
		case g.newGEMMs > 0:
			s.Phase, s.PhaseEvidence = Prefill, fmt.Sprintf("starts a request (the first step, or the first after a pause): %d GEMM kernels the other rounds never run (other shapes)", g.newGEMMs)
		default:
			s.PhaseEvidence += "; the first step, or the first after a pause, holding the kernels of the other rounds"
		}
	}
}

// promptTemplate checks the template against decode, by two signals a prompt-only loop (a
// disaggregated prefill worker) shows and a decode loop cannot:
//
//   - one attention call a sequence: over iterations of at least two read-back sizes, every
//     iteration's attention calls per forward are proportional to the sequences it reads back.
//     Decode rows share one attention call whatever the batch; each prompt chunk has its own.
//   - the template holds more tokens than a decode iteration of its batch: another iteration
//     of the template's attention calls, GEMM count and read-back (as many sequences) copies at
//     most 1/sameBatchRatio of the template's input and runs its GEMMs at most 1/tokenGEMM as
//     long. A decode iteration runs one token a sequence, the fewest there can be.
//
// It returns the evidence, "" when neither holds.
func promptTemplate(steps []Step, hs []holding, cp []iterCopies, tp *template) string {
	var minOut int64
	for i := range steps {
		if c := cp[i]; c.out > 0 && steps[i].Phase == Unknown && (minOut == 0 || c.out < minOut) {
			minOut = c.out
		}
	}
	if minOut == 0 {
		return ""
	}
	// One attention call a sequence.
	n, prop, sizes, unit := 0, 0, map[int64]bool{}, -1.0
	for i := range steps {
		if steps[i].Phase != Unknown || steps[i].GraphCapture || cp[i].out == 0 || cp[i].out%minOut != 0 {
			continue
		}
		n++
		per := perForward(&steps[i], &hs[i]) / float64(cp[i].out/minOut)
		if unit < 0 && cp[i].out == minOut {
			unit = per
		}
		sizes[cp[i].out] = true
		if unit > 0 && per == unit {
			prop++
		}
	}
	if n >= 3 && len(sizes) >= 2 && unit > 0 && prop == n {
		return fmt.Sprintf("one attention call a sequence: every iteration runs %s attention calls per forward for each sequence it reads back (%d iterations, %d batch sizes); decode rows share theirs", fnum(unit), n, len(sizes))
	}
	// More tokens than a decode iteration of the template's batch.
	var ins []float64
	var gs []time.Duration
	outs := map[int64]bool{}
	for i := range steps {
		if hs[i].sig == tp.sig && cp[i].in > 0 {
			ins = append(ins, float64(cp[i].in))
			gs = append(gs, hs[i].gemm)
			outs[cp[i].out] = true
		}
	}
	if len(ins) == 0 {
		return ""
	}
	tin, tg := QuantileF(ins, 0.5), Quantile(gs, 0.5)
	for i := range steps {
		if hs[i].sig == tp.sig || steps[i].Phase != Unknown || cp[i].in == 0 || !outs[cp[i].out] || hs[i].gemmN != tp.gemmN || perForward(&steps[i], &hs[i]) != tp.attn {
			continue
		}
		if sameBatchRatio*float64(cp[i].in) <= tin && tokenGEMM*float64(hs[i].gemm) <= float64(tg) {
			return fmt.Sprintf("the loop's most common kernel mix holds more tokens than a decode iteration: iteration %d of its attention calls, GEMMs and read-back copies %d bytes of input and runs its GEMMs %v, the mix's %.0f bytes and %v",
				steps[i].Index, cp[i].in, hs[i].gemm.Round(time.Microsecond), tin, tg.Round(time.Microsecond))
		}
	}
	return ""
}

// tokenGEMM: GEMMs of one kernel mix that run this many times as long run on more rows.
const tokenGEMM = 1.1

// promptLoop gives the steps of a prompt-only loop (promptTemplate: why) their phase:
// prefill when they run the template's attention kernels only; uncertain otherwise.
func promptLoop(steps []Step, hs []holding, tp *template, why string) {
	for i := range steps {
		s := &steps[i]
		if s.Phase != Unknown {
			continue
		}
		g := signalsOf(s, &hs[i], tp)
		switch {
		case !g.newAttn && hs[i].attnCalls() > 0:
			s.Phase, s.PhaseEvidence = Prefill, "a prompt-only loop, "+why
		default:
			s.Phase, s.PhaseEvidence = Uncertain, "another attention than that of the loop's prompt iterations; no sign of decode"
		}
	}
}

// mixedByReadBack makes mixed the prompt-holding steps (by their shape) inside a request that
// read back more than the run's smallest read-back (more sequences than one prompt's) after
// a decode step, or after a prompt step that read back more than the smallest too (its
// sequences decode on): a prompt chunk beside the sequences that were decoding.
func mixedByReadBack(steps []Step, inferred, starts []bool, cp []iterCopies) {
	var minOut int64
	for _, c := range cp {
		if c.out > 0 && (minOut == 0 || c.out < minOut) {
			minOut = c.out
		}
	}
	if minOut == 0 {
		return
	}
	for i := 1; i < len(steps); i++ {
		s := &steps[i]
		p := &steps[i-1]
		decoding := p.Phase == Decode || ((p.Phase == Prefill || p.Phase == Mixed) && cp[i-1].out > minOut)
		if inferred[i] && !starts[i] && s.Phase == Prefill && decoding && cp[i].out > minOut {
			s.Phase = Mixed
			s.PhaseEvidence += fmt.Sprintf("; after a decode step it reads back %dx the smallest read-back (sequences beside the prompt)", cp[i].out/minOut)
		}
	}
}

// leastWorkMix breaks a tie between kernel mixes that are equally the most common (a
// loop of two alternating kinds of iteration: each request one prompt and one decode
// step): decode is the mix whose steps do the least GEMM and attention work (median busy
// time), since a prompt runs the same layers on many more tokens. Without a tie, or with
// equal work, it returns modal (the first seen).
func leastWorkMix(steps []Step, hs []holding, count map[uint64]int, modal uint64, best int, skip func(int) bool) uint64 {
	if best < 2 {
		return modal
	}
	work := map[uint64][]time.Duration{}
	var order []uint64
	for i, h := range hs {
		if skip(i) || count[h.sig] != best {
			continue
		}
		if _, seen := work[h.sig]; !seen {
			order = append(order, h.sig)
		}
		work[h.sig] = append(work[h.sig], steps[i].Busy[kernelclass.GEMM]+steps[i].Busy[kernelclass.Attention])
	}
	if len(order) < 2 {
		return modal
	}
	least := Quantile(work[modal], 0.5)
	for _, sig := range order {
		if w := Quantile(work[sig], 0.5); w < least {
			modal, least = sig, w
		}
	}
	return modal
}

// EvidenceNone is the phase evidence of a step given its phase without positive evidence:
// no kernel mix repeats, so decode is assumed (and a warning says so).
const EvidenceNone = "no evidence: no kernel mix repeats; decode assumed"

// EvidenceWhole is the phase evidence of the one step of a trace that no signal cut into
// steps: it holds every iteration, so it has no phase.
const EvidenceWhole = "the whole trace is one step (no signal cut it into iterations): no phase"

// EvidenceNVTX is the phase evidence of a step whose NVTX range's text says its phase.
const EvidenceNVTX = "the text of its NVTX range"

// PhaseCounts returns the number of steps per phase, as text like "1 prefill, 12 decode".
func PhaseCounts(ss []Step) string {
	var n [steps.NumPhases]int
	for _, s := range ss {
		if s.Phase < steps.NumPhases {
			n[s.Phase]++
		}
	}
	var parts []string
	for _, p := range []Phase{Prefill, Mixed, Decode, Uncertain, Unknown} {
		if n[p] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[p], p))
		}
	}
	return strings.Join(parts, ", ")
}

// A holding is what a step holds on its loop's own stream (the device's stream with the
// most kernels): what inferPhases compares with the decode template of the same loop.
// Side streams (KV transfers, swap-ins, exports) are left out: their work is no part of the
// iteration's forward.
type holding struct {
	sig   uint64        // the forward's kernel mix: an order-free sum of a hash per name, the sampler's left out
	attn  []nameCount   // attention kernels per name, first-seen order
	gemms []nameTime    // GEMM kernels per name, first-seen order
	gemm  time.Duration // GEMM kernels' summed run time
	gemmN int           // GEMM kernels
}

// A nameTime is a kernel name, how many of its kernels a step (or steps) hold and their time.
type nameTime struct {
	name nsys.NameID
	n    int
	d    time.Duration
}

// A nameCount is a kernel name and how many of its kernels a step holds.
type nameCount struct {
	name nsys.NameID
	n    int
}

// attnCalls returns the holding's attention kernels.
func (h *holding) attnCalls() int {
	n := 0
	for _, c := range h.attn {
		n += c.n
	}
	return n
}

// loopStream returns the stream that holds the most kernels of the device (ties: the
// lower id): the serving loop's own stream.
func loopStream(tl *steps.Timeline) (nsys.StreamID, bool) {
	t := tl.Trace
	per := map[nsys.StreamID]int{}
	for site, n := range steps.SiteCounts(t, tl) { // the timeline's kernels, per site
		if n > 0 {
			per[t.Sites[site].Stream] += n
		}
	}
	var best nsys.StreamID
	n := 0
	for s, c := range per {
		if c > n || (c == n && s < best) {
			best, n = s, c
		}
	}
	return best, n > 0
}

// readBackStream returns the stream of the loop's read-backs: the one most of the first
// device-to-host copies after each forward end (ends, sorted) run on; ok false when no
// forward end has a copy after it. A serving loop copies its inputs on the same stream
// (often another than its kernels'); a transfer stream's copies (KV export, swap-in) are
// no iteration's inputs.
func readBackStream(tl *steps.Timeline, ends []nsys.Time) (nsys.StreamID, bool) {
	var ms []nsys.Memop
	for _, m := range tl.Trace.Memops {
		if tl.Owns(m.Device, m.Proc) && m.Kind == nsys.MemcpyDtoH {
			ms = append(ms, m)
		}
	}
	slices.SortStableFunc(ms, func(a, b nsys.Memop) int { return cmp.Compare(a.Start, b.Start) })
	votes := map[nsys.StreamID]int{}
	for _, e := range ends {
		i, _ := slices.BinarySearchFunc(ms, e+1, func(m nsys.Memop, t nsys.Time) int { return cmp.Compare(m.Start, t) })
		if i < len(ms) {
			votes[ms[i].Stream]++
		}
	}
	var best nsys.StreamID
	n := 0
	for s, c := range votes {
		if c > n || (c == n && s < best) {
			best, n = s, c
		}
	}
	return best, n > 0
}

// stepHoldings sweeps the device's kernels once and returns each step's holding on the
// loop's stream.
func stepHoldings(tl *steps.Timeline, ss []Step, stream nsys.StreamID) []holding {
	hs := make([]holding, len(ss))
	if len(ss) == 0 {
		return hs
	}
	t := tl.Trace
	j := 0
	gidx, aidx := map[nsys.NameID]int{}, map[nsys.NameID]int{} // the current step's names, by their index
	tl.EachFrom(ss[0].Start, func(a *steps.Activity) bool {
		for j < len(ss) && a.Start >= ss[j].End {
			j++
			clear(gidx)
			clear(aidx)
		}
		if j == len(ss) {
			return false
		}
		if a.Src != steps.SrcKernel || a.Start < ss[j].Start || t.Sites[t.Kernels[a.Idx].Site].Stream != stream {
			return true
		}
		h := &hs[j]
		if a.Cat != kernelclass.Sampling { // the sampler's kernels vary with the batch (top-k variants)
			h.sig += steps.Mix64(uint64(a.Name) + 1)
		}
		switch a.Cat {
		case kernelclass.Attention:
			k, ok := aidx[a.Name]
			if !ok {
				k = len(h.attn)
				aidx[a.Name] = k
				h.attn = append(h.attn, nameCount{a.Name, 0})
			}
			h.attn[k].n++
		case kernelclass.GEMM:
			d := a.End.Sub(a.Start)
			h.gemm += d
			h.gemmN++
			k, ok := gidx[a.Name]
			if !ok {
				k = len(h.gemms)
				gidx[a.Name] = k
				h.gemms = append(h.gemms, nameTime{name: a.Name})
			}
			h.gemms[k].n++
			h.gemms[k].d += d
		}
		return true
	})
	return hs
}
