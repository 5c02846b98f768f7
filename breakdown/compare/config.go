package compare

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
)

// A ConfigChange is a run-configuration knob that differs between the sides of a
// comparison. An unset side has Set false and an empty value.
type ConfigChange struct {
	Name            string
	Base, New       string
	BaseSet, NewSet bool
}

// Unset is how a knob absent from a side's environment is shown.
const Unset = "(unset)"

// This file holds the run-configuration diff: the knobs each side's runs recorded
// (breakdown.Report.Config), merged per side, and the ones that differ between the sides.

// sideConfig merges the configurations of a side's runs: a knob every run sets alike keeps
// its value; one that differs between runs (or is set in some only) shows each distinct
// value in run order, joined by " | ", with Unset for runs without it.
func sideConfig(runs [][]nsys.EnvVar) []nsys.EnvVar {
	vals := map[string][]string{} // per knob, its value in each run ("" + missing when unset)
	set := map[string][]bool{}
	for i, cfg := range runs {
		for _, e := range cfg {
			if vals[e.Name] == nil {
				vals[e.Name] = make([]string, len(runs))
				set[e.Name] = make([]bool, len(runs))
			}
			vals[e.Name][i], set[e.Name][i] = e.Value, true
		}
	}
	var out []nsys.EnvVar
	for name, vs := range vals {
		var distinct []string
		for i, v := range vs {
			if !set[name][i] {
				v = Unset
			}
			if !slices.Contains(distinct, v) {
				distinct = append(distinct, v)
			}
		}
		out = append(out, nsys.EnvVar{Name: name, Value: strings.Join(distinct, " | ")})
	}
	slices.SortFunc(out, func(a, b nsys.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// configChanges lists the knobs whose value differs between the sides, by name.
func configChanges(base, new []nsys.EnvVar) []ConfigChange {
	m := map[string]*ConfigChange{}
	for _, e := range base {
		m[e.Name] = &ConfigChange{Name: e.Name, Base: e.Value, BaseSet: true}
	}
	for _, e := range new {
		c := m[e.Name]
		if c == nil {
			c = &ConfigChange{Name: e.Name}
			m[e.Name] = c
		}
		c.New, c.NewSet = e.Value, true
	}
	var out []ConfigChange
	for _, c := range m {
		if c.BaseSet != c.NewSet || c.Base != c.New {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b ConfigChange) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ConfigValue returns the value of the named knob and whether it is set.
func ConfigValue(cfg []nsys.EnvVar, name string) (string, bool) {
	for _, e := range cfg {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// captureWarnings says that the sides were captured with different nsys options (c.Capture):
// one warning naming every difference, "" (none) when they agree.
func captureWarnings(cs []ConfigChange, base, new string) []error {
	if len(cs) == 0 {
		return nil
	}
	var parts []string
	for _, c := range cs {
		b, n := c.Base, c.New
		if !c.BaseSet {
			b = Unset
		}
		if !c.NewSet {
			n = Unset
		}
		parts = append(parts, fmt.Sprintf("%s %s -> %s", c.Name, b, n))
	}
	return []error{fmt.Errorf("the sides were captured with different nsys options (META_DATA_CAPTURE, %s -> %s): %s; "+
		"the profiler's own overhead differs, so part of any change may be nsys': capture both sides alike",
		base, new, strings.Join(parts, "; "))}
}

// ranksAsRuns warns when runs given as repeated runs of a side are ranks of one run: their
// GPU activity overlaps in time (by their session starts) on different devices or RANKs.
// Pooled as repeated runs, each rank's steps count as another run's samples.
func ranksAsRuns(s Side) []error {
	var out []error
	for i := 0; i < len(s.Reports); i++ {
		for j := i + 1; j < len(s.Reports); j++ {
			a, b := s.Reports[i].Report, s.Reports[j].Report
			if !a.Origin.HasStart || !b.Origin.HasStart || a.End <= a.Start || b.End <= b.Start {
				continue
			}
			as, ae := a.Origin.SessionStart+int64(a.Start), a.Origin.SessionStart+int64(a.End)
			bs, be := b.Origin.SessionStart+int64(b.Start), b.Origin.SessionStart+int64(b.End)
			if ae <= bs || be <= as {
				continue
			}
			why := ""
			switch {
			case a.Origin.Rank >= 0 && b.Origin.Rank >= 0 && a.Origin.Rank != b.Origin.Rank:
				why = fmt.Sprintf("RANK %d and %d", a.Origin.Rank, b.Origin.Rank)
			case a.Origin.Program == b.Origin.Program && disjointDevices(a, b):
				why = "different devices"
			default:
				continue
			}
			an, bn := filepath.Base(a.Path), filepath.Base(b.Path)
			out = append(out, fmt.Errorf("%s: %s and %s ran at the same time (%s): they look like ranks of one run, not repeated runs, "+
				"and their steps are pooled as two runs' samples; give one run's files joined by + (%s=%s+%s) or their folder",
				s.Label, an, bn, why, s.Label, a.Path, b.Path))
		}
	}
	return out
}

// disjointDevices reports whether two reports ran on no common CUDA device.
func disjointDevices(a, b *breakdown.Report) bool {
	for i := range a.Devices {
		for j := range b.Devices {
			if a.Devices[i].Device == b.Devices[j].Device {
				return false
			}
		}
	}
	return len(a.Devices) > 0 && len(b.Devices) > 0
}
