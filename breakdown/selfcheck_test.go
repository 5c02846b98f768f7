package breakdown

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// decodeSteps builds decode steps with the given kernel counts and walls (µs), back to back.
func decodeSteps(kernels []int, wallsUS []int) []Step {
	var out []Step
	var at nsys.Time
	for i, k := range kernels {
		s := Step{Index: i, Phase: Decode, Start: at, End: at + nsys.Time(wallsUS[i])*1000}
		s.Kernels[kernelclass.GEMM] = k
		out = append(out, s)
		at = s.End
	}
	return out
}

// TestStepChecks checks that each self-check fires on the failure it is for, as seen on
// real traces of stacks we did not write, and stays silent on regular steps.
func TestStepChecks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kernels []int
		walls   []int
		want    string // "" for silence
	}{
		{"regular", []int{376, 376, 376, 376, 376}, []int{15000, 15100, 14900, 15050, 15000}, ""},
		// An H2D sliver taken as the decode step: 0 kernels, 98.8% idle.
		{"no kernels", []int{0, 0, 0, 0, 580}, []int{120, 130, 125, 128, 9000}, "launch no kernel"},
		// generate() cut at both of its syncs: 7-kernel slivers between the real steps.
		{"alternating", []int{7, 369, 7, 369, 7, 369}, []int{700, 14300, 690, 14250, 710, 14400}, "alternate between 7 and 369"},
		// Periodic steps that start at layer 0's attention: the last step is cut.
		{"cut last step", []int{580, 580, 580, 580, 145}, []int{15000, 15100, 14900, 15050, 3800}, "a step cut short"},
		// A post-loop kernel 15 ms after the last replay stretched the last step.
		{"far from median", []int{98, 98, 98, 98, 99}, []int{900, 910, 905, 900, 17800}, "more than 10x away"},
	} {
		got := stepChecks(0, decodeSteps(tc.kernels, tc.walls), false)
		var text []string
		for _, e := range got {
			text = append(text, e.Error())
		}
		all := strings.Join(text, "\n")
		if tc.want == "" && len(got) > 0 {
			t.Errorf("%s: warnings %q, want none", tc.name, all)
		}
		if tc.want != "" && !strings.Contains(all, tc.want) {
			t.Errorf("%s: warnings %q, want one saying %q", tc.name, all, tc.want)
		}
	}
	// Ranks that disagree on the number of decode steps.
	devs := []DeviceReport{{Steps: decodeSteps([]int{5, 5, 5}, []int{10, 10, 10})}, {Steps: decodeSteps([]int{5, 5}, []int{10, 10})}}
	if w := rankChecks(devs); len(w) != 1 || !strings.Contains(w[0].Error(), "disagree") {
		t.Errorf("rank check: %v", w)
	}
	if w := rankChecks(devs[:1]); w != nil {
		t.Errorf("one device: %v", w)
	}
	_ = time.Second
}

// TestSelfChecksOnTraces builds traces whose steps come out wrong the ways seen on real
// captures and checks that the report says so, and that a regular loop stays silent.
func TestSelfChecksOnTraces(t *testing.T) {
	warned := func(rep *Report, what string) bool {
		for _, w := range rep.Warnings {
			if strings.Contains(w.Error(), "self-check") && strings.Contains(w.Error(), what) {
				return true
			}
		}
		return false
	}
	t.Run("step ranges around the input copy only", func(t *testing.T) {
		// NVTX "decode_step" ranges hold only the H2D input copy; the kernels are launched
		// after the range: each decode step launches no kernel.
		g := newTGen(t)
		l := newLoop(g, 1, 0, 1000)
		for i := 0; i < 6; i++ {
			rs := l.h
			s := max(l.h+g.launchLat+200, l.gpu)
			g.memcpy(1, l.h, l.h+g.launchLat, nsys.MemcpyHtoD, 0, 7, s, s+100)
			l.gpu, l.h = s+100, s+200
			g.nvtx(1, rs, l.h, fmt.Sprintf("decode_step %d", i))
			l.idle(100)
			l.step(decodeMix...)
			l.readBack()
		}
		rep := mustSummarize(t, g.trace(), Options{})
		if !warned(rep, "launch no kernel") {
			t.Errorf("no self-check warning; warnings %v", rep.Warnings)
		}
	})
	t.Run("half-step ranges", func(t *testing.T) {
		// A range per half step: the steps alternate between 2 and 5 kernels.
		g := newTGen(t)
		l := newLoop(g, 1, 0, 1000)
		for i := 0; i < 6; i++ {
			rs := l.h
			l.step(decodeMix[:2]...)
			g.nvtx(1, rs, l.h, fmt.Sprintf("decode_step %d.a", i))
			l.idle(100)
			rs = l.h
			l.step(decodeMix[2:]...)
			l.readBack()
			g.nvtx(1, rs, l.h, fmt.Sprintf("decode_step %d.b", i))
			l.idle(100)
		}
		rep := mustSummarize(t, g.trace(), Options{})
		if !warned(rep, "alternate between 2 and 5") {
			t.Errorf("no self-check warning; warnings %v", rep.Warnings)
		}
	})
	t.Run("regular loop", func(t *testing.T) {
		g := newTGen(t)
		l := newLoop(g, 1, 0, 1000)
		for i := 0; i < 6; i++ {
			rs := l.h
			l.step(decodeMix...)
			l.readBack()
			g.nvtx(1, rs, l.h, fmt.Sprintf("decode_step %d", i))
			l.idle(5_000)
		}
		rep := mustSummarize(t, g.trace(), Options{})
		for _, w := range rep.Warnings {
			if strings.Contains(w.Error(), "self-check") {
				t.Errorf("warning on a regular loop: %v", w)
			}
		}
	})
}

