// Package findings draws conclusions from a finished report (package breakdown): documented
// rules over the report's own numbers, each finding with its evidence, the step time at
// stake, a one-sentence claim and what to try. Every number a rule reads is a mean per step
// of the summarised phase (the summary's category Mean, or a sum over its steps divided by
// their count), so the parts a finding cites add up to the step it cites, and to the decode
// table's rows.
//
// Of computes the findings of every device of a report once, with the run's recorded knobs;
// render (report) and compare (diff) use that result. rules.go holds the rules, one function
// each, in README "Findings" order (comm.go the communication rule and its advice).
package findings

import (
	"cmp"
	"slices"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
)

// ID names a finding's rule; ids are stable: JSON and diff use them.
type ID string

// Finding ids.
const (
	LaunchBound   ID = "launch_bound"
	Communication ID = "communication_bound"
	KernelStorm   ID = "kernel_storm"
	HostSync      ID = "host_sync_copy"
	MoERouting    ID = "moe_routing_overhead"
	FarFromSOL    ID = "far_from_sol"
	Coverage      ID = "coverage"
	HostStall     ID = "host_stall"
	GraphLaunch   ID = "graph_launch"
	Outliers      ID = "outlier_steps"
)

// Severity ranks a finding by the share of the step at stake.
type Severity uint8

// Severities; High is at least a quarter of the step at stake, Medium a tenth.
const (
	Low Severity = iota
	Medium
	High
)

func (s Severity) String() string {
	switch s {
	case High:
		return "high"
	case Medium:
		return "medium"
	}
	return "low"
}

func severityOf(atStake, step time.Duration) Severity {
	switch f := frac(atStake, step); {
	case f >= 0.25:
		return High
	case f >= 0.10:
		return Medium
	}
	return Low
}

// Unit says how a Fact's value reads.
type Unit uint8

// Units of facts.
const (
	UnitNS    Unit = iota // nanoseconds (per step unless the key says otherwise)
	UnitCount             // a count or a mean count per step
	UnitShare             // a fraction of 1
	UnitRatio             // a plain ratio (x)
	UnitText              // Fact.Text
)

// A Fact is one piece of a finding's evidence: a named number (or text) from the report,
// as the JSON contract's "evidence" object lists it. The rule that writes a fact writes the
// claim from the same value; nothing reads a fact back by its key to word a finding.
type Fact struct {
	Key  string // stable snake_case name, e.g. "idle_share"
	Unit Unit
	N    float64 // the value, unless Unit is UnitText
	Text string
}

// A Finding is one conclusion about what limits a device's step.
type Finding struct {
	ID       ID // one of the ids above
	Severity Severity
	// AtStake is the step time (mean per step) the finding is about: what fixing it could
	// give back at most.
	AtStake time.Duration
	// Step is the mean step the finding is measured against.
	Step     time.Duration
	Evidence []Fact
	// Claim states the evidence in one sentence; Suggestion says what to try. Both are
	// written by the rule, in words that name no command-line flag (the front end adds
	// those).
	Claim      string
	Suggestion string
}

// Fact returns the evidence named key and whether the finding has it.
func (f *Finding) Fact(key string) (Fact, bool) {
	for _, e := range f.Evidence {
		if e.Key == key {
			return e, true
		}
	}
	return Fact{}, false
}

// A Report is a finished report with the findings of each of its devices.
type Report struct {
	*breakdown.Report
	// Findings of each device, indexed like Devices; most step time at stake first (ties by
	// id), empty when no rule holds.
	Findings [][]Finding
	// Then holds, per device, what would lead once the device's top cause is fixed (ThenOf);
	// nil where the device has no cause.
	Then []*Then
	// Tokens is the number of tokens the capture generated, when the user gave it (0:
	// unknown): RoundsOf spreads it over the steps of the summarised phase.
	Tokens int
	knobs  map[string]string // the recorded knobs, clipped
}

// Of applies the rules to every device of r, with the run's recorded knobs (r.Config) for
// the rules that cite them, names and values clipped (nsys.ClipValue): every device's
// findings quote them, and the JSON report keeps the whole values once, in "config".
func Of(r *breakdown.Report) *Report {
	knobs := map[string]string{}
	for _, v := range r.Config {
		knobs[nsys.ClipValue(v.Name)] = nsys.ClipValue(v.Value)
	}
	out := &Report{Report: r, Findings: make([][]Finding, len(r.Devices)), Then: make([]*Then, len(r.Devices)), knobs: knobs}
	for d := range r.Devices {
		if r.Devices[d].Kind != breakdown.KindInference {
			continue // training or loading: the rules are for inference loops (breakdown.DeviceReport.Kind)
		}
		out.Findings[d] = device(r, d, knobs)
		for k := range out.Findings[d] {
			if f := &out.Findings[d][k]; f.Cause() && !f.Minor() {
				out.Then[d] = ThenOf(out, d, f)
				break
			}
		}
	}
	return out
}

// device applies the rules to device d of r and returns the findings that hold, most step
// time at stake first (ties by id).
func device(r *breakdown.Report, d int, knobs map[string]string) []Finding {
	dr := &r.Devices[d]
	sm := &dr.Summary
	if sm.Steps == 0 || sm.Mean <= 0 {
		return nil
	}
	var out []Finding
	add := func(f *Finding) {
		if f != nil {
			f.Step = sm.Mean
			f.Severity = severityOf(f.AtStake, sm.Mean)
			out = append(out, *f)
		}
	}
	add(outliers(dr))
	add(hostStall(dr))
	add(graphLaunch(dr))
	add(launchBound(dr, StackOf(r)))
	add(communication(r, d, knobs))
	add(kernelStorm(dr))
	add(hostSync(dr))
	add(moeRouting(dr))
	add(farFromSOL(dr))
	add(coverage(dr))
	slices.SortStableFunc(out, func(a, b Finding) int {
		if c := cmp.Compare(b.AtStake, a.AtStake); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}
