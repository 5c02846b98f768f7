package breakdown

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// loop builds the host side of a serving loop: one thread launching kernels back to back
// on one device, each 1µs long, 500ns apart on the GPU.
type loop struct {
	g      *tgen
	thread int64
	dev    nsys.DeviceID
	stream nsys.StreamID
	h      nsys.Time // host clock: the next launch call starts here
	gpu    nsys.Time // the stream is free from here
}

func newLoop(g *tgen, thread int64, dev nsys.DeviceID, at nsys.Time) *loop {
	return &loop{g: g, thread: thread, dev: dev, stream: 7, h: at, gpu: at}
}

// next returns the next kernel slot on the GPU for a launch at l.h.
func (l *loop) next(name string, cat kernelclass.Category) kspec {
	s := max(l.h+l.g.launchLat+200, l.gpu)
	l.gpu = s + 1000
	return kspec{Name: name, Cat: cat, Dev: l.dev, Stream: l.stream, Start: s, End: s + 1000}
}

// step launches kernels of the given categories and returns the first kernel's start.
func (l *loop) step(cats ...kernelclass.Category) nsys.Time {
	first := nsys.Time(-1)
	for _, c := range cats {
		s := l.next("", c)
		l.g.launch(l.thread, l.h, s)
		if first < 0 {
			first = s.Start
		}
		l.h += l.g.launchLat + 500
	}
	return first
}

// named launches kernels by name and returns the first kernel's start.
func (l *loop) named(names ...string) nsys.Time {
	first := nsys.Time(-1)
	for _, n := range names {
		s := l.next(n, 0)
		l.g.launch(l.thread, l.h, s)
		if first < 0 {
			first = s.Start
		}
		l.h += l.g.launchLat + 500
	}
	return first
}

// readBack copies the sampled tokens to the host and waits: a D2H copy and a
// cudaStreamSynchronize, as every server does at the end of a step.
func (l *loop) readBack() {
	s := max(l.h+l.g.launchLat+200, l.gpu)
	l.g.memcpy(l.thread, l.h, l.h+l.g.launchLat, nsys.MemcpyDtoH, l.dev, l.stream, s, s+300)
	l.gpu = s + 300
	l.g.sync(l.thread, l.h+l.g.launchLat, l.gpu+100)
	l.h = l.gpu + 100
}

// idle lets the host do something else for d.
func (l *loop) idle(d nsys.Time) { l.h += d }

var decodeMix = []kernelclass.Category{kernelclass.Elementwise, kernelclass.GEMM, kernelclass.Attention, kernelclass.GEMM, kernelclass.Elementwise, kernelclass.GEMM, kernelclass.Sampling}

