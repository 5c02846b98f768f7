package breakdown

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// A stepShape is what inferPhases needs of a step: a signature of its kernel mix (a sum
// of a hash per kernel name, so independent of order) and its attention kernels' names.
// account fills it in its one pass.
type stepShape struct {
	sig  uint64
	attn []nsys.NameID // distinct
	// first is the step's first kernel (a forward's embedding), lastGEMM its last GEMM (the
	// lm_head): the recurring pattern of a forward, counted by foldedPatternCheck.
	first, lastGEMM nsys.NameID
	started         bool
}

func (s *stepShape) add(a *activity) {
	s.sig += mix64(uint64(a.name) + 1)
	if a.cat == kernelclass.Attention && !slices.Contains(s.attn, a.name) {
		s.attn = append(s.attn, a.name)
	}
	if !s.started {
		s.first, s.started = a.name, true
	}
	if a.cat == kernelclass.GEMM {
		s.lastGEMM = a.name
	}
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
func inferPhases(steps []Step, shapes []stepShape, starts []bool, llm bool) {
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
			if steps[i].Phase == Unknown {
				steps[i].Phase = Decode
				if starts[i] {
					steps[i].Phase = Prefill
				}
			}
		}
		return
	}
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
	decodeAttn := map[nsys.NameID]bool{}
	var walls []time.Duration
	decodeGEMM := -1
	for i, s := range shapes {
		if s.sig == modal {
			for _, n := range s.attn {
				decodeAttn[n] = true
			}
			walls = append(walls, steps[i].Wall())
			decodeGEMM = steps[i].Kernels[kernelclass.GEMM]
		}
	}
	med := Quantile(walls, 0.5)
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
		if prefill && !starts[i] && steps[i].Kernels[kernelclass.GEMM] == decodeGEMM {
			prefill = false // a multi-token decode inside the request
		}
		if llm && starts[i] {
			prefill = true
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

// PhaseCounts returns the number of steps per phase, as text like "1 prefill, 12 decode".
func PhaseCounts(steps []Step) string {
	var n [numPhases]int
	for _, s := range steps {
		if s.Phase < numPhases {
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
