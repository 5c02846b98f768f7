package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/nsys"
)

// configCaption says where the run configuration comes from and what it keeps.
const configCaption = "Run configuration: the performance knobs of the environment nsys recorded (" +
	"NCCL_, CUDA_, TORCH_, PYTORCH_, VLLM_, SGLANG_, TRTLLM_, OMP_ only; names with TOKEN, SECRET, PASS, PWD, KEY, CRED, AUTH, COOKIE, " +
	"JWT, PRIVATE, CERT or SESSION dropped; URL credentials stripped; long values clipped)"

// configLine is the run configuration in one line: "Run configuration: A=1  B=2", or ""
// when the capture recorded none. Names and values are clipped (clipValue).
func configLine(cfg []nsys.EnvVar) string {
	if len(cfg) == 0 {
		return ""
	}
	parts := make([]string, len(cfg))
	for i, e := range cfg {
		parts[i] = clipValue(e.Name) + "=" + clipValue(e.Value)
	}
	return "Run configuration: " + strings.Join(parts, "  ")
}

// configJSON is the configuration as a JSON object (never nil: {} when none).
func configJSON(cfg []nsys.EnvVar) map[string]string {
	out := make(map[string]string, len(cfg))
	for _, e := range cfg {
		out[e.Name] = e.Value
	}
	return out
}

// nameProtos returns the distinct protocols that NCCL kernel names carry, sorted.
func nameProtos(ps []string) []string {
	var out []string
	for _, p := range ps {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// ncclProtoNote says what the protocol decoded from NCCL kernel names can and cannot tell:
// the suffix (_LL, _LL128, _SIMPLE) names the kernel variant that was launched, not the
// protocol setting, so NCCL_PROTO from the recorded environment is shown beside it. It is
// "" when no kernel name carries a protocol.
func ncclProtoNote(cfg []nsys.EnvVar, protos []string) string {
	ps := nameProtos(protos)
	if len(ps) == 0 {
		return ""
	}
	names := strings.Join(ps, ", ")
	const what = "the name is the kernel variant launched, not proof of the protocol setting"
	if v, ok := compare.ConfigValue(cfg, "NCCL_PROTO"); ok {
		return fmt.Sprintf("NCCL_PROTO=%s set in the environment; kernel names say %s (%s)", clipValue(v), names, what)
	}
	return fmt.Sprintf("NCCL kernel names say %s (%s); NCCL_PROTO is not in the recorded environment", names, what)
}

// reportProtos lists the protocols of a report's NCCL kernel names.
func reportProtos(r *breakdown.Report) []string {
	var out []string
	for _, k := range r.Kernels {
		if k.NCCL != nil {
			out = append(out, k.NCCL.Proto)
		}
	}
	return out
}

// sideProtos lists the protocols of a diff side's NCCL kernel names.
func sideProtos(s *compare.SideSummary) []string {
	var out []string
	for _, n := range s.NCCL {
		out = append(out, n.Proto)
	}
	return out
}

// protoSet is NCCL_PROTO of a configuration, "" when unset; clipped (clipValue), since
// JSON repeats it for every NCCL kernel (the whole value is in "config").
func protoSet(cfg []nsys.EnvVar) string {
	v, _ := compare.ConfigValue(cfg, "NCCL_PROTO")
	return clipValue(v)
}

// configChangeText is one changed knob: "NCCL_PROTO: (unset) -> LL"; values clipped.
func configChangeText(c compare.ConfigChange) string {
	b, n := clipValue(c.Base), clipValue(c.New)
	if !c.BaseSet {
		b = compare.Unset
	}
	if !c.NewSet {
		n = compare.Unset
	}
	return clipValue(c.Name) + ": " + b + " -> " + n
}

// ConfigChangeJSON is one knob that differs between the sides of a diff; null for unset.
type ConfigChangeJSON struct {
	Name string  `json:"name"`
	Base *string `json:"base"`
	New  *string `json:"new"`
}

func configChangesJSON(cs []compare.ConfigChange) []ConfigChangeJSON {
	out := []ConfigChangeJSON{}
	for _, c := range cs {
		j := ConfigChangeJSON{Name: c.Name}
		if c.BaseSet {
			j.Base = &c.Base
		}
		if c.NewSet {
			j.New = &c.New
		}
		out = append(out, j)
	}
	return out
}

// configTable is the report page's run-configuration table, nil when there is none.
func configTable(r *breakdown.Report) *htmlTable {
	if len(r.Config) == 0 {
		return nil
	}
	t := &htmlTable{ID: "config", Caption: configCaption, Head: []htmlCell{cellText("variable"), cellText("value")},
		Note: ncclProtoNote(r.Config, reportProtos(r))}
	for _, e := range r.Config {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellName(clipValue(e.Name)), cellName(clipValue(e.Value))}})
	}
	return t
}

// diffConfigTable is the diff page's table of changed knobs, nil when none changed.
func diffConfigTable(c *compare.Comparison, bl, nl string) *htmlTable {
	if len(c.Config) == 0 {
		return nil
	}
	t := &htmlTable{ID: "config-changes", Caption: "Run configuration changed (the environment nsys recorded; allow-listed knobs only)",
		Head: []htmlCell{cellText("variable"), cellText(bl), cellText(nl)}}
	for _, ch := range c.Config {
		b, n := clipValue(ch.Base), clipValue(ch.New)
		if !ch.BaseSet {
			b = compare.Unset
		}
		if !ch.NewSet {
			n = compare.Unset
		}
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellName(clipValue(ch.Name)), cellName(b), cellName(n)}})
	}
	return t
}

// diffNCCLNote is the note under the diff's NCCL table: what each side's names say.
func diffNCCLNote(c *compare.Comparison, bl, nl string) string {
	var notes []string
	for _, s := range []struct {
		label string
		ss    *compare.SideSummary
	}{{bl, &c.Base}, {nl, &c.New}} {
		if n := ncclProtoNote(s.ss.Config, sideProtos(s.ss)); n != "" {
			notes = append(notes, s.label+": "+n)
		}
	}
	return strings.Join(notes, "; ")
}