func TestNVTXDialects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		texts  []string
		steps  string // Options.Steps
		detail string
		phases []string
		batch  []int // per step; nil: none said
	}{
		// A batch of prompt chunks and generating requests is mixed.
		{"TensorRT-LLM", []string{
			"[Executor] _forward_step 3: 4 ctx reqs, 0 gen reqs",
			"[Executor] _forward_step 4: 2 ctx reqs, 6 gen reqs",
			"[Executor] _forward_step 5: 0 ctx reqs, 8 gen reqs",
			"[Executor] _forward_step 6: 0 ctx reqs, 8 gen reqs",
		}, "", "TensorRT-LLM NVTX ranges", []string{"prefill", "mixed", "decode", "decode"}, []int{4, 8, 8, 8}},
		// Releases before the iteration counter: no " N" after _forward_step.
		{"TensorRT-LLM-old", []string{
			"[Executor] _forward_step: 4 ctx reqs, 0 gen reqs",
			"[Executor] _forward_step: 2 ctx reqs, 6 gen reqs",
			"[Executor] _forward_step: 0 ctx reqs, 8 gen reqs",
		}, "", "TensorRT-LLM NVTX ranges", []string{"prefill", "mixed", "decode"}, []int{4, 8, 8}},
		{"vLLM", []string{
			"execute_context_2(1024)_generation_0(0)",
			"execute_context_2(1024)_generation_6(6)",
			"execute_context_0(0)_generation_8(8)",
			"execute_context_0(0)_generation_8(8)",
		}, "", "vLLM NVTX ranges", []string{"prefill", "mixed", "decode", "decode"}, []int{2, 8, 8, 8}},
		// vLLM's detailed_trace_annotation: scheduled tokens, then per phase the sums of query
		// and sequence lengths and of their squares and products.
		{"vLLM-detailed", []string{
			"execute_512_context_2(sq512sk512sqsq131072sqsk131072)_generation_0(sq0sk0sqsq0sqsk0)",
			"execute_134_context_1(sq128sk300sqsq16384sqsk38400)_generation_6(sq6sk900sqsq6sqsk900)",
			"execute_8_context_0(sq0sk0sqsq0sqsk0)_generation_8(sq8sk1210sqsq8sqsk1210)",
			"execute_8_context_0(sq0sk0sqsq0sqsk0)_generation_8(sq8sk1218sqsq8sqsk1218)",
		}, "", "vLLM detailed NVTX ranges", []string{"prefill", "mixed", "decode", "decode"}, []int{2, 7, 8, 8}},
		// SGLang: the forward mode and bs=N; an idle step is no step (its work outside),
		// a speculative verify is a decode step.
		{"SGLang", []string{
			"step[PREFILL bs=3 tokens=512]",
			"step[mixed bs=5]",
			"step[DECODE bs=64]",
			"step[idle]",
			"step[TARGET_VERIFY bs=64]",
			"step[decode bs=63]",
		}, "", "SGLang NVTX ranges", []string{"prefill", "mixed", "decode", "decode", "decode"}, []int{3, 5, 64, 64, 63}},
		{"plain", []string{"prefill", "decode_step 0", "decode_step 1", "decode_step 2"}, "",
			"plain NVTX ranges", []string{"prefill", "decode", "decode", "decode"}, nil},
		{"plain-explicit", []string{"prefill", "decode_step 0"}, "nvtx",
			"plain NVTX ranges", []string{"prefill", "decode"}, nil},
		// "step N" says nothing about the phase: the shape decides (same mix: decode).
		{"plain-step", []string{"step 0", "step 1", "step 2"}, "",
			"plain NVTX ranges", []string{"decode", "decode", "decode"}, nil},
		{"user-regex", []string{"iteration 0", "iteration 1", "iteration 2"}, "nvtx:^iteration",
			"nvtx /^iteration/", []string{"decode", "decode", "decode"}, nil},
		// A user regex takes precedence over the dialects; its text gives the phase.
		{"user-regex-trt", []string{
			"[Executor] _forward_step 4: 2 ctx reqs, 6 gen reqs",
			"[Executor] _forward_step 5: 0 ctx reqs, 8 gen reqs",
		}, "nvtx:_forward_step", "nvtx /_forward_step/", []string{"mixed", "decode"}, []int{8, 8}},
		{"user-regex-phase", []string{"my_prefill 0", "my_decode 1", "my_decode 2", "decode_step 9"}, "nvtx:^my_",
			"nvtx /^my_/", []string{"prefill", "decode", "decode"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newTGen(t)
			l := newLoop(g, 1, 0, 1000)
			var want []nsys.Time
			for i, text := range tc.texts {
				rs := l.h
				cats := decodeMix
				if strings.Contains(text, "decode_step 9") {
					cats = []kernelclass.Category{kernelclass.Elementwise}
				}
				first := l.step(cats...)
				if !strings.Contains(text, "decode_step 9") && text != "step[idle]" {
					want = append(want, first)
				}
				l.readBack()
				g.nvtx(1, rs, l.h, text)
				// Host work between steps, outside any range, with a nested range that
				// must not count as a step.
				g.nvtx(1, l.h, l.h+100, fmt.Sprintf("schedule %d", i))
				l.idle(20_000)
			}
			rep := mustSummarize(t, g.trace(), Options{Steps: mustParseSteps(t, tc.steps), Phase: AllSteps})
			d := devReport(t, rep, 0)
			if d.Method != MethodNVTX || d.MethodDetail != tc.detail {
				t.Errorf("method %v (%q), want nvtx (%q)", d.Method, d.MethodDetail, tc.detail)
			}
			// The last range's step also holds the stray step 9 when a user regex skips it.
			if got := starts(d.Steps); !slices.Equal(got, want) {
				t.Errorf("step starts %v, want %v", got, want)
			}
			if got := phases(d.Steps); !slices.Equal(got, tc.phases) {
				t.Errorf("phases %v, want %v", got, tc.phases)
			}
			texts := slices.DeleteFunc(slices.Clone(tc.texts), func(s string) bool { return s == "step[idle]" })
			for i, s := range d.Steps {
				if i < len(texts) && s.Label != texts[i] {
					t.Errorf("step %d label %q, want %q", i, s.Label, texts[i])
				}
				if want := 0; tc.batch != nil && i < len(tc.batch) && s.Batch != tc.batch[i] || tc.batch == nil && s.Batch != want {
					t.Errorf("step %d batch %d, want %v", i, s.Batch, tc.batch)
				}
			}
			if len(rep.Warnings) > 0 {
				t.Errorf("warnings: %v", rep.Warnings)
			}
		})
	}
}

// TestNVTXNested checks that only the outermost step range of a thread is a step: a
// "decode" range nested in a "decode_step" range does not split it.
func TestNVTXNested(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	var want []nsys.Time
	for i := 0; i < 3; i++ {
		rs := l.h
		want = append(want, l.step(kernelclass.GEMM, kernelclass.Elementwise))
		ns := l.h
		l.step(kernelclass.Attention, kernelclass.Sampling)
		g.nvtx(1, ns, l.h, "decode")
		l.readBack()
		g.nvtx(1, rs, l.h, fmt.Sprintf("decode_step %d", i))
		l.idle(10_000)
	}
	d := devReport(t, mustSummarize(t, g.trace(), Options{}), 0)
	if d.Method != MethodNVTX || !slices.Equal(starts(d.Steps), want) {
		t.Errorf("method %v, starts %v; want nvtx, %v", d.Method, starts(d.Steps), want)
	}
}

