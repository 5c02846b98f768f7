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
	for _, s := range shapes { // first-seen order keeps ties deterministic
		if c := count[s.sig]; c > best {
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
	var n [3]int
	for _, s := range steps {
		n[s.Phase]++
	}
	var parts []string
	for _, p := range []Phase{Prefill, Decode, Unknown} {
		if n[p] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[p], p))
		}
	}
	return strings.Join(parts, ", ")
}
