package findings

import (
	"time"

	"github.com/stepstat/stepstat/breakdown"
)

// Skew is the largest wait of one rank for another over the aligned steps of a rank view:
// which rank waits, for which, how long per step, and whether that is material
// (MaterialShare of the waiting rank's median step and MaterialWait per step, both).
// Below that the ranks are balanced, whichever rank arrived last most often.
type Skew struct {
	Waiter, Late int           // indexes of RankReport.Devices; -1 when nothing was matched
	Wait         time.Duration // Waiter's wait for Late per aligned step
	Step         time.Duration // Waiter's median aligned step
	Material     bool
}

// SkewOf returns the rank view's largest wait of one rank for another.
func SkewOf(rk *breakdown.RankReport) Skew {
	s := Skew{Waiter: -1, Late: -1}
	if rk == nil || len(rk.Steps) == 0 || len(rk.Calls) == 0 {
		return s
	}
	n := time.Duration(len(rk.Steps))
	for w := range rk.Devices {
		for l, x := range rk.Devices[w].WaitFor {
			if s.Waiter < 0 || x/n > s.Wait {
				s.Waiter, s.Late, s.Wait = w, l, x/n
			}
		}
	}
	if s.Waiter >= 0 {
		s.Step = rk.Devices[s.Waiter].MedianStep
		s.Material = material(s.Wait, s.Step)
	}
	return s
}

// material reports whether wait per step is material against step.
func material(wait, step time.Duration) bool {
	return wait >= MaterialWait && frac(wait, step) >= MaterialShare
}