// TestNVTXThreadMapping checks that step ranges are mapped to the GPU work their own
// thread launched (through correlation ids), not to work that merely overlaps in time:
// thread 2 launches kernels that start on the GPU before thread 1's, inside thread 1's
// ranges, and a kernel of another process reuses a correlation id of thread 1.
func TestNVTXThreadMapping(t *testing.T) {
	g := newTGen(t)
	g.threadIn(3, 3000) // another process
	l := newLoop(g, 1, 0, 10_000)
	var want []nsys.Time
	for i := 0; i < 3; i++ {
		rs := l.h
		// Thread 2 launched a kernel a little earlier; it starts on stream 9 right at
		// the range start, before any work of thread 1.
		g.launch(2, rs-2000, k(kernelclass.AllReduce, 0, 9, rs+1, rs+4000))
		// A kernel of process 3000 with the correlation id of thread 1's next launch.
		g.kernelCorr(g.procOf[3], g.corr+1, k(kernelclass.GEMM, 0, 11, rs+2, rs+3))
		want = append(want, l.step(decodeMix...))
		l.readBack()
		g.nvtx(1, rs, l.h, fmt.Sprintf("decode_step %d", i))
		l.idle(50_000)
	}
	tr := g.trace()
	d := devReport(t, mustSummarize(t, tr, Options{}), 0)
	if d.Method != MethodNVTX {
		t.Fatalf("method %v, want nvtx", d.Method)
	}
	if got := starts(d.Steps); !slices.Equal(got, want) {
		t.Errorf("step starts %v, want %v (the first kernel thread 1 launched in each range)", got, want)
	}
}

// TestNVTXCategoryThread checks --nvtx-category: kernels launched inside a matching range
// count as its category, kernels of other threads running at the same time do not.
func TestNVTXCategoryThread(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	for i := 0; i < 3; i++ {
		l.step(kernelclass.GEMM)
		rs := l.h
		g.launch(2, rs, k(kernelclass.Elementwise, 0, 9, rs+100, rs+200)) // thread 2, same time
		l.step(kernelclass.Elementwise, kernelclass.Sampling)             // the router, as torch ops
		g.nvtx(1, rs, l.h, "moe_route")
		l.idle(100)
		l.step(kernelclass.GEMM)
		l.readBack()
		l.idle(10_000)
	}
	over := []NVTXCategory{{Match: regexp.MustCompile(`^moe_route$`), Category: kernelclass.MoERouting}}
	tr := g.trace()
	rep := mustSummarize(t, tr, Options{NVTXCategories: over})
	d := devReport(t, rep, 0)
	if d.Method != MethodSync || len(d.Steps) != 3 {
		t.Fatalf("method %v with %d steps, want sync with 3", d.Method, len(d.Steps))
	}
	for _, s := range d.Steps {
		if s.Kernels[kernelclass.MoERouting] != 2 || s.Kernels[kernelclass.Elementwise] != 1 || s.Kernels[kernelclass.Sampling] != 0 || s.Kernels[kernelclass.GEMM] != 2 {
			t.Errorf("step %d kernels %v, want 2 moe_routing, 1 elementwise (thread 2), 0 sampling, 2 gemm", s.Index, s.Kernels)
		}
	}
	var routed int
	for _, ks := range rep.Kernels {
		if ks.Category == kernelclass.MoERouting {
			routed += ks.Count
			if ks.Rule != "nvtx-category" {
				t.Errorf("kernel %s: rule %q, want nvtx-category", ks.Name, ks.Rule)
			}
		}
	}
	if routed != 6 {
		t.Errorf("kernel stats: %d moe_routing kernels, want 6", routed)
	}
	// Without the option nothing is moe_routing.
	for _, s := range devReport(t, mustSummarize(t, tr, Options{}), 0).Steps {
		if s.Kernels[kernelclass.MoERouting] != 0 {
			t.Errorf("step %d: %d moe_routing kernels without --nvtx-category", s.Index, s.Kernels[kernelclass.MoERouting])
		}
	}
}

