package render

import (
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
)

// configCaption says where the run configuration comes from and what it keeps.
const configCaption = "Run configuration: the performance knobs of the environment nsys recorded (" +
	"NCCL_, CUDA_, TORCH_, PYTORCH_, VLLM_, SGLANG_, TRTLLM_, OMP_ only; names with TOKEN, SECRET, PASS, PWD, KEY, CRED, AUTH, COOKIE, " +
	"JWT, PRIVATE, CERT or SESSION dropped; URL credentials stripped; long values clipped)"

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
