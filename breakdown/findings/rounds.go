package findings

import (
	"slices"
	"time"

	"github.com/stepstat/stepstat/breakdown"
)

// This file says when a device's steps are speculative rounds, and what a step is per
// token where the tokens are known.

// Tokens sources.
const (
	TokensNVTX  = "nvtx"  // the steps' NVTX text (vLLM's execute_context_C(c)_generation_G(g))
	TokensGiven = "given" // the tokens the capture generated, given by the caller (Report.Tokens)
)

// Rounds describes the summarised steps of a device as rounds of speculative decoding,
// and their time per token where the tokens are known.
type Rounds struct {
	Steps  int // summarised steps
	Rounds int // of them, speculative rounds (draft forwards before the verify forward)
	// DraftForwards is the mean of the draft forwards per round.
	DraftForwards float64
	// Speculative: at least half of the summarised steps are rounds, so a step is a round
	// (several tokens may come of it), not a token.
	Speculative bool
	// Tokens are the tokens known (0: unknown) and where they come from: the summarised
	// steps' own (TokensNVTX), or the capture's (TokensGiven: over every step of the
	// summarised phase, outliers included, PhaseSteps of them taking PhaseWall).
	Tokens     int
	TokensFrom string
	PhaseSteps int
	PhaseWall  time.Duration
	// PerToken is the time per token: the steps' total time over their tokens; 0 unknown.
	PerToken time.Duration
	// TokensPerStep is the tokens per step (per round); 0 unknown.
	TokensPerStep float64
}

// RoundsOf returns device d's rounds: tokens from r.Tokens when given, else from the
// summarised steps' NVTX text when every one of them says.
func RoundsOf(r *Report, d int) Rounds {
	dr := &r.Devices[d]
	sm := &dr.Summary
	var out Rounds
	var drafts, nvtx int
	var wall time.Duration
	all := true
	for i := range dr.Steps {
		st := &dr.Steps[i]
		if sm.Phase != breakdown.Unknown && st.Phase != sm.Phase {
			continue
		}
		out.PhaseSteps++
		out.PhaseWall += st.Wall()
		if slices.Contains(sm.Outliers.Steps, st.Index) {
			continue
		}
		out.Steps++
		if st.DraftForwards > 0 {
			out.Rounds++
			drafts += st.DraftForwards
		}
		wall += st.Wall()
		if n, ok := breakdown.StepTokens(st); ok {
			nvtx += n
		} else {
			all = false
		}
	}
	if out.Steps == 0 {
		return out
	}
	if out.Rounds > 0 {
		out.DraftForwards = float64(drafts) / float64(out.Rounds)
	}
	out.Speculative = out.Rounds > 0 && 2*out.Rounds >= out.Steps
	switch {
	case r.Tokens > 0 && out.PhaseSteps > 0:
		out.Tokens, out.TokensFrom = r.Tokens, TokensGiven
		out.PerToken = out.PhaseWall / time.Duration(r.Tokens)
		out.TokensPerStep = float64(r.Tokens) / float64(out.PhaseSteps)
	case all && nvtx > 0:
		out.Tokens, out.TokensFrom = nvtx, TokensNVTX
		out.PerToken = wall / time.Duration(nvtx)
		out.TokensPerStep = float64(nvtx) / float64(out.Steps)
	}
	return out
}