// TestGraphSteps checks CUDA graph steps: each graph launch starts a step, the eager work
// before the first one is a step of its own, and the kernels of one graph launch (which
// share its correlation id) count as one launch.
func TestGraphSteps(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	want := []nsys.Time{l.named(catKernel[kernelclass.GEMM], "flash_fwd_kernel", catKernel[kernelclass.Elementwise], catKernel[kernelclass.GEMM], catKernel[kernelclass.Sampling])} // eager prefill
	l.readBack()
	for i := 0; i < 4; i++ {
		var ks []kspec
		for _, c := range decodeMix {
			ks = append(ks, l.next("", c))
		}
		g.graphLaunch(1, l.h, ks...)
		want = append(want, ks[0].Start)
		l.h += g.launchLat
		l.step(kernelclass.Elementwise) // one eager kernel after the graph
		l.readBack()
		l.idle(5_000)
	}
	d := devReport(t, mustSummarize(t, g.trace(), Options{Phase: AllSteps}), 0)
	if d.Method != MethodGraph || d.MethodDetail != "4 CUDA graph launches, 5 device-to-host copies, 4 synchronize calls" {
		t.Fatalf("method %v (%q), want graph (4 CUDA graph launches, 5 device-to-host copies, 4 synchronize calls)", d.Method, d.MethodDetail)
	}
	if got := starts(d.Steps); !slices.Equal(got, want) {
		t.Errorf("starts %v, want %v", got, want)
	}
	if d.Steps[0].Launches != 5 {
		t.Errorf("eager step: %d launches, want 5", d.Steps[0].Launches)
	}
	for _, s := range d.Steps[1:] {
		if s.Launches != 2 || s.TotalKernels() != len(decodeMix)+1 || s.Kernels[kernelclass.Memory] != 1 {
			t.Errorf("step %d: %d launches, %d kernels, %d copies; want 2, %d, 1", s.Index, s.Launches, s.TotalKernels(),
				s.Kernels[kernelclass.Memory], len(decodeMix)+1)
		}
	}
	if got := phases(d.Steps); !slices.Equal(got, []string{"prefill", "decode", "decode", "decode", "decode"}) {
		t.Errorf("phases %v", got)
	}
}

// TestSyncSteps checks steps found from synchronisation: a device-to-host copy, then the
// next GPU work starts a step; or a synchronize call, then the next launch.
func TestSyncSteps(t *testing.T) {
	t.Run("d2h", func(t *testing.T) {
		g := newTGen(t)
		l := newLoop(g, 1, 0, 1000)
		var want []nsys.Time
		for i := 0; i < 4; i++ {
			want = append(want, l.step(decodeMix...))
			// The D2H copy without a synchronize call (a pinned async read-back polled later).
			s := max(l.h+g.launchLat, l.gpu)
			g.memcpy(1, l.h, l.h+g.launchLat, nsys.MemcpyDtoH, 0, 7, s, s+300)
			l.gpu = s + 300
			l.h = l.gpu + 30_000
		}
		d := devReport(t, mustSummarize(t, g.trace(), Options{}), 0)
		if d.Method != MethodSync || d.MethodDetail != "4 device-to-host copies" {
			t.Errorf("method %v (%q), want sync (4 device-to-host copies)", d.Method, d.MethodDetail)
		}
		if got := starts(d.Steps); !slices.Equal(got, want) {
			t.Errorf("starts %v, want %v", got, want)
		}
	})
	t.Run("synchronize", func(t *testing.T) {
		g := newTGen(t)
		l := newLoop(g, 1, 0, 1000)
		var want []nsys.Time
		for i := 0; i < 4; i++ {
			want = append(want, l.step(decodeMix...))
			g.sync(1, l.h, l.gpu+100)
			l.h = l.gpu + 30_000
		}
		d := devReport(t, mustSummarize(t, g.trace(), Options{}), 0)
		// The last synchronize call is followed by no launch.
		if d.Method != MethodSync || d.MethodDetail != "3 synchronize calls" {
			t.Errorf("method %v (%q), want sync (3 synchronize calls)", d.Method, d.MethodDetail)
		}
		if got := starts(d.Steps); !slices.Equal(got, want) {
			t.Errorf("starts %v, want %v", got, want)
		}
	})
	t.Run("read-back", func(t *testing.T) {
		g := newTGen(t)
		l := newLoop(g, 1, 0, 1000)
		var want []nsys.Time
		for i := 0; i < 5; i++ {
			want = append(want, l.step(decodeMix...))
			l.readBack()
		}
		d := devReport(t, mustSummarize(t, g.trace(), Options{}), 0)
		if d.Method != MethodSync || !slices.Equal(starts(d.Steps), want) {
			t.Errorf("method %v, starts %v; want sync, %v", d.Method, starts(d.Steps), want)
		}
		for _, s := range d.Steps {
			if s.TotalKernels() != len(decodeMix) || s.Kernels[kernelclass.Memory] != 1 || s.Launches != len(decodeMix) {
				t.Errorf("step %d: %d kernels, %d copies, %d launches", s.Index, s.TotalKernels(), s.Kernels[kernelclass.Memory], s.Launches)
			}
		}
	})
	t.Run("sync inside steps", func(t *testing.T) {
		// Read-backs inside a step (.item() in model code) cut it into pieces without
		// kernels; when most pieces have none, they are not steps.
		g := newTGen(t)
		l := newLoop(g, 1, 0, 1000)
		for i := 0; i < 3; i++ {
			l.step(kernelclass.GEMM)
			for j := 0; j < 3; j++ {
				s := max(l.h+g.launchLat, l.gpu)
				g.memcpy(1, l.h, l.h+g.launchLat, nsys.MemcpyDtoH, 0, 7, s, s+100)
				l.gpu = s + 100
				l.h = l.gpu + 1000
			}
		}
		d := devReport(t, mustSummarize(t, g.trace(), Options{}), 0)
		if d.Method == MethodSync {
			t.Errorf("method sync with %d steps; want another method when most sync pieces hold no kernel", len(d.Steps))
		}
	})
}

