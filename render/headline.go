package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds the answer a report starts with, in words every format uses (text in
// headline_text.go, HTML in headline_html.go): one line per
// device with the decode step (median, p10-p90, steps), the limiter (the finding with the
// most time at stake on any device), the findings, and the mean decode step by category.
// It is built on findings.Finding alone, whatever the rules are.

// deviceHeadline is a device's first line, e.g. "device 0 (NVIDIA H200): decode step median
// 12.30ms, p10-p90 12.10ms-12.90ms, 40 steps".
func deviceHeadline(d *breakdown.DeviceReport) string {
	sm := &d.Summary
	if d.Kind != breakdown.KindInference { // not inference: say what it is, in no inference words
		what := "training steps, not inference"
		if d.Kind == breakdown.KindLoading {
			what = "loading, no serving loop"
		}
		if sm.Steps == 0 {
			return fmt.Sprintf("%s (%s): %s; no steps to summarise", d.Name(), gpuName(d.GPU), what)
		}
		return fmt.Sprintf("%s (%s): %s: step median %s, p10-p90 %s-%s, %d step%s", d.Name(), gpuName(d.GPU), what,
			breakdown.FormatDuration(int64(sm.Median)), breakdown.FormatDuration(int64(sm.P10)), breakdown.FormatDuration(int64(sm.P90)), sm.Steps, plural(sm.Steps))
	}
	if sm.Steps == 0 {
		if d.Skipped > 0 && len(d.Steps) == 0 {
			return fmt.Sprintf("%s (%s): no %ss to summarise (%d step%s found, all skipped)", d.Name(), gpuName(d.GPU), phaseWhat(sm), d.Skipped, plural(d.Skipped))
		}
		return fmt.Sprintf("%s (%s): no %ss to summarise (%d step%s found)", d.Name(), gpuName(d.GPU), phaseWhat(sm), len(d.Steps), plural(len(d.Steps)))
	}
	return fmt.Sprintf("%s (%s): %s median %s, p10-p90 %s-%s, %d step%s", d.Name(), gpuName(d.GPU), phaseWhat(sm),
		breakdown.FormatDuration(int64(sm.Median)), breakdown.FormatDuration(int64(sm.P10)), breakdown.FormatDuration(int64(sm.P90)), sm.Steps, plural(sm.Steps))
}

// perTokenHeadline is deviceHeadline with the time per token where the tokens are known:
// "..., 25 steps; 18.52ms/token (60 tokens, --tokens)".
func perTokenHeadline(r *findings.Report, d int) string {
	h := deviceHeadline(&r.Devices[d])
	if rd := findings.RoundsOf(r, d); rd.PerToken > 0 {
		from := "--tokens"
		if rd.TokensFrom == findings.TokensNVTX {
			from = "from the steps' NVTX"
		}
		h += fmt.Sprintf("; %s/token (%d tokens, %s)", breakdown.FormatDuration(int64(rd.PerToken)), rd.Tokens, from)
	}
	return h
}

// rankWords names the devices a group holds on, by device id, out of the report's
// devices: "" with one device, "rank 1 of 8", "ranks 0-1", "ranks 0, 2-3 of 8".
func rankWords(r *findings.Report, g *findings.Group) string {
	if len(r.Devices) < 2 {
		return ""
	}
	if shared(r) { // processes of one GPU are no ranks: name each
		var names []string
		for _, m := range g.Members {
			names = append(names, r.Devices[m.Dev].Name())
		}
		w := strings.Join(names, ", ")
		if len(names) < len(r.Devices) {
			w += fmt.Sprintf(" (of %d loops)", len(r.Devices))
		}
		return w
	}
	var ids []int
	for _, m := range g.Members {
		ids = append(ids, int(r.Devices[m.Dev].Device))
	}
	slices.Sort(ids)
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		} else {
			parts = append(parts, fmt.Sprint(ids[i]))
		}
		i = j + 1
	}
	w := "ranks "
	if len(ids) == 1 {
		w = "rank "
	}
	w += strings.Join(parts, ", ")
	if len(ids) < len(r.Devices) {
		w += fmt.Sprintf(" of %d", len(r.Devices))
	}
	return w
}

