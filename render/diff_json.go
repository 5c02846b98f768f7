package render

import (
	"encoding/json"
	"io"
	"math"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/render/schema"
)

func diffRowJSON(c *compare.Comparison, r *compare.Row) schema.DiffRowJSON {
	out := schema.DiffRowJSON{BaseMedianNS: int64(math.Round(r.Base.Center)), NewMedianNS: int64(math.Round(r.New.Center)),
		PValue: round6(r.P), Significant: r.Significant, BaseN: r.Base.N, NewN: r.New.N,
		BaseMeanNS: int64(math.Round(r.Mean.Base)), NewMeanNS: int64(math.Round(r.Mean.New)), MeanChangeNS: int64(math.Round(r.Mean.Delta)),
		MeanSignificant: r.Mean.Significant, Tested: c.Tested && r.Mean.Tested, Comparable: r.NotComparable == "",
		Reason: r.NotComparable, Why: r.Why}
	if !math.IsNaN(r.DeltaPct) {
		d := round3(r.DeltaPct)
		out.DeltaPct = &d
	}
	if out.Tested {
		lo, hi, p := int64(math.Round(r.Mean.Lo)), int64(math.Round(r.Mean.Hi)), round6(r.Mean.P)
		out.MeanChangeLoNS, out.MeanChangeHiNS, out.MeanPValue = &lo, &hi, &p
	}
	return out
}

func sideJSON(s *compare.SideSummary) schema.DiffSideJSON {
	out := schema.DiffSideJSON{Label: s.Label, Path: strings.Join(s.Paths, ","), Paths: s.Paths, DecodeSteps: s.Steps,
		MedianStepNS: int64(s.MedianStep), LaunchesPerStep: round3(s.LaunchesPerStep), KernelsPerStep: round3(s.KernelsPerStep),
		GapsPerStep: round3(s.GapsPerStep), StepMethods: s.Methods, NCCL: []schema.NCCLCountJSON{}, Config: configJSON(s.Config),
		MeanStepNS: int64(s.MeanStep), MeanNS: map[string]int64{}, AlignedBy: s.AlignedBy}
	for _, c := range kernelclass.Order {
		out.MeanNS[c.String()] = int64(s.Means[c])
	}
	for _, n := range s.NCCL {
		out.NCCL = append(out.NCCL, schema.NCCLCountJSON{Op: n.Op, Algo: n.Algo, Proto: n.Proto, DType: n.DType, Count: n.Count, TotalNS: int64(n.Total),
			ProtoSet: protoSet(s.Config)})
	}
	return out
}

