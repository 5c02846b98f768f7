package compare

import (
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/stepstat/stepstat/breakdown"
)

// This file compares speculative rounds per token: when a step is a round of draft
// forwards and a verify forward, several tokens may come of it, and a faster round can be
// a slower token.

// SideRounds describes a side's compared steps as speculative rounds, and its tokens.
type SideRounds struct {
	Steps  int // compared steps (aligned steps with several ranks), all runs
	Rounds int // of them, speculative rounds
	// DraftForwards is the mean of the draft forwards per round.
	DraftForwards float64
	// Speculative: at least half of the compared steps are rounds.
	Speculative bool
	// Tokens known over the compared steps (0: unknown), from TokensFrom: "given" (each
	// run's findings.Report.Tokens, spread over its steps of the phase) or "nvtx" (every
	// compared step's NVTX text). PerToken is the mean time per token, TokensPerStep the
	// tokens per step.
	Tokens        int
	TokensFrom    string
	PerToken      time.Duration
	TokensPerStep float64
}

// sideRounds returns a side's rounds and, when its tokens are known, the time per token of
// each compared step: its wall time over its tokens (NVTX), or over the run's tokens per
// step (given). perToken is nil when the tokens are unknown on some run.
func sideRounds(s Side, runs [][]tagged) (SideRounds, map[*breakdown.Step]float64) {
	var out SideRounds
	var drafts int
	given, nvtx := true, true
	for ri, run := range runs {
		for _, t := range run {
			out.Steps++
			if t.step.DraftForwards > 0 {
				out.Rounds++
				drafts += t.step.DraftForwards
			}
			if _, ok := breakdown.StepTokens(t.step); !ok {
				nvtx = false
			}
		}
		if ri >= len(s.Reports) || s.Reports[ri].Tokens <= 0 {
			given = false
		}
	}
	if out.Steps == 0 {
		return out, nil
	}
	if out.Rounds > 0 {
		out.DraftForwards = float64(drafts) / float64(out.Rounds)
	}
	out.Speculative = out.Rounds > 0 && 2*out.Rounds >= out.Steps
	per := map[*breakdown.Step]float64{}
	var total float64
	switch {
	case given:
		out.TokensFrom = "given"
		for ri, run := range runs {
			n := s.Reports[ri].Tokens
			out.Tokens += n
			for _, t := range run {
				per[t.step] = float64(t.step.Wall()) * float64(len(run)) / float64(n)
				total += float64(t.step.Wall())
			}
		}
	case nvtx:
		out.TokensFrom = "nvtx"
		for _, run := range runs {
			for _, t := range run {
				n, _ := breakdown.StepTokens(t.step)
				if n <= 0 {
					return SideRounds{Steps: out.Steps, Rounds: out.Rounds, DraftForwards: out.DraftForwards, Speculative: out.Speculative}, nil
				}
				out.Tokens += n
				per[t.step] = float64(t.step.Wall()) / float64(n)
				total += float64(t.step.Wall())
			}
		}
	default:
		return out, nil
	}
	if out.Tokens > 0 {
		out.PerToken = time.Duration(total / float64(out.Tokens))
		out.TokensPerStep = float64(out.Tokens) / float64(out.Steps)
	}
	return out, per
}

// tokenRow compares the time per token of the two sides' compared steps (each step's
// time per token a sample, or each run's mean with PerRun); nil unless both sides know
// their tokens.
func tokenRow(base, new [][]tagged, bper, nper map[*breakdown.Step]float64, opt Options, th *benchmath.Thresholds) *Row {
	if bper == nil || nper == nil {
		return nil
	}
	value := func(s *breakdown.Step) float64 {
		if v, ok := bper[s]; ok {
			return v
		}
		return nper[s]
	}
	r := compareRow("time per token", base, new, value, opt, th)
	mean := func(runs [][]tagged) time.Duration {
		var sum float64
		n := 0
		for _, run := range runs {
			for _, t := range run {
				sum += value(t.step)
				n++
			}
		}
		if n == 0 {
			return 0
		}
		return time.Duration(sum / float64(n))
	}
	setMean(&r, mean(base), mean(new))
	return &r
}