// onRanks is rankWords with " on " before it, "" with one device.
func onRanks(r *findings.Report, g *findings.Group) string {
	if w := rankWords(r, g); w != "" {
		return " on " + w
	}
	return ""
}

// stakeWords is a finding's time at stake of its step: "40.83ms of the 54.44ms step (75.0%)".
func stakeWords(f *findings.Finding) string {
	return fmt.Sprintf("%s of a %s step (%s)", breakdown.FormatDuration(int64(f.AtStake)), breakdown.FormatDuration(int64(f.Step)),
		breakdown.FormatPercent(frac(int64(f.AtStake), int64(f.Step))))
}

// perRankLine is a group's numbers per rank on one line, with several devices: "rank 0
// 46.85ms of 70.65ms (66.3%), rank 1 45.10ms of 70.60ms (63.9%)"; "" with one member.
func perRankLine(r *findings.Report, g *findings.Group) string {
	if len(g.Members) < 2 {
		return ""
	}
	var parts []string
	for _, m := range g.Members {
		parts = append(parts, fmt.Sprintf("%s %s of %s (%s)", memberName(r, m.Dev), breakdown.FormatDuration(int64(m.F.AtStake)),
			breakdown.FormatDuration(int64(m.F.Step)), breakdown.FormatPercent(frac(int64(m.F.AtStake), int64(m.F.Step)))))
	}
	return strings.Join(parts, ", ")
}

// groupHeadline is a group's first line: id, severity (of its top member), the ranks and
// the top member's time at stake, e.g. "host_stall [high] on ranks 0-1: 46.85ms of a
// 70.65ms step (66.3%) at stake".
func groupHeadline(r *findings.Report, g *findings.Group) string {
	f := g.Top()
	return fmt.Sprintf("%s [%s]%s: %s at stake", f.ID, f.Severity, onRanks(r, g), stakeWords(f))
}

// evidenceOf names whose evidence a group's claim is, with several members: "rank 0: ".
func evidenceOf(r *findings.Report, g *findings.Group) string {
	if len(g.Members) < 2 {
		return ""
	}
	return memberName(r, g.Members[0].Dev) + ": "
}

// shared reports whether the report has a device that several processes share (one
// device report per process: breakdown.DeviceReport.Processes).
func shared(r *findings.Report) bool {
	for i := range r.Devices {
		if r.Devices[i].Processes > 1 {
			return true
		}
	}
	return false
}

// memberName names device report d of a finding group: "rank 0", or, in a report with a
// device that several processes share, "device 0 pid 1234".
func memberName(r *findings.Report, d int) string {
	if shared(r) {
		return r.Devices[d].Name()
	}
	return fmt.Sprintf("rank %d", r.Devices[d].Device)
}

// limiterLine names what limits the step: the cause with the most time at stake (its
// group's top member), e.g. "Limiter: launch_bound, 1.779ms of the 2.200ms mean decode
// step (80.9%) at stake". Without a cause it names the largest category of the first
// device's mean step; the warnings (outlier steps, coverage) are never the limiter.
func limiterLine(r *findings.Report) string {
	if g, ok := r.Limiter(); ok {
		f := g.Top()
		d := &r.Devices[g.Members[0].Dev]
		where := ""
		if len(r.Devices) > 1 {
			where = fmt.Sprintf(" on %s (%s's numbers)", rankWords(r, &g), memberName(r, g.Members[0].Dev))
			if len(g.Members) == 1 {
				where = " on " + rankWords(r, &g)
			}
		}
		return fmt.Sprintf("Limiter: %s%s, %s of the %s mean %s (%s) at stake", f.ID, where,
			breakdown.FormatDuration(int64(f.AtStake)), breakdown.FormatDuration(int64(f.Step)), phaseWhat(&d.Summary),
			breakdown.FormatPercent(frac(int64(f.AtStake), int64(f.Step))))
	}
	if k := notInference(r); k != "" {
		p := largestPart(r)
		if p != "" {
			p = "; " + p
		}
		return "No limiter named: " + k + ", and the findings' rules are for inference loops" + p
	}
	if p := largestPart(r); p != "" {
		return "Limiter: no rule holds; " + p
	}
	return "Limiter: no steps to summarise"
}

