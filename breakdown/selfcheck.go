package breakdown

import (
	"fmt"
	"slices"
	"time"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// Self-checks: the step finder says when its result looks wrong, in every output (as
// warnings), instead of reporting a wrong breakdown silently.

// stepChecks returns warnings about a device's steps. On every phase, when the model's
// forwards could be seen (fwdKnown: a sampler after the lm_head ends each): steps that hold
// several forwards (iterations folded together), and step counts that disagree with the
// forwards the device ran; steps of uncertain phase; prefills far longer than the others. On decode steps: steps
// without kernels, kernel counts that alternate between two values (several markers per
// step, cut in two), a first or last step cut short, and steps far from the median (ten
// times longer or shorter).
func stepChecks(dev nsys.DeviceID, steps []Step, fwdKnown bool) []error {
	out := forwardChecks(dev, steps, fwdKnown)
	if w := evidenceCheck(dev, steps); w != nil {
		out = append(out, w)
	}
	if w := uncertainCheck(dev, steps); w != nil {
		out = append(out, w)
	}
	if w := longPrefillCheck(dev, steps); w != nil {
		out = append(out, w)
	}
	if w := prefillTwinCheck(dev, steps); w != nil {
		out = append(out, w)
	}
	return append(out, decodeChecks(dev, steps, fwdKnown)...)
}

// forwardChecks warns, when the forwards are known, about steps that hold more forwards
// than one iteration (one forward, or a speculative round's drafts and verify), or else
// about a count of steps that disagrees with the forwards in them.
func forwardChecks(dev nsys.DeviceID, steps []Step, fwdKnown bool) []error {
	if !fwdKnown {
		return nil
	}
	var folded []int
	ran, want, worst := 0, 0, -1
	for i, s := range steps {
		ran += s.forwards
		if s.Phase == Partial {
			want += s.forwards // a window edge's piece holds a forward's end or none
			continue
		}
		want += 1 + s.DraftForwards
		if s.forwards > 1+s.DraftForwards {
			folded = append(folded, s.Index)
			if worst < 0 || s.forwards > steps[worst].forwards {
				worst = i
			}
		}
	}
	if len(folded) > 0 {
		w := &steps[worst]
		return []error{&SelfCheckWarning{fmt.Sprintf("device %d: self-check: %d steps hold several forwards of the model (a sampler after the lm_head each; step %d, %v, holds %d): a step is one iteration, so iterations are likely folded together: steps %v",
			dev, len(folded), w.Index, w.Phase, w.forwards, folded[:min(len(folded), 5)])}}
	}
	if ran != want {
		return []error{&SelfCheckWarning{fmt.Sprintf("device %d: self-check: %d steps (with %d draft forwards) but the device ran %d forwards of the model in them (a sampler after the lm_head each); steps likely miss iterations or hold work that is not one",
			dev, len(steps), want-len(steps), ran)}}
	}
	return nil
}

// longPrefillCheck warns when one of three or more prefills takes more than ten times
// their median: a prefill that holds other iterations' work.
func longPrefillCheck(dev nsys.DeviceID, steps []Step) error {
	var walls []time.Duration
	for _, s := range steps {
		if s.Phase == Prefill {
			walls = append(walls, s.Wall())
		}
	}
	if len(walls) < 3 {
		return nil
	}
	med := Quantile(walls, 0.5)
	for _, s := range steps {
		if s.Phase == Prefill && med > 0 && s.Wall() > 10*med {
			return &SelfCheckWarning{fmt.Sprintf("device %d: self-check: prefill step %d takes %v, more than 10x the median prefill (%v); it likely holds other iterations' work", dev, s.Index, s.Wall(), med)}
		}
	}
	return nil
}

// decodeChecks returns the checks of decode steps.
func decodeChecks(dev nsys.DeviceID, steps []Step, fwdKnown bool) []error {
	var dec []*Step
	for i := range steps {
		if steps[i].Phase == Decode && !steps[i].GraphCapture { // a capture is no decode step of the summary
			dec = append(dec, &steps[i])
		}
	}
	if len(dec) < 2 {
		return nil
	}
	var out []error
	empty := 0
	for _, s := range dec {
		if s.TotalKernels() == 0 {
			empty++
		}
	}
	if empty > 0 {
		out = append(out, &SelfCheckWarning{fmt.Sprintf("device %d: self-check: %d of %d decode steps launch no kernel; the step boundaries are likely wrong", dev, empty, len(dec))})
	}
	if len(dec) >= 4 {
		a, b := dec[0].TotalKernels(), dec[1].TotalKernels()
		alt := a != b
		for i, s := range dec {
			if want := []int{a, b}[i%2]; s.TotalKernels() != want {
				alt = false
				break
			}
		}
		if alt {
			out = append(out, &SelfCheckWarning{fmt.Sprintf("device %d: self-check: decode steps alternate between %d and %d kernels; each real step is likely cut in two", dev, a, b)})
		}
	}
	if w := cutEdgeCheck(dev, dec, fwdKnown); w != nil {
		out = append(out, w)
	}
	walls := make([]time.Duration, len(dec))
	for i, s := range dec {
		walls[i] = s.Wall()
	}
	med := Quantile(walls, 0.5)
	var far []int
	for _, s := range dec {
		if med > 0 && (s.Wall() > 10*med || 10*s.Wall() < med) {
			far = append(far, s.Index)
		}
	}
	if len(far) > 0 {
		shown := far[:min(len(far), 5)]
		out = append(out, &SelfCheckWarning{fmt.Sprintf("device %d: self-check: %d decode steps are more than 10x away from the median step (%v): steps %v", dev, len(far), med, shown)})
	}
	return out
}

// rankChecks warns when the devices of one trace (ranks of one job) disagree on the number
// of decode steps.
func rankChecks(devs []DeviceReport) []error {
	if len(devs) < 2 || sharedDevices(devs) {
		return nil
	}
	counts := make([]int, len(devs))
	for i, d := range devs {
		for _, s := range d.Steps {
			if s.Phase == Decode {
				counts[i]++
			}
		}
	}
	if slices.Min(counts) == slices.Max(counts) {
		return nil
	}
	return []error{&SelfCheckWarning{fmt.Sprintf("self-check: the devices disagree on the number of decode steps (%v); ranks of one job run the same steps, so steps are likely misplaced on some", counts)}}
}

// A SelfCheckWarning says that the steps found look wrong; the front end may add how to
// choose the step method by hand.
type SelfCheckWarning struct{ Text string }

func (w *SelfCheckWarning) Error() string { return w.Text }

// cutEdgeCheck warns when the first or the last decode step launches fewer than 3/4 of the
// kernels most decode steps launch: steps that start mid-step leave a piece at an edge. A
// step that holds its whole forward (fwdKnown and one forward end) is not cut short: a
// speculative round with fewer drafts near the end is shorter, and that is normal.
func cutEdgeCheck(dev nsys.DeviceID, dec []*Step, fwdKnown bool) error {
	if len(dec) < 3 {
		return nil
	}
	count := map[int]int{}
	modal, best := 0, 0
	for _, s := range dec {
		k := s.TotalKernels()
		count[k]++
		if c := count[k]; c > best || (c == best && k > modal) {
			modal, best = k, c
		}
	}
	for _, s := range []*Step{dec[0], dec[len(dec)-1]} {
		if fwdKnown && s.forwards == 1+s.DraftForwards {
			continue
		}
		if k := s.TotalKernels(); 4*k < 3*modal {
			return &SelfCheckWarning{fmt.Sprintf("device %d: self-check: decode step %d launches %d kernels where most launch %d; a step cut short at an edge (steps may start mid-step)", dev, s.Index, k, modal)}
		}
	}
	return nil
}

// foldedPatternCheck is the check of folded iterations where no sampler marks the forwards'
// ends: the most common decode step's first kernel (a forward's embedding) and last GEMM (its
// lm_head) recur once per forward, so a step (any phase) that runs both at least twice as
// often as the decode steps do holds several iterations. One more pass over the timeline,
// counting the two names per step.
func foldedPatternCheck(tl *steps.Timeline, ss []Step, shapes []stepShape) error {
	count := map[uint64]int{}
	modal, best := -1, 0
	for i, s := range shapes {
		if ss[i].Phase != Decode || !s.started || s.lastGEMM == s.first {
			continue
		}
		count[s.sig]++
		if c := count[s.sig]; c > best {
			modal, best = i, c
		}
	}
	if best < 3 {
		return nil
	}
	first, last := shapes[modal].first, shapes[modal].lastGEMM
	n := make([][2]int, len(ss))
	j := 0
	tl.Each(func(a *steps.Activity) bool {
		if a.Src != steps.SrcKernel || (a.Name != first && a.Name != last) {
			return true
		}
		for j < len(ss) && a.Start >= ss[j].End {
			j++
		}
		if j == len(ss) {
			return false
		}
		if a.Start >= ss[j].Start {
			if a.Name == first {
				n[j][0]++
			}
			if a.Name == last {
				n[j][1]++
			}
		}
		return true
	})
	per := n[modal] // the pattern's count in one iteration
	if per[0] == 0 || per[1] == 0 {
		return nil
	}
	var folded []int
	worst := -1
	for i := range ss {
		if n[i][0] >= 2*per[0] && n[i][1] >= 2*per[1] {
			folded = append(folded, ss[i].Index)
			if worst < 0 || n[i][1] > n[worst][1] {
				worst = i
			}
		}
	}
	if len(folded) == 0 {
		return nil
	}
	w := &ss[worst]
	return &SelfCheckWarning{fmt.Sprintf("device %d: self-check: %d steps hold several iterations' worth of forwards (the decode step's first kernel and last GEMM recur %dx and %dx in step %d, %v): iterations are likely folded together: steps %v",
		tl.Dev, len(folded), n[worst][0]/per[0], n[worst][1]/per[1], w.Index, w.Phase, folded[:min(len(folded), 5)])}
}

// evidenceCheck warns when steps have their phase without positive evidence (EvidenceNone):
// the finder then claims nothing but one step per forward, decode, and says so.
func evidenceCheck(dev nsys.DeviceID, steps []Step) error {
	var none []int
	for _, s := range steps {
		if s.PhaseEvidence == EvidenceNone {
			none = append(none, s.Index)
		}
	}
	if len(none) == 0 {
		return nil
	}
	return &SelfCheckWarning{fmt.Sprintf("device %d: self-check: %d of %d steps have no evidence of their phase (no kernel mix repeats from step to step): they are called decode, and prefill or mixed steps among them are not told apart: steps %v",
		dev, len(none), len(steps), none[:min(len(none), 5)])}
}

// uncertainCheck names the steps of phase Uncertain: iterations that no signal told from
// decode or showed prompt tokens in, counted apart and kept out of the decode summary.
func uncertainCheck(dev nsys.DeviceID, steps []Step) error {
	var un []int
	for _, s := range steps {
		if s.Phase == Uncertain {
			un = append(un, s.Index)
		}
	}
	if len(un) == 0 {
		return nil
	}
	return &SelfCheckWarning{fmt.Sprintf("device %d: self-check: %d of %d steps are of uncertain phase: another kernel mix than the loop's decode template, and no signal (attention calls per forward, attention and GEMM kernels, graph replay or eager, GEMM time, input copies) tells them from decode or shows prompt tokens; kept out of the decode summary (their phase_evidence says what differs): steps %v",
		dev, len(un), len(steps), un[:min(len(un), 5)])}
}

// longMixCheck warns about decode steps that take more than OutlierFactor times the median
// decode step and run another kernel mix than the most common decode one, with 5% more or
// fewer kernels: iterations that
// likely hold prompt tokens (a prefill or a mixed batch) that no evidence showed, or a cut
// in the wrong place. They are outliers of the summary already (never its limiter); the
// warning says why their phase is in doubt.
func longMixCheck(dev nsys.DeviceID, steps []Step, shapes []stepShape) error {
	count := map[uint64]int{}
	var modal uint64
	best := 0
	var walls []time.Duration
	for i := range steps {
		s := &steps[i]
		if s.Phase != Decode || s.GraphCapture {
			continue
		}
		walls = append(walls, s.Wall())
		if s.PhaseEvidence == EvidenceNVTX {
			continue // the engine said decode: its mix is no doubt
		}
		count[shapes[i].sig]++
		if c := count[shapes[i].sig]; c > best {
			modal, best = shapes[i].sig, c
		}
	}
	if len(walls) < OutlierMinSteps || best < 2 {
		return nil
	}
	med := Quantile(walls, 0.5)
	modalKernels := 0
	for i := range steps {
		if steps[i].Phase == Decode && shapes[i].sig == modal {
			modalKernels = steps[i].TotalKernels()
			break
		}
	}
	var odd []int
	for i := range steps {
		s := &steps[i]
		// Another mix of about as many kernels is a variant of decode's (a library's kernel
		// for the new shape, as cuDNN builds one per sequence length); a prompt chunk adds
		// kernels (its attention, its copies).
		k := s.TotalKernels()
		more := 20*(k-modalKernels) > modalKernels || 20*(modalKernels-k) > modalKernels
		if s.Phase == Decode && !s.GraphCapture && s.PhaseEvidence != EvidenceNVTX && s.Wall() > OutlierFactor*med && shapes[i].sig != modal && more {
			odd = append(odd, s.Index)
		}
	}
	if len(odd) == 0 {
		return nil
	}
	return &SelfCheckWarning{fmt.Sprintf("device %d: self-check: %d decode steps take more than %dx the median decode step (%v) and run another kernel mix than decode's: they likely hold prompt tokens (prefill or mixed) no evidence showed; left out of the summary as outliers: steps %v",
		dev, len(odd), OutlierFactor, med, odd[:min(len(odd), 5)])}
}

// prefillTwinCheck warns about decode steps that are twins of a prefill step: the same
// kernels per category and within 2% of its wall time, three times the median decode step
// or longer. A prefill repeats exactly when a capture holds several runs of one program (a
// benchmark run again, a server answering the same request): the later runs' prefills are
// then called decode, and the phases cannot be trusted.
func prefillTwinCheck(dev nsys.DeviceID, steps []Step) error {
	var pre []*Step
	var walls []time.Duration
	for i := range steps {
		switch s := &steps[i]; {
		case s.Phase == Prefill: // a prefill may instantiate its graph (XLA's first call)
			pre = append(pre, s)
		case s.Phase == Decode && !s.GraphCapture:
			walls = append(walls, s.Wall())
		}
	}
	if len(pre) == 0 || len(walls) < OutlierMinSteps {
		return nil
	}
	med := Quantile(walls, 0.5)
	var twins []int
	for i := range steps {
		s := &steps[i]
		if s.Phase != Decode || s.PhaseEvidence == EvidenceNVTX || s.Wall() < 3*med {
			continue
		}
		for _, p := range pre {
			d := s.Wall() - p.Wall()
			if s.Kernels == p.Kernels && 50*max(d, -d) <= p.Wall() {
				twins = append(twins, s.Index)
				break
			}
		}
	}
	if len(twins) == 0 {
		return nil
	}
	return &SelfCheckWarning{fmt.Sprintf("device %d: self-check: %d decode steps run the very kernels of a prefill step in its time (more than 3x the median decode step %v): the capture likely holds several runs of one program, whose later prefills are called decode; steps %v",
		dev, len(twins), med, twins[:min(len(twins), 5)])}
}

// mixChangeMin is the fewest decode steps each side of a kernel regime change has.
const mixChangeMin = 3

// mixChangeCheck warns when the decode steps change kernel regime mid-run (regimeChange:
// the first ones run one kernel mix or a few that repeat, every later one another,
// never seen before), at the same batch (the read-back and the input copies of
// the same size on both sides) and eagerly launched. The workload changed what it runs (a
// library picked another algorithm, a kernel was added), so the decode summary averages
// two regimes and a diff against another capture compares part of one with the other;
// the warning names the first step of the new regime. A change with the batch (the copies'
// sizes differ), under CUDA graphs (a graph per batch-size bucket, replayed as the batch
// grows) or that keeps the kernels per category (a library's variant of a kernel for the
// longer context, as attention and cuDNN pick per sequence length) is normal and not
// warned about: the change must add, drop or move kernels. cp holds each step's copies (stepCopies), nil
// when unknown.
func mixChangeCheck(dev nsys.DeviceID, ss []Step, shapes []stepShape, cp []iterCopies) error {
	var dec []int
	for i := range ss {
		if ss[i].Phase == Decode && !ss[i].GraphCapture {
			dec = append(dec, i)
		}
	}
	if len(dec) < 2*mixChangeMin {
		return nil
	}
	k := regimeChange(dec, shapes)
	if k < 0 {
		return nil
	}
	for _, i := range dec {
		if replays(&ss[i]) {
			return nil // a graph per batch-size bucket, replayed as the batch grows
		}
	}
	if cp != nil {
		side := func(part []int) (in, out []int64) {
			for _, i := range part {
				if i < len(cp) {
					in, out = append(in, cp[i].in), append(out, cp[i].out)
				}
			}
			return in, out
		}
		in1, out1 := side(dec[:k])
		in2, out2 := side(dec[k:])
		if medianInt(in1) != medianInt(in2) || medianInt(out1) != medianInt(out2) {
			return nil // another batch: its kernels are another library choice
		}
	}
	s1, s2 := &ss[dec[k-1]], &ss[dec[k]]
	if s1.Kernels == s2.Kernels {
		return nil // as many kernels of each category: a library's variant for the new shape (a longer context)
	}
	return &SelfCheckWarning{fmt.Sprintf("device %d: self-check: the decode steps change kernel regime at step %d: the %d decode steps before it run one kernel mix or a few that repeat (%d kernels a step), the %d from it on other mixes, not seen before (%d kernels a step), at the same batch (copies of the same size): the workload changed what it runs mid-run, so the decode summary averages two regimes; compare the parts apart (--skip, or captures of one regime)",
		dev, s2.Index, k, s1.TotalKernels(), len(dec)-k, s2.TotalKernels())}
}

// regimeChange returns the index in dec of the first step of a new kernel regime, or -1:
// the steps before it and the steps from it on (at least mixChangeMin each) share no kernel
// mix, and each side repeats its mixes (no more distinct mixes than half its steps: MoE
// routing may alternate two mixes; a mix per step, as a library's kernel per sequence
// length, is no regime). One pass, with each mix's count on the side after the cut.
func regimeChange(dec []int, shapes []stepShape) int {
	after := map[uint64]int{}
	for _, i := range dec {
		after[shapes[i].sig]++
	}
	before := map[uint64]int{}
	shared := 0 // mixes on both sides of the cut
	for k, i := range dec {
		if k >= mixChangeMin && len(dec)-k >= mixChangeMin && shared == 0 &&
			2*len(before) <= k && 2*len(after) <= len(dec)-k {
			return k
		}
		sig := shapes[i].sig
		if before[sig] == 0 && after[sig] > 1 {
			shared++ // now on both sides
		}
		before[sig]++
		if after[sig]--; after[sig] == 0 {
			delete(after, sig)
			if before[sig] > 1 {
				shared-- // its last one crossed over
			}
		}
	}
	return -1
}

// medianInt returns the median of v (the lower middle one), 0 when v is empty.
func medianInt(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	w := slices.Clone(v)
	slices.Sort(w)
	return w[(len(w)-1)/2]
}