// TestPeriodicSteps checks steps found from a repeating kernel sequence without markers.
func TestPeriodicSteps(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	var want []nsys.Time
	for i := 0; i < 6; i++ {
		want = append(want, l.step(decodeMix...))
		l.idle(40_000)
	}
	d := devReport(t, mustSummarize(t, g.trace(), Options{}), 0)
	if d.Method != MethodPeriodic {
		t.Fatalf("method %v (%s), want periodic", d.Method, d.MethodDetail)
	}
	if d.MethodDetail != fmt.Sprintf("kernel sequence repeats every %d kernels", len(decodeMix)) {
		t.Errorf("detail %q", d.MethodDetail)
	}
	if got := starts(d.Steps); !slices.Equal(got, want) {
		t.Errorf("starts %v, want %v", got, want)
	}
	for _, s := range d.Steps {
		if s.TotalKernels() != len(decodeMix) || s.Phase != Decode {
			t.Errorf("step %d: %d kernels, phase %v", s.Index, s.TotalKernels(), s.Phase)
		}
	}
}

// TestWholeStep checks the fallback: one step over the whole trace, with a warning unless
// asked for (a forced method that finds nothing fails: TestForcedMethodFindsNone).
func TestWholeStep(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	first := l.step(kernelclass.GEMM, kernelclass.Attention, kernelclass.Elementwise)
	l.idle(100_000)
	l.step(kernelclass.Sampling)
	tr := g.trace()
	for _, tc := range []struct {
		steps, warning string
	}{
		{"", "device 0: no step markers found (NVTX, graph launches, synchronisation, periodicity); the whole trace is one step"},
		{"auto", "device 0: no step markers found (NVTX, graph launches, synchronisation, periodicity); the whole trace is one step"},
		{"whole", ""},
	} {
		// The one step has no phase, so every report also says that the decode summary
		// covers all steps.
		const noDecode = "device 0: no decode steps; summarising all 1 steps"
		rep := mustSummarize(t, tr, Options{Steps: mustParseSteps(t, tc.steps)})
		d := devReport(t, rep, 0)
		if d.Method != MethodWhole || len(d.Steps) != 1 || d.Steps[0].Start != first || d.Steps[0].TotalKernels() != 4 {
			t.Errorf("--steps %q: method %v, %d steps", tc.steps, d.Method, len(d.Steps))
			continue
		}
		if d.Steps[0].Phase != Unknown {
			t.Errorf("--steps %q: phase %v, want unknown", tc.steps, d.Steps[0].Phase)
		}
		var ws []string
		for _, w := range rep.Warnings {
			if w.Error() != noDecode {
				ws = append(ws, w.Error())
			}
		}
		if tc.warning == "" && len(ws) > 0 || tc.warning != "" && !slices.Contains(ws, tc.warning) {
			t.Errorf("--steps %q: warnings %q, want %q", tc.steps, ws, tc.warning)
		}
	}
}

// TestStepsOption checks bad --steps values and an NVTX method that finds nothing.
func TestStepsOption(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	for i := 0; i < 3; i++ {
		rs := l.h
		l.step(decodeMix...)
		l.readBack()
		g.nvtx(1, rs, l.h, "forward")
	}
	tr := g.trace()
	for _, tc := range []struct{ steps, err string }{
		{"bogus", `Steps: unknown method "bogus"`},
		{"nvtx:(", "Steps: bad regular expression"},
		{"nvtx", "no NVTX range of a known step dialect launched GPU work"},
		{"nvtx:^decode", "no NVTX range matching /^decode/ launched GPU work"},
	} {
		m, err := steps.ParseStepMethod(tc.steps)
		var oe *OptionError
		if err != nil && (!errors.As(err, &oe) || oe.Option != OptSteps) {
			t.Errorf("%s: error %v, want an OptionError for OptSteps", tc.steps, err)
		}
		if err == nil {
			_, err = Summarize(tr, Options{Steps: m})
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("--steps %s: error %v, want %q", tc.steps, err, tc.err)
		}
	}
	// A user regex matching the ranges works, and auto mode finds the read-backs.
	if d := devReport(t, mustSummarize(t, tr, Options{Steps: StepMethod{Method: MethodNVTX, NVTX: regexp.MustCompile("^forward$")}}), 0); d.Method != MethodNVTX || len(d.Steps) != 3 {
		t.Errorf("nvtx:^forward$: method %v, %d steps", d.Method, len(d.Steps))
	}
	if d := devReport(t, mustSummarize(t, tr, Options{}), 0); d.Method != MethodSync || len(d.Steps) != 3 {
		t.Errorf("auto: method %v, %d steps", d.Method, len(d.Steps))
	}
}

