package render

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// TestOneValueTP2 checks, on the real 2-GPU captures, that the decode table's mean per
// step of each category and the canonical sentence of the same category print the same
// string; and that the all-reduce/collective sentences label the rank numbers as over the
// matched collectives of the aligned steps.
func TestOneValueTP2(t *testing.T) {
	row := regexp.MustCompile(`^([a-z_]+) +(\S+) +\S+ +\S+ +\S+$`)
	sentence := regexp.MustCompile(`^  ([a-z_]+): (\S+)/step = `)
	for _, name := range []string{"tp2-moe-eager", "tp2-moe-eager-nvtx", "tp2-moe-graph", "tp2-moe-graph-nvtx", "tp2-moe-graph-serve"} {
		t.Run(name, func(t *testing.T) {
			rep := traceReport(t, filepath.Join("..", "testdata", "traces", name+".sqlite.gz"), breakdown.Options{})
			var b bytes.Buffer
			if err := Text(&b, findings.Of(rep), TextOptions{Top: 10, Width: MaxTextLine}); err != nil {
				t.Fatal(err)
			}
			table := map[string]string{}
			checked, ranked := 0, 0
			for _, line := range strings.Split(unwrapped(b.String()), "\n") {
				if strings.HasPrefix(line, "Device ") {
					clear(table)
				}
				if m := row.FindStringSubmatch(line); m != nil && m[1] != "category" && m[1] != "total" {
					table[m[1]] = m[2]
				}
				if m := sentence.FindStringSubmatch(line); m != nil {
					want, ok := table[m[1]]
					if !ok {
						t.Errorf("sentence of %s without a table row: %q", m[1], line)
					} else if m[2] != want {
						t.Errorf("%s: table %s/step, sentence %s/step: %q", m[1], want, m[2], line)
					}
					checked++
					if strings.HasPrefix(m[1], "allreduce") || strings.HasPrefix(m[1], "collective") {
						if !strings.Contains(line, "; matched collectives over the ") || !strings.Contains(line, " kernel time") {
							t.Errorf("rank sentence not labelled: %q", line)
						}
						ranked++
					}
				}
			}
			if checked == 0 || ranked == 0 {
				t.Fatalf("%d sentences checked, %d of collectives, in:\n%s", checked, ranked, b.String())
			}
		})
	}
}

// TestTopKernelsCaption: the text and HTML tables cover the summarised steps by default,
// the whole trace with TopWhole, and say which.
func TestTopKernelsCaption(t *testing.T) {
	rep := traceReport(t, filepath.Join("..", "testdata", "traces", "tp2-moe-eager.sqlite.gz"), breakdown.Options{})
	fr := findings.Of(rep)
	n := rep.Devices[0].Summary.Steps + rep.Devices[1].Summary.Steps
	for _, tc := range []struct {
		v    TopKernels
		want string
		top  breakdown.KernelStat
	}{
		{TopSteps, "Top kernels (the " + strconv.Itoa(n) + " summarised steps of the tables above", rep.StepKernels[0]},
		{TopWhole, "Top kernels (whole trace, all devices):", rep.Kernels[0]},
	} {
		var b bytes.Buffer
		if err := Text(&b, fr, TextOptions{Top: 3, TopKernels: tc.v, Width: MaxTextLine}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		i := strings.Index(out, tc.want)
		if i < 0 {
			t.Fatalf("no %q in:\n%s", tc.want, out)
		}
		lines := strings.Split(out[i:], "\n")
		if !strings.HasPrefix(strings.TrimSpace(lines[2]), breakdown.FormatDuration(int64(tc.top.Total))+" ") {
			t.Errorf("%q: first row %q, want total %s", tc.want, lines[2], breakdown.FormatDuration(int64(tc.top.Total)))
		}
		var h bytes.Buffer
		if err := HTML(&h, fr, HTMLOptions{EChartsJS: "/*echarts*/", TopKernels: tc.v}); err != nil {
			t.Fatal(err)
		}
		caption := "whole trace, all devices"
		if tc.v == TopSteps {
			caption = "summarised steps"
		}
		if !strings.Contains(h.String(), caption) {
			t.Errorf("HTML has no caption %q", caption)
		}
	}
	if rep.StepKernels[0].Total >= rep.Kernels[0].Total {
		t.Errorf("the steps' top row %v is not below the whole trace's %v", rep.StepKernels[0].Total, rep.Kernels[0].Total)
	}
}
