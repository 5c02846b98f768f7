package compare

import (
	"slices"
	"strings"

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