// TestNVTXSingleRangeAuto checks that in auto mode a single matching range (a phase
// marker around the whole loop) is not taken as the only step.
func TestNVTXSingleRangeAuto(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	rs := l.h
	for i := 0; i < 4; i++ {
		l.step(decodeMix...)
		l.readBack()
	}
	g.nvtx(1, rs, l.h, "decode")
	d := devReport(t, mustSummarize(t, g.trace(), Options{}), 0)
	if d.Method != MethodSync || len(d.Steps) != 4 {
		t.Errorf("method %v with %d steps, want sync with 4", d.Method, len(d.Steps))
	}
	// Asked for explicitly, the one range is the step.
	d = devReport(t, mustSummarize(t, g.trace(), Options{Steps: StepMethod{Method: MethodNVTX}}), 0)
	if d.Method != MethodNVTX || len(d.Steps) != 1 || d.Steps[0].Phase != Decode {
		t.Errorf("--steps nvtx: method %v with %d steps", d.Method, len(d.Steps))
	}
}

// TestSkip checks --skip: the first N steps of each device are dropped, indices kept.
func TestSkip(t *testing.T) {
	g := newTGen(t)
	for dev := nsys.DeviceID(0); dev < 2; dev++ {
		l := newLoop(g, int64(1+dev), dev, 1000)
		for i := 0; i < 5; i++ {
			l.step(decodeMix...)
			l.readBack()
		}
	}
	tr := g.trace()
	all := mustSummarize(t, tr, Options{})
	rep := mustSummarize(t, tr, Options{Skip: 2})
	for _, d := range rep.Devices {
		if d.Skipped != 2 || len(d.Steps) != 3 || d.Summary.Steps != 3 {
			t.Errorf("device %d: skipped %d, %d steps, summary of %d; want 2, 3, 3", d.Device, d.Skipped, len(d.Steps), d.Summary.Steps)
			continue
		}
		for i, s := range d.Steps {
			if s.Index != i+2 || s.Start != all.Devices[d.Device].Steps[i+2].Start {
				t.Errorf("device %d: step %d has index %d, start %d", d.Device, i, s.Index, s.Start)
			}
		}
	}
	// Skipping more steps than there are leaves none, without failing.
	rep = mustSummarize(t, tr, Options{Skip: 10})
	for _, d := range rep.Devices {
		if d.Skipped != 5 || len(d.Steps) != 0 || d.Summary.Steps != 0 {
			t.Errorf("--skip 10: device %d: skipped %d, %d steps, summary of %d", d.Device, d.Skipped, len(d.Steps), d.Summary.Steps)
		}
	}
}

// TestDeviceOption checks --device: one device's report, or an error naming the devices
// that have activity.
func TestDeviceOption(t *testing.T) {
	g := newTGen(t)
	for _, dev := range []nsys.DeviceID{0, 1, 3} {
		l := newLoop(g, int64(10+dev), dev, 1000)
		for i := 0; i < 3+int(dev); i++ {
			l.step(decodeMix...)
			l.readBack()
		}
	}
	tr := g.trace()
	rep := mustSummarize(t, tr, Options{})
	if len(rep.Devices) != 3 {
		t.Fatalf("%d devices, want 3", len(rep.Devices))
	}
	for _, d := range rep.Devices {
		if len(d.Steps) != 3+int(d.Device) || d.GPU != fmt.Sprintf("GPU %d", d.Device) {
			t.Errorf("device %d: %d steps, GPU %q", d.Device, len(d.Steps), d.GPU)
		}
	}
	one := nsys.DeviceID(1)
	rep = mustSummarize(t, tr, Options{Device: &one})
	if len(rep.Devices) != 1 || rep.Devices[0].Device != 1 || len(rep.Devices[0].Steps) != 4 {
		t.Errorf("--device 1: %+v", rep.Devices)
	}
	five := nsys.DeviceID(5)
	_, err := Summarize(tr, Options{Device: &five})
	var ne *nsys.Error
	if err == nil || !errors.As(err, &ne) || err.Error() != "gen.sqlite: no activity on device 5 (devices with activity: 0, 1, 3)" {
		t.Errorf("--device 5: error %v", err)
	}
}

// TestNoGPUActivity checks that a trace without GPU activity is an error wrapping
// nsys.ErrNoGPUActivity.
func TestNoGPUActivity(t *testing.T) {
	g := newTGen(t)
	g.sync(1, 0, 100)
	g.nvtx(1, 0, 100, "decode_step 0")
	_, err := Summarize(g.trace(), Options{})
	if !errors.Is(err, nsys.ErrNoGPUActivity) {
		t.Errorf("error %v, want one wrapping nsys.ErrNoGPUActivity", err)
	}
}

