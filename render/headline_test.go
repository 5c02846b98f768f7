package render

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
)

// TestTextHeadlineGolden pins the answer the text report starts with (one line per device,
// the limiter, then, one finding per rule, the minor ones, the warnings, the mean step by
// category) on the 2-GPU eager capture and the 1-GPU CUDA-graph capture, and checks it
// against the report: the limiter is the cause with the most time at stake on any device
// (never a warning), and every rule is listed once, whatever the devices it holds on.
func TestTextHeadlineGolden(t *testing.T) {
	for _, name := range []string{"tp2-moe-eager", "dense-graph", "tp2-moe-graph-nvtx"} {
		t.Run(name, func(t *testing.T) {
			r := findings.Of(traceReport(t, filepath.Join("..", "testdata", "traces", name+".sqlite.gz"), breakdown.Options{}))
			var b bytes.Buffer
			ew := &errWriter{w: &b}
			textHeadline(ew, r)
			if ew.err != nil {
				t.Fatal(ew.err)
			}
			checkGolden(t, "headline-"+name+".txt", b.Bytes())
			lines := strings.Split(b.String(), "\n")
			for i := range r.Devices {
				if want := capitalize(deviceHeadline(&r.Devices[i])); lines[i] != want {
					t.Errorf("line %d %q, want %q", i+1, lines[i], want)
				}
			}
			var top *findings.Finding
			rules := map[string]bool{}
			minor := map[string]bool{}
			for _, fs := range r.Findings {
				for k := range fs {
					f := &fs[k]
					if f.Minor() {
						minor[f.ID] = true
						continue
					}
					rules[f.ID] = true
					if f.Cause() && (top == nil || f.AtStake > top.AtStake) {
						top = f
					}
				}
			}
			lim := lines[len(r.Devices)]
			switch {
			case top == nil && !strings.HasPrefix(lim, "Limiter: no rule holds; the largest part"):
				t.Errorf("no cause, limiter line %q", lim)
			case top != nil && (!strings.HasPrefix(lim, "Limiter: "+top.ID) || !strings.Contains(lim, ", "+breakdown.FormatDuration(int64(top.AtStake))+" of")):
				t.Errorf("limiter line %q, want %s (%v at stake)", lim, top.ID, top.AtStake)
			}
			if got := strings.Count(b.String(), "\n     try: ") + strings.Count(b.String(), "\n    try: "); got != len(rules) {
				t.Errorf("%d findings listed, the report has %d rules not minor", got, len(rules))
			}
			for id := range rules {
				if n := strings.Count(b.String(), id+" ["); n > 1 {
					t.Errorf("%s listed %d times", id, n)
				}
			}
			for id := range minor {
				if !rules[id] && !strings.Contains(b.String(), "minor (under 2% of the step): ") {
					t.Errorf("minor %s not on the minor line", id)
				}
			}
		})
	}
}

// roundedUp matches a time whose rounding reached 1000 of its unit ("1000.0µs").
var roundedUp = regexp.MustCompile(`\b1000\.\d*(ns|µs|ms)`)

// TestTextUnits checks the text report of every capture for times written as 1000 of a
// unit, for gap sizes in "us" rather than "µs", and that idle lines give time per gap size.
func TestTextUnits(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.sqlite.gz"))
	if err != nil || len(files) < 10 {
		t.Fatalf("captures: %d, %v", len(files), err)
	}
	for _, gz := range files {
		var b bytes.Buffer
		if err := Text(&b, findings.Of(traceReport(t, gz, breakdown.Options{})), TextOptions{Top: 10}); err != nil {
			t.Fatal(err)
		}
		s := b.String()
		if m := roundedUp.FindString(s); m != "" {
			t.Errorf("%s: %q in the text report", filepath.Base(gz), m)
		}
		if strings.Contains(s, "<10us") || strings.Contains(s, "100us") {
			t.Errorf("%s: a gap size written in us", filepath.Base(gz))
		}
		// The idle line gives the time of each gap size, not only the count.
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "Idle: ") && line != "Idle: no gaps" && !strings.Contains(line, " gaps = ") {
				t.Errorf("%s: idle line without the time per gap size: %q", filepath.Base(gz), line)
			}
		}
	}
}
