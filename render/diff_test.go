package render

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
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

// TestPooledNote: a pooled sample of a multi-GPU diff is each aligned step's slowest rank,
// so a pooled all-reduce can come out under every rank's own mean (tp2_eager_nvtx: pooled
// 4.462ms, ranks 9.848ms and 7.853ms). The story then says so under the row; within the
// ranks' means, or with one rank, it says nothing.
func TestPooledNote(t *testing.T) {
	ar := kernelclass.AllReduce
	rank := func(r int, base, new time.Duration) compare.RankComparison {
		rk := compare.RankComparison{Rank: r}
		rk.BaseMeans[ar], rk.NewMeans[ar] = base, new
		return rk
	}
	c := &compare.Comparison{Base: compare.SideSummary{Label: "eager"}, New: compare.SideSummary{Label: "graph"},
		Ranks: []compare.RankComparison{rank(0, 9848*time.Microsecond, 135*time.Microsecond), rank(1, 7853*time.Microsecond, 54*time.Microsecond)}}
	row := &compare.Row{Name: "allreduce", Category: ar, Mean: compare.MeanChange{Base: 4462e3, New: 100e3}}
	want := "on eager the pooled allreduce (4.462ms) is under every rank's own (rank 0 9.848ms, rank 1 7.853ms): a pooled sample is each aligned step's slowest rank, whose allreduce is not the ranks' mean (the late rank waits least in collectives)"
	if got := pooledNote(c, row); got != want {
		t.Errorf("note %q\nwant %q", got, want)
	}
	row.Mean.Base = 8e6 // within the ranks' means
	if got := pooledNote(c, row); got != "" {
		t.Errorf("a pooled mean within the ranks' has a note: %q", got)
	}
	c.Ranks = c.Ranks[:1]
	row.Mean.Base = 1e6
	if got := pooledNote(c, row); got != "" {
		t.Errorf("one rank, yet a note: %q", got)
	}
}