func changesJSON(cs []compare.KernelChange) []schema.KernelChangeJSON {
	out := []schema.KernelChangeJSON{}
	for _, c := range cs {
		out = append(out, schema.KernelChangeJSON{Family: c.Family, Category: c.Category.String(), BaseNames: nonNil(c.BaseNames),
			NewNames: nonNil(c.NewNames), BaseCount: c.BaseCount, NewCount: c.NewCount, BaseNS: int64(c.BaseTotal), NewNS: int64(c.NewTotal)})
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// NewDiffJSON builds the JSON contract from a comparison.
func NewDiffJSON(c *compare.Comparison) *schema.DiffJSON {
	unit := "step"
	if c.Options.PerRun {
		unit = "run"
	}
	out := &schema.DiffJSON{Schema: schema.DiffSchema, Phase: c.Phase.String(), Unit: unit, Config: configChangesJSON(c.Config), Capture: configChangesJSON(c.Capture),
		Base: sideJSON(&c.Base), New: sideJSON(&c.New),
		Step: diffRowJSON(c, &c.Step), Categories: map[string]schema.DiffRowJSON{}, Appeared: changesJSON(c.Appeared),
		Vanished: changesJSON(c.Vanished), Variants: changesJSON(c.Variants), Warnings: []string{},
		MeanTest: "permutation", MedianTest: "mann-whitney-u", MinChangeNS: int64(math.Round(c.MinChangeNS)), Sample: sampleKind(c),
		Tested: c.Tested, Untested: c.Untested, WhatChanged: []schema.StoryItemJSON{}}
	for i := range c.Categories {
		out.Categories[c.Categories[i].Name] = diffRowJSON(c, &c.Categories[i])
	}
	if c.Untested != "" {
		out.Warnings = append(out.Warnings, c.Untested)
	}
	out.Warnings = append(out.Warnings, diffTopWarnings(c)...)
	out.Warnings = append(out.Warnings, diffRowWarnings(c)...)
	out.Findings = findingChangesJSON(c.Findings)
	if c.Token != nil {
		t := diffRowJSON(c, c.Token)
		out.Token = &t
		out.TokenMinChangeNS = int64(math.Round(c.TokenMinChangeNS))
	}
	if c.BaseRounds.Rounds+c.NewRounds.Rounds > 0 {
		rj := func(r *compare.SideRounds) schema.RoundsJSON {
			return schema.RoundsJSON{Steps: r.Steps, Rounds: r.Rounds, DraftForwards: round3(r.DraftForwards), Speculative: r.Speculative,
				Tokens: r.Tokens, TokensFrom: r.TokensFrom, PerTokenNS: int64(r.PerToken), TokensPerStep: round3(r.TokensPerStep)}
		}
		out.Rounds = &schema.DiffRoundsJSON{Base: rj(&c.BaseRounds), New: rj(&c.NewRounds)}
	}
	out.Ranks = diffRanksJSON(c)
	for _, it := range c.Story() {
		sj := schema.StoryItemJSON{Name: it.Row.Name, Ranks: []int{}}
		for _, l := range it.Ranks {
			sj.Ranks = append(sj.Ranks, l.Rank)
		}
		out.WhatChanged = append(out.WhatChanged, sj)
	}
	if len(c.Ranks) > 0 {
		out.Straggler = &schema.DiffStragglerJSON{Base: stragglerJSON(c, c.Base.Ranks, true), New: stragglerJSON(c, c.New.Ranks, false)}
	}
	return out
}

// stragglerJSON is a side's straggler with its device id (of the side's first run).
func stragglerJSON(c *compare.Comparison, w *compare.RankWait, base bool) *schema.StragglerJSON {
	if w == nil || w.Straggler < 0 || w.Calls == 0 || w.Straggler >= len(c.Ranks) {
		return nil
	}
	n := w.LastArrivals[w.Straggler]
	dev := c.Ranks[w.Straggler].NewDev
	if base {
		dev = c.Ranks[w.Straggler].BaseDev
	}
	return &schema.StragglerJSON{Device: dev, LastArrivals: n, Share: round6(float64(n) / float64(w.Calls))}
}

// DiffJSONWrite writes the comparison as JSON contract stepstat.diff.v1.
func DiffJSONWrite(w io.Writer, c *compare.Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(NewDiffJSON(c))
}

func findingChangesJSON(fs []compare.FindingChange) []schema.FindingChangeJSON {
	out := []schema.FindingChangeJSON{}
	for _, f := range fs {
		fj := schema.FindingChangeJSON{Rank: f.Rank, ID: string(f.ID), Change: string(f.Change), Expected: f.Expected}
		if f.Base != nil {
			fj.Base = &findingsJSON([]findings.Finding{*f.Base})[0]
		}
		if f.New != nil {
			fj.New = &findingsJSON([]findings.Finding{*f.New})[0]
		}
		out = append(out, fj)
	}
	return out
}

func diffRanksJSON(c *compare.Comparison) []schema.DiffRankJSON {
	var out []schema.DiffRankJSON
	means := func(m [kernelclass.NumCategories]time.Duration) map[string]int64 {
		out := map[string]int64{}
		for _, cat := range kernelclass.Order {
			out[cat.String()] = int64(m[cat])
		}
		return out
	}
	for _, r := range c.Ranks {
		rj := schema.DiffRankJSON{Rank: r.Rank, BaseDevice: r.BaseDev, NewDevice: r.NewDev, Step: diffRowJSON(c, &r.Step), Categories: map[string]schema.DiffRowJSON{},
			Comparable: r.NotComparable == "", Reason: r.NotComparable,
			BaseMeanStepNS: int64(r.BaseMeanStep), NewMeanStepNS: int64(r.NewMeanStep), BaseMeanNS: means(r.BaseMeans), NewMeanNS: means(r.NewMeans),
			BaseWaitNS: int64(r.Base.Wait), NewWaitNS: int64(r.New.Wait), BaseTransferNS: int64(r.Base.Transfer), NewTransferNS: int64(r.New.Transfer),
			BaseLastArrivals: r.Base.LastArrivals, NewLastArrivals: r.New.LastArrivals, BaseCalls: r.Base.Calls, NewCalls: r.New.Calls}
		for i := range r.Categories {
			rj.Categories[r.Categories[i].Name] = diffRowJSON(c, &r.Categories[i])
		}
		out = append(out, rj)
	}
	return out
}

// sampleKind is the JSON's "sample": step, aligned_step (the slowest rank's) or run.
func sampleKind(c *compare.Comparison) string {
	switch {
	case c.Options.PerRun:
		return "run"
	case ranked(c):
		return "aligned_step"
	}
	return "step"
}
