package render

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// This file tests report_text.go: the text tables add up under the statistic they name.

// printed parses a number as the report prints it (Duration: 104.9µs, 2.199ms, 839ns;
// Percent: 4.77%, 100%) into nanoseconds or percent, with half a unit of its last printed
// digit: the most its rounding can have moved it.
func printed(t *testing.T, s string) (v, half float64) {
	t.Helper()
	unit := 1.0
	num := s
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"ms", 1e6}, {"µs", 1e3}, {"ns", 1}, {"s", 1e9}, {"%", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			num, unit = strings.TrimSuffix(s, u.suffix), u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		t.Fatalf("cannot parse printed number %q", s)
	}
	switch {
	case strings.ContainsAny(num, "eE"): // a tiny percentage such as 4.2e-05%
		half = math.Abs(v)
	case s == "100%": // Percent prints 99.95% to 100.05% as 100%
		half = 0.05
	case strings.Contains(num, "."):
		half = 0.5 * math.Pow(10, -float64(len(num)-strings.Index(num, ".")-1))
	default:
		half = 0.5
	}
	return v * unit, half * unit
}

// checkAddsUp checks that the printed parts add up to the printed total, to the rounding of
// the printed values.
func checkAddsUp(t *testing.T, where string, parts []string, total string) {
	t.Helper()
	var sum, slack float64
	for _, p := range parts {
		v, h := printed(t, p)
		sum += v
		slack += h
	}
	tv, th := printed(t, total)
	slack += th
	if math.Abs(sum-tv) > slack*(1+1e-9) {
		t.Errorf("%s: parts %v add up to %g, total %s (%g); more than the rounding (%g) apart", where, parts, sum, total, tv, slack)
	}
}

// textTables returns the decode tables of a text report: for each, the category rows'
// cells and the total row's cells (after the category name).
func textTables(t *testing.T, text string) (tables [][][]string, totals [][]string) {
	t.Helper()
	var cur [][]string
	in := false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "category" && len(f) == 5 && f[1] == "mean/step":
			in, cur = true, nil
		case in && len(f) > 0 && f[0] == "total":
			tables, totals = append(tables, cur), append(totals, f[1:])
			in = false
		case in:
			cur = append(cur, f)
		}
	}
	return tables, totals
}

// TestTablesAddUp checks, on every capture of testdata/traces (decode and all phases),
// that each table's parts add up to its total under the statistic it names: the text
// report's and the HTML page's decode tables (mean per step: the rows' mean/step add up to
// the mean step, their shares to 100%, to the rounding of the printed values), the JSON's
// mean_ns (exactly, in ns), the HTML per-device table of a multi-GPU trace (category means
// add up to the mean column), and that the sentences quote the table's own numbers.
func TestTablesAddUp(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.sqlite.gz"))
	if err != nil || len(files) < 10 {
		t.Fatalf("captures in testdata/traces: %d, %v", len(files), err)
	}
	for _, gz := range files {
		name := strings.TrimSuffix(filepath.Base(gz), ".sqlite.gz")
		for _, phase := range []breakdown.PhaseSelection{breakdown.DecodeSteps, breakdown.AllSteps} {
			r := traceReport(t, gz, breakdown.Options{Phase: phase})
			where := name + "/" + r.Devices[0].Summary.Phase.String()
			checkReportAddsUp(t, where, r)
		}
	}
	checkReportAddsUp(t, "synthetic", synthReport(24, 2))
}