// largestPart names the largest category of the first summarised device's mean step:
// "the largest part of the mean decode step is gemm, 34.46ms of 66.66ms (51.7%)"; "" when
// no device has steps to summarise.
func largestPart(r *findings.Report) string {
	for i := range r.Devices {
		sm := &r.Devices[i].Summary
		if sm.Steps == 0 {
			continue
		}
		// The largest categories, as many as it takes (up to 3) to hold half the step.
		cs := slices.Clone(kernelclass.Order[:])
		slices.SortStableFunc(cs, func(a, b kernelclass.Category) int {
			return cmp.Compare(sm.Categories[b].Mean, sm.Categories[a].Mean)
		})
		big := cs[0]
		if len(cs) > 3 {
			cs = cs[:3]
		}
		var parts []string
		held := 0.0
		for _, c := range cs {
			if len(parts) > 0 && (held >= 0.5 || sm.Categories[c].Mean <= 0) {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %s", c, breakdown.FormatPercent(sm.Categories[c].Share)))
			held += sm.Categories[c].Share
		}
		if len(parts) == 1 {
			return fmt.Sprintf("the largest part of the mean %s is %s, %s of %s (%s)", phaseWhat(sm), big,
				breakdown.FormatDuration(int64(sm.Categories[big].Mean)), breakdown.FormatDuration(int64(sm.Mean)),
				breakdown.FormatPercent(sm.Categories[big].Share))
		}
		return fmt.Sprintf("the mean %s (%s) is mostly %s (%s together)", phaseWhat(sm), breakdown.FormatDuration(int64(sm.Mean)),
			strings.Join(parts, " and "), breakdown.FormatPercent(held))
	}
	return ""
}

// thenLine says what would lead once the limiter is fixed: "then: launch_bound, ~13.61ms
// step (host_stall's 40.83ms out), 11.04ms of it (81.1%) at stake: up to 5.3x"; "" without a
// limiter.
func thenLine(r *findings.Report) string {
	g, ok := r.Limiter()
	if !ok {
		return ""
	}
	d := g.Members[0].Dev
	if d >= len(r.Then) || r.Then[d] == nil {
		return ""
	}
	t := r.Then[d]
	out := fmt.Sprintf("~%s step (%s's %s out)", breakdown.FormatDuration(int64(t.Step)), t.After, breakdown.FormatDuration(int64(g.Top().AtStake)))
	if t.Next == nil {
		return fmt.Sprintf("then: no other rule holds on the %s", out)
	}
	return fmt.Sprintf("then: %s, %s, %s of it (%s) at stake: up to %.1fx", t.Next.ID, out, breakdown.FormatDuration(int64(t.Next.AtStake)),
		breakdown.FormatPercent(frac(int64(t.Next.AtStake), int64(t.Step))), t.Speedup())
}

// minorLine lists the minor causes (under findings.MinorShare of the step) on one line:
// "minor (under 2% of the step): moe_routing_overhead 0.13% on ranks 0-1"; "" when none.
func minorLine(r *findings.Report, gs []findings.Group) string {
	var parts []string
	for i := range gs {
		if f := gs[i].Top(); f.Cause() && f.Minor() {
			parts = append(parts, fmt.Sprintf("%s %s%s", f.ID, breakdown.FormatPercent(frac(int64(f.AtStake), int64(f.Step))), onRanks(r, &gs[i])))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("minor (under %g%% of the step): %s", 100*findings.MinorShare, strings.Join(parts, ", "))
}

// solNote says where far_from_sol is listed when it is: after the causes.
func solNote(gs []findings.Group) string {
	for i := range gs {
		if gs[i].ID == findings.FarFromSOL {
			return "; far_from_sol after the causes: the distance from the floor, which they explain"
		}
	}
	return ""
}

// listed reports whether a group is one of the findings listed in full (not minor).
func listed(g *findings.Group) bool { f := g.Top(); return !f.Minor() }

// catPart is one category's part of a mean step.
type catPart struct {
	Cat   kernelclass.Category
	Mean  string
	Share string
	Pct   float64 // percent of the mean step, for widths
	Color string
}

// stepParts returns the categories of the mean step with time, largest first.
func stepParts(sm *breakdown.Summary) []catPart {
	var out []catPart
	for _, c := range kernelclass.Order {
		cs := &sm.Categories[c]
		if cs.Mean <= 0 {
			continue
		}
		out = append(out, catPart{Cat: c, Mean: breakdown.FormatDuration(int64(cs.Mean)), Share: breakdown.FormatPercent(frac(int64(cs.Mean), int64(sm.Mean))),
			Pct: chartRound2(100 * frac(int64(cs.Mean), int64(sm.Mean))), Color: categoryColors[c]})
	}
	slices.SortStableFunc(out, func(a, b catPart) int { return cmp.Compare(b.Pct, a.Pct) })
	return out
}

// stepMixLine is the text form of the stacked bar: the mean step by category, largest
// first, e.g. "device 0 mean 12.50ms: idle 45.0% 5.625ms · gemm 30.0% 3.750ms · ...".
func stepMixLine(d *breakdown.DeviceReport) string {
	sm := &d.Summary
	if sm.Steps == 0 {
		return ""
	}
	var parts []string
	for _, p := range stepParts(sm) {
		parts = append(parts, fmt.Sprintf("%s %s %s", p.Cat, p.Share, p.Mean))
	}
	return fmt.Sprintf("%s mean %s: %s", d.Name(), breakdown.FormatDuration(int64(sm.Mean)), strings.Join(parts, " · "))
}

// sideHeadline is a diff side's first line: "base eager: decode step median 13.33ms,
// p10-p90 12.40ms-17.79ms, 12 steps" (quantiles over every compared step of the side).
func sideHeadline(side, label string, phase breakdown.Phase, runs [][]time.Duration) string {
	var walls []time.Duration
	for _, r := range runs {
		walls = append(walls, r...)
	}
	if len(walls) == 0 {
		return fmt.Sprintf("%s %s: no %s steps", side, label, phase)
	}
	slices.Sort(walls)
	q := func(p float64) string {
		pos := p * float64(len(walls)-1)
		lo := int(pos)
		v := float64(walls[lo])
		if lo+1 < len(walls) {
			v += (pos - float64(lo)) * float64(walls[lo+1]-walls[lo])
		}
		return breakdown.FormatDurationF(v)
	}
	return fmt.Sprintf("%s %s: %s step median %s, p10-p90 %s-%s, %d step%s", side, label, phase, q(0.5), q(0.1), q(0.9), len(walls), plural(len(walls)))
}

// diffHeadlines are the first lines of a diff: one per side.
func diffHeadlines(c *compare.Comparison) []string {
	// The lines name the side themselves ("Base de", "New de"): sideNames' "base de" would
	// say it twice.
	return []string{sideHeadline("Base", c.Base.Label, c.Phase, c.BaseSteps), sideHeadline("New", c.New.Label, c.Phase, c.NewSteps)}
}

// diffLead are the lines a diff leads with, before its headlines: that steps are
// speculative rounds on a side (time per round is not time per token), with each side's
// rounds, draft forwards per round and time per token where known.
func diffLead(c *compare.Comparison) []string {
	if !c.BaseRounds.Speculative && !c.NewRounds.Speculative {
		return nil
	}
	bl, nl := sideNames(c)
	side := func(label string, r *compare.SideRounds) string {
		if r.Rounds == 0 {
			return fmt.Sprintf("%s: no rounds", label)
		}
		s := fmt.Sprintf("%s: %d of %d %s steps are rounds, %.1f draft forwards per round", label, r.Rounds, r.Steps, c.Phase, r.DraftForwards)
		switch r.TokensFrom {
		case "given":
			s += fmt.Sprintf(", %d tokens (--tokens): %.2f tokens/step, %s/token", r.Tokens, r.TokensPerStep, breakdown.FormatDuration(int64(r.PerToken)))
		case "nvtx":
			s += fmt.Sprintf(", %d tokens (the steps' NVTX: scheduled, drafts included): %.2f tokens/step, %s/token", r.Tokens, r.TokensPerStep, breakdown.FormatDuration(int64(r.PerToken)))
		}
		return s
	}
	l := RoundsWarning + " (" + side(bl, &c.BaseRounds) + "; " + side(nl, &c.NewRounds) + ")"
	if c.Token == nil {
		l += "; tokens unknown on a side: --tokens BASE,NEW (the tokens each capture generated) gives the verdict per token; the one below is per round"
	}
	return []string{l + "."}
}

// tokenVerdict is the text diff's line on the time per token when both sides know their
// tokens: "Time per token: 18.52ms -> 35.48ms, +91.59%, p=0.000, n=25+39"; "" otherwise.
func tokenVerdict(c *compare.Comparison) string {
	r := c.Token
	if r == nil {
		return ""
	}
	test := "no test: n=" + meanN(&r.Mean)
	if r.NotComparable != "" {
		test = "not comparable"
	} else if c.Tested && r.Mean.Tested {
		test = fmt.Sprintf("p=%.3f, n=%s", r.Mean.P, meanN(&r.Mean))
	}
	return fmt.Sprintf("Time per token: %s -> %s, %s, %s (the verdict; per round below)", breakdown.FormatDurationF(r.Mean.Base),
		breakdown.FormatDurationF(r.Mean.New), meanWords(c, r), test)
}

// diffVerdict is the text diff's line on the step time, the change of the mean per step
// as the story below tests it, e.g. "Decode step mean: 2.199ms -> 395.2µs, -82.03%, p=0.000,
// n=12" (the story's first row has the interval).
func diffVerdict(c *compare.Comparison) string {
	r := &c.Step
	test := "no test: n=" + meanN(&r.Mean)
	if r.NotComparable != "" {
		test = "not comparable"
	} else if c.Tested && r.Mean.Tested {
		test = fmt.Sprintf("p=%.3f, n=%s", r.Mean.P, meanN(&r.Mean))
	}
	return fmt.Sprintf("%s step mean: %s -> %s, %s, %s", capitalize(c.Phase.String()), breakdown.FormatDurationF(r.Mean.Base),
		breakdown.FormatDurationF(r.Mean.New), meanWords(c, r), test)
}

// RoundsWarning is what a report or diff of speculative rounds leads with.
const RoundsWarning = "Steps are speculative rounds: time per round is not time per token"

// leadWarnings are the lines a report leads with, before its headline: that steps are
// speculative rounds (time per round is not time per token), with the rounds, the draft
// forwards per round and the time per token where the tokens are known.
func leadWarnings(r *findings.Report) []string {
	var parts []string
	for d := range r.Devices {
		rd := findings.RoundsOf(r, d)
		if !rd.Speculative {
			continue
		}
		p := fmt.Sprintf("%s%d of %d %ss are rounds, %.1f draft forwards and a verify forward per round; %s", devicePrefix(r, d), rd.Rounds, rd.Steps,
			phaseWhat(&r.Devices[d].Summary), rd.DraftForwards, tokenWords(&rd))
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{RoundsWarning + " (" + strings.Join(parts, "; ") + ")."}
}

// devicePrefix is "device 1: " with several devices, "" with one.
func devicePrefix(r *findings.Report, d int) string {
	if len(r.Devices) < 2 {
		return ""
	}
	return fmt.Sprintf("device %d: ", r.Devices[d].Device)
}

// tokenWords says a device's time per token: "60 tokens (given): 2.31 tokens/step,
// 18.52ms/token", or how to get it.
func tokenWords(rd *findings.Rounds) string {
	switch rd.TokensFrom {
	case findings.TokensGiven:
		return fmt.Sprintf("%d tokens (--tokens) over %d steps of the phase: %.2f tokens/step, %s/token", rd.Tokens, rd.PhaseSteps, rd.TokensPerStep,
			breakdown.FormatDuration(int64(rd.PerToken)))
	case findings.TokensNVTX:
		return fmt.Sprintf("%d tokens (the steps' NVTX: scheduled, drafts included): %.2f tokens/step, %s/token", rd.Tokens, rd.TokensPerStep,
			breakdown.FormatDuration(int64(rd.PerToken)))
	}
	return "tokens unknown: --tokens N (the tokens the capture generated) gives the time per token"
}
