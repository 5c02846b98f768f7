package breakdown

import (
	"fmt"
	"slices"
	"time"

	"github.com/stepstat/stepstat/nsys"
)

// Self-checks: the step finder says when its result looks wrong, in every output (as
// warnings), instead of reporting a wrong breakdown silently.

// stepChecks returns warnings about a device's decode steps: steps without kernels, kernel
// counts that alternate between two values (several markers per step, cut in two), a first
// or last step cut short, and steps far from the median (ten times longer or shorter).
func stepChecks(dev nsys.DeviceID, steps []Step) []error {
	var dec []*Step
	for i := range steps {
		if steps[i].Phase == Decode {
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
	if w := cutEdgeCheck(dev, dec); w != nil {
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
	if len(devs) < 2 {
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
// kernels most decode steps launch: steps that start mid-step leave a piece at an edge.
func cutEdgeCheck(dev nsys.DeviceID, dec []*Step) error {
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
		if k := s.TotalKernels(); 4*k < 3*modal {
			return &SelfCheckWarning{fmt.Sprintf("device %d: self-check: decode step %d launches %d kernels where most launch %d; a step cut short at an edge (steps may start mid-step)", dev, s.Index, k, modal)}
		}
	}
	return nil
}
