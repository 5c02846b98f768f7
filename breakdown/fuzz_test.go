package breakdown

import (
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// FuzzSummarizeNVTX runs the inputs of steps' FuzzStepRanges through Summarize: texts
// holds one NVTX range text per line; shape gives each range, one byte per range, its
// thread, whether it nests in the previous range or was never closed, its length and the
// device of the kernel it launches; steps is a --steps expression (nvtx:REGEX).
//
// Properties: nothing panics; Summarize, automatic and with the user's expression, either
// fails naming the trace or accounts each step's wall time exactly.
//
// The seeds (run by plain go test) are the files of this package's
// testdata/fuzz/FuzzSummarizeNVTX, where go test -fuzz writes a failing input.
func FuzzSummarizeNVTX(f *testing.F) {
	nsystest.NeedSeeds(f)
	f.Fuzz(func(t *testing.T, texts, expr string, shape []byte) {
		lines := strings.Split(texts, "\n")
		if len(lines) > 64 {
			lines = lines[:64]
		}
		// What ParseStepMethod makes of expr is steps' FuzzStepRanges's to check.
		userMethod, _ := steps.ParseStepMethod("nvtx:" + expr)
		userRe := userMethod.NVTX
		tr := fuzzTrace(t, lines, shape)

		opts := []Options{{Phase: AllSteps}, {Steps: StepMethod{Method: MethodNVTX}, Skip: 1}}
		if userRe != nil {
			opts = append(opts, Options{Steps: userMethod, Phase: AllSteps})
		}
		for _, opt := range opts {
			rep, err := Summarize(tr, opt)
			if err != nil {
				if !strings.HasPrefix(err.Error(), tr.Path+": ") {
					t.Fatalf("Summarize --steps %s: error %q does not name the trace", opt.Steps, err)
				}
				continue
			}
			for _, d := range rep.Devices {
				for i, s := range d.Steps {
					var sum time.Duration
					for _, x := range s.Exclusive {
						sum += x
					}
					if sum != s.Wall() {
						t.Fatalf("--steps %s: device %d step %d: exclusive times sum to %v, wall %v", opt.Steps, d.Device, i, sum, s.Wall())
					}
				}
			}
		}
	})
}

// fuzzTrace builds a trace with one NVTX range per text, shaped by shape, each launching
// one kernel.
func fuzzTrace(t *testing.T, texts []string, shape []byte) *nsys.Trace {
	g := newTGen(t)
	g.threadIn(2, 1000)
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
		thread := int64(1 + b&1)
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
		g.nvtx(thread, start, end, text)
		kstart := start + 20
		g.launch(thread, start+5, k(kernelCats[i%len(kernelCats)], nsys.DeviceID(b>>5&1), nsys.StreamID(7+b>>6),
			kstart, kstart+100+nsys.Time(b>>4)*10))
		prevStart = start
	}
	return g.trace()
}