// TestPhaseInference checks phases from the shape of steps when no NVTX text gives them.
func TestPhaseInference(t *testing.T) {
	const (
		prefillAttn = "flash_fwd_kernel"
		decodeAttn  = "flash_fwd_splitkv_kernel"
		gemm        = "nvjet_sm90_tst_128x64_64x8_1x2_h_bz_NNT"
		norm        = "at::native::vectorized_layer_norm_kernel<c10::BFloat16, float, true>"
		argmax      = "at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::ArgMaxOps<float>>>"
	)
	decode := []string{norm, gemm, decodeAttn, gemm, norm, gemm, argmax}
	for _, tc := range []struct {
		name  string
		steps [][]string
		slow  int // index of a step whose kernels run 10x longer (-1: none)
		want  []string
	}{
		{"prefill attention", [][]string{
			{norm, gemm, prefillAttn, gemm, norm, gemm, argmax}, decode, decode, decode,
		}, -1, []string{"prefill", "decode", "decode", "decode"}},
		// Another mix without new attention kernels and no longer: still decode.
		{"extra kernel", [][]string{
			decode, decode, append(slices.Clone(decode), norm), decode,
		}, -1, []string{"decode", "decode", "decode", "decode"}},
		// Another mix that runs much longer: prefill.
		{"long step", [][]string{
			append(slices.Clone(decode), norm), decode, decode, decode,
		}, 0, []string{"prefill", "decode", "decode", "decode"}},
		// The same mix, only longer: decode (shape, not time alone).
		{"same mix longer", [][]string{decode, decode, decode}, 0, []string{"decode", "decode", "decode"}},
		// Another mix with fewer attention calls a forward than the decode template and no
		// sign of prompt tokens: uncertain, out of the decode summary.
		{"fewer attention calls", [][]string{
			decode, decode, {norm, gemm, gemm, norm, gemm, argmax}, decode,
		}, -1, []string{"decode", "decode", "uncertain", "decode"}},
		// Twice the attention calls a forward, one of decode's kernel, one of another: a
		// prompt chunk's own attention beside the decode rows'.
		{"two attention calls", [][]string{
			decode, decode, {norm, gemm, decodeAttn, prefillAttn, gemm, norm, gemm, argmax}, decode,
		}, -1, []string{"decode", "decode", "mixed", "decode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newTGen(t)
			l := newLoop(g, 1, 0, 1000)
			for i, names := range tc.steps {
				if i == tc.slow {
					for _, n := range names {
						s := l.next(n, 0)
						s.End = s.Start + 20_000
						l.gpu = s.End
						g.launch(1, l.h, s)
						l.h += g.launchLat + 500
					}
				} else {
					l.named(names...)
				}
				l.readBack()
				l.idle(2000)
			}
			d := devReport(t, mustSummarize(t, g.trace(), Options{}), 0)
			if d.Method != MethodSync {
				t.Fatalf("method %v, want sync", d.Method)
			}
			if got := phases(d.Steps); !slices.Equal(got, tc.want) {
				t.Errorf("phases %v, want %v", got, tc.want)
			}
			// The summary covers decode steps only by default.
			var n int
			for _, p := range tc.want {
				if p == "decode" {
					n++
				}
			}
			if d.Summary.Steps != n || d.Summary.Phase != Decode {
				t.Errorf("summary of %d %v steps, want %d decode", d.Summary.Steps, d.Summary.Phase, n)
			}
			for _, s := range d.Steps {
				if s.PhaseEvidence == "" {
					t.Errorf("step %d (%v): no phase evidence", s.Index, s.Phase)
				}
			}
			// An uncertain step is counted and named in a warning.
			if slices.Contains(tc.want, "uncertain") {
				if !strings.Contains(PhaseCounts(d.Steps), "1 uncertain") {
					t.Errorf("phase counts %q, want 1 uncertain", PhaseCounts(d.Steps))
				}
				warned := false
				for _, w := range d.Warnings {
					warned = warned || strings.Contains(w.Error(), "uncertain phase")
				}
				if !warned {
					t.Errorf("no warning names the uncertain step: %v", d.Warnings)
				}
			}
		})
	}
}

// TestNVTXOpenRange checks that a step range never closed (the capture stopped inside it)
// still makes a step of the work it launched.
func TestNVTXOpenRange(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	var want []nsys.Time
	for i := 0; i < 3; i++ {
		rs := l.h
		want = append(want, l.step(decodeMix...))
		l.readBack()
		end := l.h
		if i == 2 {
			end = -1
		}
		g.nvtx(1, rs, end, fmt.Sprintf("decode_step %d", i))
		l.idle(10_000)
	}
	tr := g.trace()
	rep := mustSummarize(t, tr, Options{})
	d := devReport(t, rep, 0)
	if d.Method != MethodNVTX || !slices.Equal(starts(d.Steps), want) {
		t.Errorf("method %v, starts %v; want nvtx, %v", d.Method, starts(d.Steps), want)
	}
	checkInvariants(t, tr, rep, Options{})
}

