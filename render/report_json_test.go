package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
	"github.com/stepstat/stepstat/nsys/nsystest/captures"
	"github.com/stepstat/stepstat/render/schema"
)

// TestJSONMatchesEncoding checks that JSON, which writes steps straight from the report,
// gives the bytes encoding/json gives for NewReportJSON's value: on every capture (one
// and two GPUs, ranks included), on the report whose names, labels, path and warnings
// carry HTML and script, on labels with quotes, control characters, invalid UTF-8 and
// U+2028, and on a multi-device report with a speed-of-light floor.
func TestJSONMatchesEncoding(t *testing.T) {
	reports := map[string]*breakdown.Report{"untrusted": untrustedReport(t), "synth": synthReport(50, 3)}
	caps, _ := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.sqlite.gz"))
	if len(caps) == 0 {
		t.Fatal("no captures")
	}
	for _, c := range caps {
		reports[filepath.Base(c)] = traceReport(t, c, breakdown.Options{})
	}
	nvtx := traceReport(t, filepath.Join("..", "testdata", "traces", "dense-eager-nvtx.sqlite.gz"),
		breakdown.Options{SOLStep: 1e6})
	reports["sol"] = nvtx
	odd := synthReport(6, 1)
	for i, l := range []string{`"quoted" \ back`, "tab\tnew\nline\x01", "bad \xff utf8", "line\u2028sep\u2029", "<b>&amp;</b>", "ünïcode"} {
		odd.Devices[0].Steps[i].Label = l
	}
	reports["odd labels"] = odd
	for name, r := range reports {
		var got, want bytes.Buffer
		if err := JSON(&got, findings.Of(r)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(true)
		if err := enc.Encode(NewReportJSON(findings.Of(r))); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			g, w := got.String(), want.String()
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			t.Errorf("%s: differs at byte %d:\n got ...%s\nwant ...%s", name, i, snippet(g, i), snippet(w, i))
		}
		if name == "synth" && !strings.Contains(got.String(), `"steps":[{"index":0`) {
			t.Errorf("synth: no steps written")
		}
	}
}

func snippet(s string, i int) string {
	return s[max(0, i-60):min(len(s), i+60)]
}

// BenchmarkJSON and BenchmarkJSONEncoding compare JSON, which writes the steps one at a
// time, with encoding/json on NewReportJSON's value, on 200,000 steps.
func BenchmarkJSON(b *testing.B) {
	r := synthReport(100000, 2)
	b.ReportAllocs()
	for b.Loop() {
		if err := JSON(io.Discard, findings.Of(r)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONEncoding(b *testing.B) {
	r := synthReport(100000, 2)
	b.ReportAllocs()
	for b.Loop() {
		enc := json.NewEncoder(io.Discard)
		if err := enc.Encode(NewReportJSON(findings.Of(r))); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSchemaDecodes checks that package schema's types describe the JSON contract: a
// report's JSON decoded into schema.ReportJSON and encoded again gives the same bytes, on
// every capture and on the report with untrusted names; likewise a diff's JSON.
func TestSchemaDecodes(t *testing.T) {
	reports := map[string]*breakdown.Report{"untrusted": untrustedReport(t)}
	caps, _ := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.sqlite.gz"))
	if len(caps) == 0 {
		t.Fatal("no captures")
	}
	for _, c := range caps {
		reports[filepath.Base(c)] = traceReport(t, c, breakdown.Options{})
	}
	for name, r := range reports {
		var got bytes.Buffer
		if err := JSON(&got, findings.Of(r)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var v schema.ReportJSON
		roundTrip(t, name, got.Bytes(), &v)
		if len(v.Devices) != len(r.Devices) {
			t.Errorf("%s: %d devices decoded, want %d", name, len(v.Devices), len(r.Devices))
		}
	}
	c := captureComparison(t)
	var got bytes.Buffer
	if err := DiffJSONWrite(&got, c); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, "diff", got.Bytes(), &schema.DiffJSON{})
}

// roundTrip decodes js into v, encodes v again and checks that the bytes are js's (both
// compacted: the diff's JSON is indented).
func roundTrip(t *testing.T, name string, js []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(js, v); err != nil {
		t.Fatalf("%s: decoding into %T: %v", name, v, err)
	}
	var again bytes.Buffer
	if err := json.NewEncoder(&again).Encode(v); err != nil {
		t.Fatal(err)
	}
	var cg, cw bytes.Buffer
	if err := json.Compact(&cg, again.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&cw, js); err != nil {
		t.Fatal(err)
	}
	if g, w := cg.String(), cw.String(); g != w {
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Errorf("%s: %T encodes differently at byte %d:\n got ...%s\nwant ...%s", name, v, i, snippet(g, i), snippet(w, i))
	}
}

// TestPublicTracesRender writes the report of every public trace of the test corpus that
// summarises (breakdown's TestPublicTracesReport checks the summaries and the traces that
// do not) as text, JSON and CSV: none fails or panics.
func TestPublicTracesRender(t *testing.T) {
	for _, path := range nsystest.PublicTraces(t) {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".sqlite"), func(t *testing.T) {
			rep, err := breakdown.Summarize(captures.Open(t, path), breakdown.Options{})
			if errors.Is(err, nsys.ErrNoGPUActivity) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []func(io.Writer) error{
				func(w io.Writer) error { return Text(w, findings.Of(rep), TextOptions{Top: 10}) },
				func(w io.Writer) error { return JSON(w, findings.Of(rep)) },
				func(w io.Writer) error { return CSV(w, rep) },
			} {
				if err := f(io.Discard); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
