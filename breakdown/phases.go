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

// A stepShape is what inferPhases needs of a step: a signature of its kernel mix (a sum
// of a hash per kernel name, so independent of order) and its attention kernels' names.
// account fills it in its one pass.
type stepShape struct {
	sig  uint64
	attn []nsys.NameID // distinct, in first-seen order
	// attnSet holds attn once it is past shortSet names, so that add stays linear in the
	// step's kernels whatever the number of distinct names (a file can name 320,000).
	attnSet map[nsys.NameID]struct{}
	// first is the step's first kernel (a forward's embedding), lastGEMM its last GEMM (the
	// lm_head): the recurring pattern of a forward, counted by foldedPatternCheck.
	first, lastGEMM nsys.NameID
	started         bool
}

func (s *stepShape) add(a *steps.Activity) {
	s.sig += steps.Mix64(uint64(a.Name) + 1)
	if a.Cat == kernelclass.Attention {
		s.addAttn(a.Name)
	}
	if !s.started {
		s.first, s.started = a.Name, true
	}
	if a.Cat == kernelclass.GEMM {
		s.lastGEMM = a.Name
	}
}

// shortSet is the most names a linear scan looks through before a set takes over.
const shortSet = 16

// addAttn adds n to the step's distinct attention names.
func (s *stepShape) addAttn(n nsys.NameID) {
	if s.attnSet == nil {
		if slices.Contains(s.attn, n) {
			return
		}
		s.attn = append(s.attn, n)
		if len(s.attn) > shortSet {
			s.attnSet = make(map[nsys.NameID]struct{}, 2*len(s.attn))
			for _, m := range s.attn {
				s.attnSet[m] = struct{}{}
			}
		}
		return
	}
	if _, ok := s.attnSet[n]; !ok {
		s.attnSet[n] = struct{}{}
		s.attn = append(s.attn, n)
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

// promptGEMM: a step whose GEMMs are the decode steps' in number but take at least this many
// times their median busy time runs them on a prompt's rows, not on a few tokens per sequence.
const promptGEMM = 3

// stepCopies returns what the copies say of each step, from the forward ends (sampler
// starts, sorted): a step's inputs are the host-to-device copies after the previous forward's
// end up to its own last one (its first step: from its start); its read-back the
// device-to-host copies after its last forward's end, before the next forward's end or the
// next iteration's first input copy. A step without a forward end says nothing.
func stepCopies(t *nsys.Trace, dev nsys.DeviceID, steps []Step, ends []nsys.Time) []iterCopies {
	out := make([]iterCopies, len(steps))
	var ms []nsys.Memop
	for _, m := range t.Memops {
		if m.Device == dev && (m.Kind == nsys.MemcpyHtoD || m.Kind == nsys.MemcpyDtoH) {
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
// read-back of those steps: one sequence's worth, or a few.
func copyPrompts(cp []iterCopies) (prompt []bool, why []string, minOut int64) {
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
	// By the run's median ratio.
	prompt = make([]bool, len(cp))
	why = make([]string, len(cp))
	for i, c := range cp {
		prompt[i] = c.in > 0 && c.out > 0 && float64(c.in) >= promptRatio*med*float64(c.out)
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
		if t, ok := typical[c.out]; ok && !prompt[i] && c.in >= sameBatchRatio*t {
			prompt[i] = true
			why[i] = fmt.Sprintf("input copies %.1fx those of the iterations of its batch (as large a read-back)", float64(c.in)/float64(t))
		}
	}
	return prompt, why, minOut
}

// inferPhases gives a phase to steps whose detection gave none, from their shape: the most
// common kernel mix is decode; a step with another mix is a prefill candidate when it runs
// attention kernels that decode steps never run, or takes at least three times the decode
// median. A candidate that starts a request (starts[i]: the device's first step, or the
// first after a window outside steps, a pause between requests) is a prefill. Inside a
// request, a candidate is a prefill only when its GEMMs differ in number from the decode
// steps' (a new prompt's GEMMs run other shapes); one that runs the decode steps' GEMMs is
// a multi-token decode: the verify forward of prompt-lookup or speculative decoding, whose
// attention is a prefill's. Speculative rounds (DraftForwards) are decode steps but at a
// request's start, where the round holds the prompt. On a device that runs a language
// model's forwards (llm: the finder saw a sampler after the lm_head end them), a request's
// first step with another mix than decode's is its prefill even with decode's attention
// (continuous batching packs a prompt into the same kernels as decoding).
//
// On such a device the copies (cp, stepCopies) then tell what the shape cannot: a step whose
// input copies are promptRatio times its read-back or more (copyPrompts) processes prompt
// tokens, whatever its kernels. It is a prefill at a request's start; inside a request it is mixed (a prompt
// chunk beside decoding sequences) when sequences are already generating: it reads back more
// than the run's smallest read-back (more than the one sequence of its prompt), and the step
// before it is a decode step, or a prompt step that read back more than the smallest too (a
// batch of several sequences, of which at most the last is a partial prompt chunk: a token
// budget cuts one prompt per iteration, and the others sample on). Otherwise it is a prefill
// (a prompt chunk after a chunk of the same prompt, or prompts alone).
func inferPhases(steps []Step, shapes []stepShape, starts []bool, llm bool, cp []iterCopies) {
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
		for i := range steps {
			s := &steps[i]
			if s.Phase != Unknown {
				continue
			}
			s.Phase, s.PhaseEvidence = Decode, "decode between speculative rounds"
			if s.DraftForwards > 0 {
				s.PhaseEvidence = fmt.Sprintf("speculative round: %d draft forwards of depth %d, then a verify forward of depth %d", s.DraftForwards, s.DraftDepth, s.VerifyDepth)
			}
			if starts[i] {
				s.Phase, s.PhaseEvidence = Prefill, "starts a request (the first step, or the first after a pause)"
			}
		}
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
	phasesByShape(steps, shapes, starts, llm)
	if !llm {
		return // tokens and sampled sequences: a language model's forwards only
	}
	prompt, why, minOut := copyPrompts(cp)
	mixedByReadBack(steps, inferred, starts, cp)
	if prompt == nil {
		return
	}
	for i := range steps {
		if !inferred[i] || !prompt[i] {
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

// phasesByShape is inferPhases' rule by kernel mix, for steps of no speculative round.
func phasesByShape(steps []Step, shapes []stepShape, starts []bool, llm bool) {
	count := map[uint64]int{}
	for _, s := range shapes {
		count[s.sig]++
	}
	var modal uint64
	best := -1
	for _, s := range shapes { // first-seen order keeps ties deterministic
		if c := count[s.sig]; c > best {
			modal, best = s.sig, c
		}
	}
	modal = leastWorkMix(steps, shapes, count, modal, best)
	decodeAttn := map[nsys.NameID]bool{}
	var walls, gemms []time.Duration
	decodeGEMM := -1
	for i, s := range shapes {
		if s.sig == modal {
			for _, n := range s.attn {
				decodeAttn[n] = true
			}
			walls = append(walls, steps[i].Wall())
			gemms = append(gemms, steps[i].Busy[kernelclass.GEMM])
			decodeGEMM = steps[i].Kernels[kernelclass.GEMM]
		}
	}
	med, gemmMed := Quantile(walls, 0.5), Quantile(gemms, 0.5)
	// Decode steps that replay a CUDA graph (a launch for several kernels): an eager step
	// between replays runs what the graphs do not cover (prompt chunks of other shapes).
	replays := func(s *Step) bool { return s.Launches > 0 && 4*s.Launches <= s.TotalKernels() }
	eager := func(s *Step) bool { return s.Launches > 0 && 2*s.Launches >= s.TotalKernels() }
	decodeReplays, firstReplay := false, -1
	for i, sh := range shapes {
		if replays(&steps[i]) {
			decodeReplays = decodeReplays || sh.sig == modal
			if firstReplay < 0 {
				firstReplay = i
			}
		}
	}
	for i := range steps {
		if steps[i].Phase != Unknown {
			continue
		}
		s := &steps[i]
		if best < 2 {
			s.Phase, s.PhaseEvidence = Decode, EvidenceNone
			continue
		}
		if shapes[i].sig == modal {
			s.Phase, s.PhaseEvidence = Decode, "the most common kernel mix (decode's)"
			continue
		}
		var why string
		if s.Wall() >= 3*med {
			why = fmt.Sprintf("%.1fx the decode steps' median time, another kernel mix", float64(s.Wall())/float64(max(med, 1)))
		}
		for _, n := range shapes[i].attn {
			if !decodeAttn[n] {
				why = "attention kernels the decode steps never run"
			}
		}
		between := llm && decodeReplays && i > firstReplay && eager(s)
		if between && why == "" {
			why = "eager between the decode steps' graph replays, another kernel mix"
		}
		prefill := why != ""
		// A multi-token decode inside the request (a verify forward) runs the decode
		// steps' GEMMs in about their time; a language model's prompt runs as many GEMMs
		// on many more rows, for several times as long, and an eager step between graph
		// replays is not the decode loop's.
		if prefill && !starts[i] && !between && s.Kernels[kernelclass.GEMM] == decodeGEMM {
			if !llm || s.Busy[kernelclass.GEMM] < promptGEMM*gemmMed {
				prefill = false
				why = "the decode steps' GEMMs in their time, other attention: a multi-token decode"
			} else {
				why += fmt.Sprintf("; its GEMMs take %.1fx the decode median", float64(s.Busy[kernelclass.GEMM])/float64(max(gemmMed, 1)))
			}
		}
		if llm && starts[i] {
			prefill = true
			why = "starts a request (the first step, or the first after a pause) with another kernel mix than decode's"
		}
		if why == "" {
			why = "another kernel mix than decode's, but no sign of prompt tokens"
		}
		s.PhaseEvidence = why
		if prefill {
			s.Phase = Prefill
		} else {
			s.Phase = Decode
		}
	}
}

// leastWorkMix breaks a tie between kernel mixes that are equally the most common (a
// loop of two alternating kinds of iteration: each request one prompt and one decode
// step): decode is the mix whose steps do the least GEMM and attention work (median busy
// time), since a prompt runs the same layers on many more tokens. Without a tie, or with
// equal work, it returns modal (the first seen).
func leastWorkMix(steps []Step, shapes []stepShape, count map[uint64]int, modal uint64, best int) uint64 {
	if best < 2 {
		return modal
	}
	work := map[uint64][]time.Duration{}
	var order []uint64
	for i, s := range shapes {
		if count[s.sig] != best {
			continue
		}
		if _, seen := work[s.sig]; !seen {
			order = append(order, s.sig)
		}
		work[s.sig] = append(work[s.sig], steps[i].Busy[kernelclass.GEMM]+steps[i].Busy[kernelclass.Attention])
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
	for _, p := range []Phase{Prefill, Mixed, Decode, Unknown} {
		if n[p] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[p], p))
		}
	}
	return strings.Join(parts, ", ")
}
