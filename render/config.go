package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/nsys"
)

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
