package breakdown

import (
	"slices"
	"testing"
)

// phasesOf runs inferPhases over steps of one kernel mix (by shape all decode: continuous
// batching runs prompts in decode's kernels) with the copies cp, and returns the phases.
func phasesOf(cp []iterCopies, starts []bool) []string {
	steps := make([]Step, len(cp))
	hs := make([]holding, len(cp))
	for i := range steps {
		steps[i].Start, steps[i].End = 0, 1_000_000
	}
	inferPhases(steps, hs, starts, true, cp)
	var out []string
	for _, s := range steps {
		out = append(out, s.Phase.String())
	}
	return out
}

func firstOnly(n int) []bool {
	s := make([]bool, n)
	s[0] = true
	return s
}

// TestCopyPhases: the copies' rule (inferPhases, copyPrompts) on iterations of an engine
// that copies int64 inputs (8 bytes a token: ids, positions, slots) and int32 offsets, and
// reads back one int32 token per sequence.
func TestCopyPhases(t *testing.T) {
	decode := func(seqs int) iterCopies { return iterCopies{in: 8 * int64(seqs), out: 4 * int64(seqs)} }
	prompt := func(tokens, seqs int) iterCopies { return iterCopies{in: 8 * int64(tokens), out: 4 * int64(seqs)} }
	t.Run("batch grows 1 to 64, decode only", func(t *testing.T) {
		var cp []iterCopies
		for _, n := range []int{1, 1, 2, 4, 8, 16, 32, 64, 64, 64, 3} {
			cp = append(cp, decode(n))
		}
		got := phasesOf(cp, firstOnly(len(cp)))
		want := slices.Repeat([]string{"decode"}, len(cp)) // one kernel mix, and copies as decode's
		if !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("continuous batching", func(t *testing.T) {
		cp := []iterCopies{
			prompt(512, 1), // a chunk of a long prompt: prefill
			prompt(512, 3), // its last chunk and two prompts: the one before read back one sequence
			prompt(100, 3), // a prompt beside the 3 now decoding: mixed
			decode(4), decode(4), decode(4),
			prompt(40, 5), // an arrival beside 4 decoding sequences: mixed
			decode(5), decode(5), decode(5), decode(5), decode(2),
			prompt(300, 1), // alone after the others finished: a prefill
			decode(1), decode(1),
		}
		want := []string{"prefill", "prefill", "mixed", "decode", "decode", "decode", "mixed",
			"decode", "decode", "decode", "decode", "decode", "prefill", "decode", "decode"}
		if got := phasesOf(cp, firstOnly(len(cp))); !slices.Equal(got, want) {
			t.Errorf("got  %v\nwant %v", got, want)
		}
	})
	t.Run("verify rounds read back every position", func(t *testing.T) {
		// Speculative verify without draft forwards in the trace (prompt lookup): 5 tokens a
		// sequence in, 5 read back; the ratio is decode's.
		cp := []iterCopies{prompt(96, 2)}
		for range 10 {
			cp = append(cp, iterCopies{in: 8 * 5 * 2, out: 4 * 5 * 2}, decode(2))
		}
		got := phasesOf(cp, firstOnly(len(cp)))
		if got[0] != "prefill" || slices.Contains(got[1:], "prefill") || slices.Contains(got[1:], "mixed") {
			t.Errorf("got %v, want a prefill then decode steps", got)
		}
	})
	t.Run("a pause starts a request", func(t *testing.T) {
		cp := []iterCopies{prompt(64, 2), decode(2), decode(2), decode(2), prompt(64, 4), decode(4), decode(4), decode(4)}
		starts := firstOnly(len(cp))
		starts[4] = true
		want := []string{"prefill", "decode", "decode", "decode", "prefill", "decode", "decode", "decode"}
		if got := phasesOf(cp, starts); !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("graph buckets copy padded inputs", func(t *testing.T) {
		// A graph replay copies its static input buffers whole (2240 bytes) whatever the batch:
		// as the batch drains from 8 to 1 the input stays while the read-back shrinks, and the
		// last iterations' ratio is 8x the run's; no decode iteration of a larger batch copies
		// less, so the copies say nothing (pd_decode's and graph_recapture's tails).
		var cp []iterCopies
		for _, n := range []int{8, 8, 8, 8, 8, 8, 8, 8, 6, 4, 2, 1, 1, 1} {
			cp = append(cp, iterCopies{in: 2240, out: 8 * int64(n)})
		}
		got := phasesOf(cp, firstOnly(len(cp)))
		if want := slices.Repeat([]string{"decode"}, len(cp)); !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("copies in too few steps say nothing", func(t *testing.T) {
		// generate(): the prompt is copied once, decode steps read back with no input copy.
		cp := []iterCopies{prompt(64, 1), {out: 1}, {out: 1}, {out: 1}, prompt(200, 1), {out: 1}, {out: 1}, {out: 1}}
		if p, _, _ := copyPrompts(cp, make([]bool, len(cp))); p != nil {
			t.Errorf("copyPrompts = %v, want nil (2 of 8 steps copy inputs)", p)
		}
	})
}
