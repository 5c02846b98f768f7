package steps

import (
	"cmp"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// FuzzStepRanges feeds arbitrary NVTX texts through the step dialects and phase parsing,
// and an arbitrary --steps value through ParseStepMethod (as given and as nvtx:REGEX). texts
// holds one NVTX range text per line; shape gives each range, one byte per range, its
// thread, whether it nests in the previous range or was never closed, and its length
// (breakdown's FuzzSummarizeNVTX runs the same inputs through Summarize).
//
// Properties: nothing panics; phases are prefill, decode or unknown; a dialect match is
// consistent with the dialect's expression and phase function; the step ranges of a
// thread do not overlap; ParseStepMethod accepts exactly the valid methods and regular
// expressions.
//
// The seeds (run by plain go test) are the files of this package's
// testdata/fuzz/FuzzStepRanges, where go test -fuzz writes a failing input.
func FuzzStepRanges(f *testing.F) {
	nsystest.NeedSeeds(f)
	f.Fuzz(func(t *testing.T, texts, steps string, shape []byte) {
		lines := strings.Split(texts, "\n")
		if len(lines) > 64 {
			lines = lines[:64]
		}
		for _, s := range lines {
			if p := phaseFromText(s); p > Decode {
				t.Fatalf("phaseFromText(%q) = %v", s, p)
			}
			for _, d := range dialects {
				if m := d.re.FindStringSubmatch(s); m != nil {
					if st := d.read(m); st.phase > Mixed || st.batch < 0 {
						t.Fatalf("%s reads %q as %+v", d.name, s, st)
					}
				}
			}
		}

		// ParseStepMethod: the value as given, and as the expression of nvtx:REGEX.
		m, err := ParseStepMethod(steps)
		var oe *OptionError
		switch {
		case err != nil && m != (StepMethod{}):
			t.Fatalf("ParseStepMethod(%q) = %+v, %v", steps, m, err)
		case err == nil && strings.Contains(m.Method.String(), "method("):
			t.Fatalf("ParseStepMethod(%q) = unknown method %v", steps, m.Method)
		case err == nil && (m.NVTX != nil) != strings.HasPrefix(steps, "nvtx:"):
			t.Fatalf("ParseStepMethod(%q) = %v with expression %v", steps, m.Method, m.NVTX)
		case err != nil && (!errors.As(err, &oe) || oe.Option != OptSteps):
			t.Fatalf("ParseStepMethod(%q) error %q is not an OptionError for OptSteps", steps, err)
		}
		if rest, ok := strings.CutPrefix(steps, "nvtx:"); ok {
			if _, cerr := regexp.Compile(rest); (cerr == nil) != (err == nil) {
				t.Fatalf("ParseStepMethod(%q) error %v, regexp.Compile error %v", steps, err, cerr)
			}
		}
		userMethod, err := ParseStepMethod("nvtx:" + steps)
		userRe := userMethod.NVTX
		if _, cerr := regexp.Compile(steps); (cerr == nil) != (err == nil) {
			t.Fatalf("ParseStepMethod(nvtx:%q) error %v, regexp.Compile error %v", steps, err, cerr)
		}
		if userRe != nil && userRe.String() != steps {
			t.Fatalf("ParseStepMethod(nvtx:%q) compiled %q", steps, userRe)
		}

		tr := rangesTrace(lines, shape)
		ms, detail, _ := stepRanges(tr, nil)
		checkStepRanges(t, tr, ms)
		if len(ms) > 0 {
			var dl *dialect
			for i := range dialects {
				if detail == dialects[i].name+" NVTX ranges" {
					dl = &dialects[i]
				}
			}
			if dl == nil {
				t.Fatalf("stepRanges detail %q names no dialect", detail)
			}
			for _, m := range ms {
				sub := dl.re.FindStringSubmatch(m.text)
				if sub == nil {
					t.Fatalf("%s step range %q does not match the dialect", dl.name, m.text)
				}
				if st := dl.read(sub); st.phase != m.phase || st.batch != m.batch || st.idle {
					t.Fatalf("%s step range %q: phase %v batch %d, dialect says %+v", dl.name, m.text, m.phase, m.batch, st)
				}
			}
		}
		if userRe != nil {
			ms, _, _ := stepRanges(tr, userRe)
			checkStepRanges(t, tr, ms)
			for _, m := range ms {
				sub := userRe.FindStringSubmatch(m.text)
				if sub == nil {
					t.Fatalf("step range %q does not match /%s/", m.text, userRe)
				}
				// A user regex picks the ranges; the phase comes from the range's whole text
				// (a regex "step" on "decode step 3" still gives decode).
				if st := readText(m.text); st.phase != m.phase || st.idle {
					t.Fatalf("step range %q: phase %v, want %+v", m.text, m.phase, st)
				}
			}
		}
	})
}

// checkStepRanges checks that matched ranges exist in the trace and that the step ranges
// of each thread do not overlap.
func checkStepRanges(t *testing.T, tr *nsys.Trace, ms []matchedRange) {
	t.Helper()
	lastEnd := map[int64]nsys.Time{}
	for _, m := range ms {
		if tr.RangeTexts[m.r.Text] != m.text {
			t.Fatalf("matched range text %q, trace says %q", m.text, tr.RangeTexts[m.r.Text])
		}
		if m.phase > Mixed {
			t.Fatalf("range %q: phase %v", m.text, m.phase)
		}
		if e, ok := lastEnd[m.r.Thread]; ok && m.r.Start < e {
			t.Fatalf("step range %q at %d overlaps the previous step range of its thread (ends %d)", m.text, m.r.Start, e)
		}
		lastEnd[m.r.Thread] = rangeEnd(m.r)
	}
}

// rangeEnd is the end of a range, the largest time for one never closed.
func rangeEnd(r nsys.Range) nsys.Time {
	if r.Open() {
		return 1<<63 - 1
	}
	return r.End
}

// rangesTrace builds a trace of one NVTX range per text, shaped by shape as breakdown's
// fuzzTrace shapes them (without the kernels: stepRanges reads the ranges alone).
func rangesTrace(texts []string, shape []byte) *nsys.Trace {
	tr := &nsys.Trace{Path: "gen.sqlite"}
	ids := map[string]uint32{}
	cursor := nsys.Time(0)
	if len(shape) > 0 && shape[0]&0x80 != 0 {
		cursor = -1_000_000
	}
	prevStart := cursor
	for i, text := range texts {
		var b byte
		if i < len(shape) {
			b = shape[i]
		}
		start := cursor
		if b&4 != 0 && i > 0 {
			start = prevStart + 10 // nested in (or overlapping) the previous range
		} else {
			cursor += 1000
		}
		end := start + 500 + nsys.Time(b>>3)*100
		if b&2 != 0 {
			end = start - 1 // never closed
		}
		id, ok := ids[text]
		if !ok {
			id = uint32(len(tr.RangeTexts))
			tr.RangeTexts = append(tr.RangeTexts, text)
			ids[text] = id
		}
		tr.Ranges = append(tr.Ranges, nsys.Range{Start: start, End: end, Thread: int64(1 + b&1), Text: id})
		prevStart = start
	}
	slices.SortStableFunc(tr.Ranges, func(a, b nsys.Range) int { return cmp.Compare(a.Start, b.Start) })
	return tr
}