// TestForwardChecks checks the self-checks of every phase that read the model's forwards
// (a sampler after the lm_head ends each): a step holding several, a count of steps that
// disagrees with the forwards in them, a prefill far longer than the others; and that a
// short last step which holds its whole forward (a round with fewer drafts) is not "cut".
func TestForwardChecks(t *testing.T) {
	mk := func(phases []Phase, forwards, drafts, kernels, wallsUS []int) []Step {
		steps := decodeSteps(kernels, wallsUS)
		for i := range steps {
			steps[i].Phase, steps[i].forwards, steps[i].DraftForwards = phases[i], forwards[i], drafts[i]
		}
		return steps
	}
	P, D := Prefill, Decode
	for _, tc := range []struct {
		name                               string
		phases                             []Phase
		forwards, drafts, kernels, wallsUS []int
		known                              bool
		want                               string
	}{
		{"one forward each", []Phase{P, D, D, D, D}, []int{1, 1, 1, 1, 1}, []int{0, 0, 0, 0, 0}, []int{60, 62, 62, 62, 62}, []int{900, 500, 500, 500, 500}, true, ""},
		{"folded prefill", []Phase{P, D, D, D, D}, []int{7, 1, 1, 1, 1}, []int{0, 0, 0, 0, 0}, []int{400, 62, 62, 62, 62}, []int{9000, 500, 500, 500, 500}, true, "1 steps hold several forwards of the model (a sampler after the lm_head each; step 0, prefill, holds 7)"},
		{"rounds", []Phase{P, D, D, D, D}, []int{1, 5, 5, 5, 3}, []int{0, 4, 4, 4, 2}, []int{60, 300, 300, 300, 180}, []int{900, 2500, 2500, 2500, 1500}, true, ""},
		{"no forward", []Phase{P, D, D, D, D}, []int{1, 1, 0, 1, 1}, []int{0, 0, 0, 0, 0}, []int{60, 62, 62, 62, 62}, []int{900, 500, 500, 500, 500}, true, "5 steps (with 0 draft forwards) but the device ran 4 forwards"},
		{"unknown forwards", []Phase{P, D, D, D, D}, []int{0, 0, 0, 0, 0}, []int{0, 0, 0, 0, 0}, []int{60, 62, 62, 62, 62}, []int{900, 500, 500, 500, 500}, false, ""},
		{"long prefill", []Phase{P, D, P, D, P, D}, []int{1, 1, 1, 1, 1, 1}, []int{0, 0, 0, 0, 0, 0}, []int{60, 62, 60, 62, 60, 62}, []int{900, 500, 950, 500, 19000, 500}, true, "prefill step 4 takes 19ms, more than 10x the median prefill"},
	} {
		got := stepChecks(0, mk(tc.phases, tc.forwards, tc.drafts, tc.kernels, tc.wallsUS), tc.known)
		var text []string
		for _, e := range got {
			text = append(text, e.Error())
		}
		all := strings.Join(text, "\n")
		if tc.want == "" && all != "" || tc.want != "" && !strings.Contains(all, tc.want) {
			t.Errorf("%s: warnings %q, want %q", tc.name, all, tc.want)
		}
	}
}
