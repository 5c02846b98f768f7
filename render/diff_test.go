package render

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// This file tests diff_text.go: the means table adds up.
// phaseSel is the selection that summarises phase p (Unknown: every step).
func phaseSel(p breakdown.Phase) breakdown.PhaseSelection {
	switch p {
	case breakdown.Decode:
		return breakdown.DecodeSteps
	case breakdown.Prefill:
		return breakdown.PrefillSteps
	}
	return breakdown.AllSteps
}

// TestDiffMeansAddUp checks diff's means table on pairs of captures (eager vs graph, one
// and two GPUs): each side's category means add up to its mean step, exactly in the JSON,
// to the printed rounding in the text and the HTML; and the change column is the
// difference of the two sides. diff's median table makes no such claim (its caption says
// each row is its own test).
func TestDiffMeansAddUp(t *testing.T) {
	for _, pair := range [][2]string{{"dense-eager", "dense-graph"}, {"moe-eager-nvtx", "moe-graph"}, {"tp2-moe-eager", "tp2-moe-graph"}} {
		base := traceReport(t, filepath.Join("..", "testdata", "traces", pair[0]+".sqlite.gz"), breakdown.Options{})
		new := traceReport(t, filepath.Join("..", "testdata", "traces", pair[1]+".sqlite.gz"), breakdown.Options{})
		c := compare.Compare(compare.Side{Label: "base", Reports: []*findings.Report{findings.Of(base)}},
			compare.Side{Label: "new", Reports: []*findings.Report{findings.Of(new)}}, breakdown.Decode, compare.Options{})
		where := pair[0] + " -> " + pair[1]
		var js bytes.Buffer
		if err := DiffJSONWrite(&js, c); err != nil {
			t.Fatal(err)
		}
		var d struct {
			Base, New struct {
				MeanStepNS int64            `json:"mean_step_ns"`
				MeanNS     map[string]int64 `json:"mean_ns"`
			}
		}
		if err := json.Unmarshal(js.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		for _, side := range []struct {
			name string
			step int64
			m    map[string]int64
		}{{"base", d.Base.MeanStepNS, d.Base.MeanNS}, {"new", d.New.MeanStepNS, d.New.MeanNS}} {
			var sum int64
			for _, v := range side.m {
				sum += v
			}
			if sum != side.step || side.step == 0 {
				t.Errorf("%s, %s: JSON mean_ns add up to %d, mean_step_ns %d", where, side.name, sum, side.step)
			}
		}
		var text bytes.Buffer
		if err := DiffText(&text, c, 0); err != nil {
			t.Fatal(err)
		}
		var rows [][]string
		in := false
		for _, line := range strings.Split(text.String(), "\n") {
			f := strings.Fields(line)
			switch {
			case strings.HasPrefix(line, "Means per "):
				in = true
			case in && len(f) == 2: // the header: the two labels
			case in && len(f) == 5 && f[0] == "mean" && f[1] == "step":
				var bs, ns []string
				for _, r := range rows {
					bs, ns = append(bs, r[1]), append(ns, r[2])
				}
				checkAddsUp(t, where+", base means", bs, f[2])
				checkAddsUp(t, where+", new means", ns, f[3])
				in = false
			case in && len(f) == 4:
				rows = append(rows, f)
			}
		}
		if len(rows) < 3 {
			t.Errorf("%s: means table not found or too short (%d rows):\n%s", where, len(rows), text.String())
		}
	}
}
