package render

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/compare"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/nsys"
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
			rules := map[findings.ID]bool{}
			minor := map[findings.ID]bool{}
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
			case top != nil && (!strings.HasPrefix(lim, "Limiter: "+string(top.ID)) || !strings.Contains(lim, ", "+breakdown.FormatDuration(int64(top.AtStake))+" of")):
				t.Errorf("limiter line %q, want %s (%v at stake)", lim, top.ID, top.AtStake)
			}
			if got := strings.Count(b.String(), "\n     try: ") + strings.Count(b.String(), "\n    try: "); got != len(rules) {
				t.Errorf("%d findings listed, the report has %d rules not minor", got, len(rules))
			}
			for id := range rules {
				if n := strings.Count(b.String(), string(id)+" ["); n > 1 {
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

// TestRoundsLead: the report of assisted decoding (serve-assisted: 4 draft forwards per
// verify forward) leads with the rounds warning, the rounds and draft forwards per round,
// and how to get time per token; with the tokens given, the time per token in the warning
// and the device line. A diff of it leads with the same warning. A capture without rounds
// has no such line.
func TestRoundsLead(t *testing.T) {
	r := findings.Of(traceReport(t, filepath.Join("..", "testdata", "traces", "serve-assisted.sqlite.gz"), breakdown.Options{}))
	text := func(r *findings.Report) string {
		var b bytes.Buffer
		ew := &errWriter{w: &b}
		textHeadline(ew, r)
		return b.String()
	}
	s := text(r)
	if !strings.HasPrefix(s, RoundsWarning+" (") || !strings.Contains(strings.SplitN(s, "\n", 2)[0], "draft forwards and a verify forward per round; tokens unknown: --tokens N") {
		t.Errorf("serve-assisted report does not lead with the rounds:\n%s", s)
	}
	r.Tokens = 40
	rd := findings.RoundsOf(r, 0)
	s = text(r)
	tok := breakdown.FormatDuration(int64(rd.PerToken)) + "/token"
	if lines := strings.SplitN(s, "\n", 3); !strings.Contains(lines[0], "40 tokens (--tokens)") || !strings.Contains(lines[0], tok) ||
		!strings.HasSuffix(lines[1], "; "+tok+" (40 tokens, --tokens)") {
		t.Errorf("with --tokens 40 (%s): %s", tok, s)
	}
	c := compare.Compare(compare.Side{Label: "a", Reports: []*findings.Report{r}}, compare.Side{Label: "b", Reports: []*findings.Report{r}}, breakdown.Decode, compare.Options{})
	var b bytes.Buffer
	if err := DiffText(&b, c, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), RoundsWarning+" (a: ") || !strings.Contains(b.String(), "\nTime per token: ") {
		t.Errorf("diff of rounds does not lead with them:\n%s", firstLines(b.String(), 6))
	}
	d := findings.Of(traceReport(t, filepath.Join("..", "testdata", "traces", "dense-eager.sqlite.gz"), breakdown.Options{}))
	if s := text(d); strings.Contains(s, RoundsWarning) {
		t.Errorf("dense-eager: %s", firstLines(s, 2))
	}
}

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	return strings.Join(ls[:min(n, len(ls))], "\n")
}

// TestRankWords names the ranks a rule holds on by device id, as ranges, out of the
// report's devices.
func TestRankWords(t *testing.T) {
	r := &findings.Report{Report: &breakdown.Report{Devices: make([]breakdown.DeviceReport, 8)}}
	for i := range r.Devices {
		r.Devices[i].Device = nsys.DeviceID(i)
	}
	f := &findings.Finding{ID: findings.LaunchBound}
	group := func(devs ...int) *findings.Group {
		g := &findings.Group{ID: f.ID}
		for _, d := range devs {
			g.Members = append(g.Members, findings.Member{Dev: d, F: f})
		}
		return g
	}
	for _, tc := range []struct {
		devs []int
		want string
	}{
		{[]int{1}, "rank 1 of 8"},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7}, "ranks 0-7"},
		{[]int{3, 0, 2}, "ranks 0, 2-3 of 8"},
		{[]int{7, 5}, "ranks 5, 7 of 8"},
	} {
		if got := rankWords(r, group(tc.devs...)); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.devs, got, tc.want)
		}
	}
	one := &findings.Report{Report: &breakdown.Report{Devices: make([]breakdown.DeviceReport, 1)}}
	if got := rankWords(one, group(0)); got != "" {
		t.Errorf("one device: %q", got)
	}
}