func checkReportAddsUp(t *testing.T, where string, r *breakdown.Report) {
	t.Helper()
	var text bytes.Buffer
	if err := Text(&text, findings.Of(r), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	tables, totals := textTables(t, text.String())
	want := 0
	for i := range r.Devices {
		if r.Devices[i].Summary.Steps > 0 {
			want++
		}
	}
	if len(tables) != want || want == 0 {
		t.Fatalf("%s: %d decode tables in the text report, want %d", where, len(tables), want)
	}
	for i, rows := range tables {
		var means, shares []string
		for _, row := range rows {
			means, shares = append(means, row[1]), append(shares, row[2])
		}
		checkAddsUp(t, where+" text mean/step", means, totals[i][0])
		checkAddsUp(t, where+" text share", shares, totals[i][1])
		// The kernels and memory-operations columns add up to their totals ("-" is none).
		for col := 3; col <= 4; col++ {
			var sum float64
			slack := 0.05 * float64(len(rows)+1)
			for _, row := range rows {
				if row[col] != "-" {
					v, err := strconv.ParseFloat(row[col], 64)
					if err != nil {
						t.Fatalf("%s: cell %q: %v", where, row[col], err)
					}
					sum += v
				}
			}
			tot, err := strconv.ParseFloat(totals[i][col-1], 64)
			if err != nil || math.Abs(sum-tot) > slack {
				t.Errorf("%s: column %d adds up to %g, total %s; more than the rounding apart", where, col, sum, totals[i][col-1])
			}
		}
		if totals[i][1] != "100%" {
			t.Errorf("%s: total share %s", where, totals[i][1])
		}
	}
	var js struct {
		Devices []struct {
			Decode struct {
				MeanNS     int64 `json:"mean_ns"`
				Categories map[string]struct {
					MeanNS int64 `json:"mean_ns"`
				} `json:"categories"`
				Outliers *struct {
					Steps []int `json:"steps"`
				} `json:"outliers"`
			} `json:"decode"`
		} `json:"devices"`
	}
	var buf bytes.Buffer
	if err := JSON(&buf, findings.Of(r)); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	for di, d := range r.Devices {
		sm := &d.Summary
		if sm.Steps == 0 {
			continue
		}
		dw := where + " device " + strconv.Itoa(int(d.Device))
		var sum int64
		for _, c := range js.Devices[di].Decode.Categories {
			sum += c.MeanNS
		}
		var wall int64
		steps, _, _ := breakdown.SelectSteps(d.Steps, phaseSel(sm.Phase))
		out := map[int]bool{} // the outliers the JSON lists are not in the summary
		if o := js.Devices[di].Decode.Outliers; o != nil {
			for _, i := range o.Steps {
				out[i] = true
			}
		}
		n := 0
		for i := range steps {
			if !out[steps[i].Index] {
				wall += int64(steps[i].Wall())
				n++
			}
		}
		if n != sm.Steps {
			t.Errorf("%s: %d steps less %d outliers, summary of %d", dw, len(steps), len(out), sm.Steps)
		}
		if mean := js.Devices[di].Decode.MeanNS; sum != mean || mean != wall/int64(n) {
			t.Errorf("%s: JSON categories' mean_ns add up to %d, decode mean_ns %d, steps' mean wall %d", dw, sum, mean, wall/int64(n))
		}
		ht := summaryTable(sm)
		var means, shares []string
		for _, row := range ht.Rows[:len(ht.Rows)-1] {
			means, shares = append(means, row.Cells[1].Text), append(shares, row.Cells[2].Text)
		}
		tot := ht.Rows[len(ht.Rows)-1].Cells
		if ht.Head[1].Text != "mean/step" || !strings.Contains(ht.Caption, "mean") {
			t.Errorf("%s: HTML table does not name its statistic: %q, %q", dw, ht.Caption, ht.Head[1].Text)
		}
		checkAddsUp(t, dw+" HTML mean/step", means, tot[1].Text)
		checkAddsUp(t, dw+" HTML share", shares, tot[2].Text)
		// The sentences quote the table: "<cat>: <mean>/step = <share> of the mean ... step".
		rowOf := map[string][]string{}
		for _, row := range tables[0] {
			rowOf[row[0]] = row
		}
		if di == 0 {
			for _, s := range summarySentences(sm) {
				cat, rest, _ := strings.Cut(s, ": ")
				row := rowOf[cat]
				if row == nil || !strings.HasPrefix(rest, row[1]+"/step = "+row[2]+" of the mean ") {
					t.Errorf("%s: sentence %q does not quote the table row %v", dw, s, row)
				}
			}
		}
	}
	if len(r.Devices) > 1 {
		// One column per device; the category rows (with a category swatch) add up to the
		// last row, the mean.
		rt := rankTable(r.Devices)
		last := rt.Rows[len(rt.Rows)-1]
		if last.Cells[0].Text != "mean" {
			t.Fatalf("%s: the rank table's last row is %q, want the mean", where, last.Cells[0].Text)
		}
		for col := 1; col < len(rt.Head); col++ {
			var parts []string
			for _, row := range rt.Rows {
				if strings.HasPrefix(row.Cells[0].Class, "cat ") {
					parts = append(parts, row.Cells[col].Text)
				}
			}
			if len(parts) == 0 {
				t.Fatalf("%s: rank table without category rows", where)
			}
			checkAddsUp(t, where+" HTML rank table "+rt.Head[col].Text, parts, last.Cells[col].Text)
		}
	}
}