// TestNVTXRanks checks tensor parallelism with one process per rank: correlation ids
// repeat across processes, and each rank's ranges make the steps of its own device only.
func TestNVTXRanks(t *testing.T) {
	g := newTGen(t)
	want := map[nsys.DeviceID][]nsys.Time{}
	for rank := 0; rank < 2; rank++ {
		thread := int64(10 + rank)
		g.threadIn(thread, int64(5000+rank))
		g.corr = 0 // correlation ids start again in each process
		dev := nsys.DeviceID(rank)
		l := newLoop(g, thread, dev, nsys.Time(1000+777*rank))
		for i := 0; i < 4; i++ {
			rs := l.h
			want[dev] = append(want[dev], l.step(decodeMix...))
			l.step(kernelclass.AllReduce)
			l.readBack()
			g.nvtx(thread, rs, l.h, fmt.Sprintf("decode_step %d", i))
			l.idle(nsys.Time(10_000 + 3_000*rank))
		}
	}
	tr := g.trace()
	rep := mustSummarize(t, tr, Options{})
	for dev, w := range want {
		d := devReport(t, rep, dev)
		if d.Method != MethodNVTX || !slices.Equal(starts(d.Steps), w) {
			t.Errorf("device %d: method %v, starts %v; want nvtx, %v", dev, d.Method, starts(d.Steps), w)
		}
		for _, s := range d.Steps {
			if s.TotalKernels() != len(decodeMix)+1 || s.Launches != len(decodeMix)+1 || s.Kernels[kernelclass.AllReduce] != 1 {
				t.Errorf("device %d step %d: %d kernels, %d launches", dev, s.Index, s.TotalKernels(), s.Launches)
			}
		}
	}
	checkInvariants(t, tr, rep, Options{})
}

// mustParseSteps parses a step method (ParseStepMethod).
func mustParseSteps(t testing.TB, s string) StepMethod {
	t.Helper()
	m, err := steps.ParseStepMethod(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFoldedForwardsCheck: NVTX step ranges that each hold two forwards of the model (two
// samplers after the lm_head, each with its read-back) are taken as the steps asked for,
// with a self-check that they hold several iterations; without the ranges, the finder makes
// one step per forward.
func TestFoldedForwardsCheck(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	var forwards []nsys.Time
	for i := 0; i < 4; i++ {
		rs := l.h
		for range 2 {
			forwards = append(forwards, l.step(decodeMix...))
			l.readBack()
		}
		g.nvtx(1, rs, l.h, fmt.Sprintf("decode_step %d", i))
		l.idle(20_000)
	}
	tr := g.trace()
	rep := mustSummarize(t, tr, Options{Steps: StepMethod{Method: MethodNVTX}})
	if d := devReport(t, rep, 0); len(d.Steps) != 4 {
		t.Fatalf("--steps nvtx: %d steps, want the 4 ranges", len(d.Steps))
	}
	found := false
	for _, w := range rep.Warnings {
		var sc *SelfCheckWarning
		if errors.As(w, &sc) && strings.Contains(sc.Text, "4 steps hold several forwards of the model") {
			found = true
		}
	}
	if !found {
		t.Errorf("warnings %v, want a self-check that the steps hold several forwards", rep.Warnings)
	}
	d := devReport(t, mustSummarize(t, tr, Options{Steps: StepMethod{Method: MethodSync}}), 0)
	if got := starts(d.Steps); !slices.Equal(got, forwards) {
		t.Errorf("--steps sync: starts %v, want one step per forward %v", got, forwards)
	}
}

// TestMixedSelection: --phase mixed summarises the steps whose NVTX text says they batch
// prompt and generating requests together.
func TestMixedSelection(t *testing.T) {
	g := newTGen(t)
	l := newLoop(g, 1, 0, 1000)
	for i, text := range []string{"execute_context_4(512)_generation_0(0)", "execute_context_1(64)_generation_3(3)",
		"execute_context_0(0)_generation_4(4)", "execute_context_1(80)_generation_4(4)", "execute_context_0(0)_generation_5(5)"} {
		rs := l.h
		l.step(decodeMix...)
		l.readBack()
		g.nvtx(1, rs, l.h, text)
		l.idle(nsys.Time(10_000 + i))
	}
	if _, err := ParsePhaseSelection("mixed"); err != nil {
		t.Fatal(err)
	}
	d := devReport(t, mustSummarize(t, g.trace(), Options{Phase: MixedSteps}), 0)
	if d.Summary.Phase != Mixed || d.Summary.Steps != 2 || !slices.Equal(phases(d.Steps), []string{"prefill", "mixed", "decode", "mixed", "decode"}) {
		t.Errorf("summary of %d %v steps, phases %v; want 2 mixed", d.Summary.Steps, d.Summary.Phase, phases(d.Steps))
	}
}
