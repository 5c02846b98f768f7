package breakdown

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file holds a small timeline builder for tests, in the spirit of x/exp/trace's
// testgen: it builds *nsys.Trace values directly (no SQLite), with kernels that have a
// name and so a category, streams, devices, host API calls on threads with correlation
// ids, NVTX ranges, memcpys and memsets, CUDA graph launches and synchronize calls.
// Times are plain nanoseconds.

// catKernel is a real kernel name per category; the default classifier puts each in its
// category (checked by TestTGenNames).
var catKernel = map[kernelclass.Category]string{
	kernelclass.Other:       "mystery_op_v2",
	kernelclass.GEMM:        "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT",
	kernelclass.Attention:   "flash_fwd_splitkv_kernel",
	kernelclass.MoERouting:  "topkGatingSoftmax",
	kernelclass.MoEExpert:   "fused_moe_kernel",
	kernelclass.AllReduce:   "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
	kernelclass.Collective:  "ncclDevKernel_AllGather_RING_LL",
	kernelclass.Elementwise: "at::native::vectorized_layer_norm_kernel<c10::BFloat16, float, true>",
	kernelclass.Sampling:    "at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::ArgMaxOps<float>>>",
}

// kernelCats lists the categories a kernel can have.
var kernelCats = []kernelclass.Category{kernelclass.Other, kernelclass.GEMM, kernelclass.Attention, kernelclass.MoERouting, kernelclass.MoEExpert, kernelclass.AllReduce, kernelclass.Collective, kernelclass.Elementwise, kernelclass.Sampling}

// A tgen builds one trace. The zero value is not usable; call newTGen.
type tgen struct {
	tb       testing.TB
	tr       nsys.Trace
	names    map[string]nsys.NameID
	texts    map[string]uint32
	apiNames map[string]uint8
	procs    map[int64]nsys.ProcID // by globalPid
	procOf   map[int64]nsys.ProcID // thread -> process; threads not listed are in process 0
	corr     uint32
	// launchLat is the delay between the start of a launch call and the end of the call.
	launchLat nsys.Time
}

func newTGen(tb testing.TB) *tgen {
	g := &tgen{tb: tb, names: map[string]nsys.NameID{}, texts: map[string]uint32{},
		apiNames: map[string]uint8{}, procs: map[int64]nsys.ProcID{}, procOf: map[int64]nsys.ProcID{}, launchLat: 3}
	g.tr.Path = "gen.sqlite"
	g.tr.HasKernelTable = true
	g.proc(1000)
	return g
}

// proc returns the ProcID of the process with the given pid, adding it.
func (g *tgen) proc(pid int64) nsys.ProcID {
	if p, ok := g.procs[pid]; ok {
		return p
	}
	p := nsys.ProcID(len(g.tr.Procs))
	g.tr.Procs = append(g.tr.Procs, pid<<24) // a globalPid, as nsys writes it
	g.procs[pid] = p
	return p
}

// threadIn puts thread in the process with the given pid (correlation ids are per process).
func (g *tgen) threadIn(thread, pid int64) { g.procOf[thread] = g.proc(pid) }

func (g *tgen) name(s string) nsys.NameID {
	if id, ok := g.names[s]; ok {
		return id
	}
	id := nsys.NameID(len(g.tr.Names))
	g.tr.Names = append(g.tr.Names, s)
	g.names[s] = id
	return id
}

func (g *tgen) nextCorr() uint32 { g.corr++; return g.corr }

// api adds a host API call and returns its correlation id.
func (g *tgen) api(thread int64, kind nsys.APIKind, name string, start, end nsys.Time) uint32 {
	n, ok := g.apiNames[name]
	if !ok {
		n = uint8(len(g.tr.APINames))
		g.tr.APINames = append(g.tr.APINames, name)
		g.apiNames[name] = n
	}
	c := g.nextCorr()
	g.tr.AddCall(nsys.APICall{Start: start, End: end, Correlation: c},
		nsys.Caller{Thread: thread, Name: n, Kind: kind, Proc: g.procOf[thread]})
	return c
}

// A kspec is a kernel to add: a name (or a category's name when Name is empty), where it
// runs and when.
type kspec struct {
	Name       string
	Cat        kernelclass.Category // used when Name is ""
	Dev        nsys.DeviceID
	Stream     nsys.StreamID
	Start, End nsys.Time
}

func k(c kernelclass.Category, dev nsys.DeviceID, stream nsys.StreamID, start, end nsys.Time) kspec {
	return kspec{Cat: c, Dev: dev, Stream: stream, Start: start, End: end}
}

func kn(name string, dev nsys.DeviceID, stream nsys.StreamID, start, end nsys.Time) kspec {
	return kspec{Name: name, Dev: dev, Stream: stream, Start: start, End: end}
}

func (s kspec) name() string {
	if s.Name != "" {
		return s.Name
	}
	return catKernel[s.Cat]
}

// kernelCorr adds a kernel with the given correlation id in the given process.
func (g *tgen) kernelCorr(proc nsys.ProcID, corr uint32, s kspec) {
	g.tr.AddKernel(nsys.Kernel{Start: s.Start, End: s.End, Correlation: corr},
		nsys.Site{Name: g.name(s.name()), Stream: s.Stream, Device: s.Dev, Proc: proc})
}

// kernel adds a kernel without a host launch call (a correlation id nobody else uses).
func (g *tgen) kernel(s kspec) { g.kernelCorr(0, g.nextCorr(), s) }

// kernelIn adds a kernel of thread's process without a host launch call: a kernel whose
// launch call the capture lost is still its process's (its row has the process's globalPid).
func (g *tgen) kernelIn(thread int64, s kspec) { g.kernelCorr(g.procOf[thread], g.nextCorr(), s) }

// launch adds a cudaLaunchKernel call on thread starting at at, and its kernel.
func (g *tgen) launch(thread int64, at nsys.Time, s kspec) uint32 {
	c := g.api(thread, nsys.APILaunch, "cudaLaunchKernel", at, at+g.launchLat)
	g.kernelCorr(g.procOf[thread], c, s)
	return c
}

// graphLaunch adds a cudaGraphLaunch call and the kernels it ran (traced per node, so
// every kernel has the launch's correlation id).
func (g *tgen) graphLaunch(thread int64, at nsys.Time, ks ...kspec) uint32 {
	c := g.api(thread, nsys.APIGraphLaunch, "cudaGraphLaunch", at, at+g.launchLat)
	for _, s := range ks {
		g.kernelCorr(g.procOf[thread], c, s)
	}
	return c
}

// graphExec adds a cudaGraphLaunch call and a graph-level execution (no kernel rows).
func (g *tgen) graphExec(thread int64, at nsys.Time, dev nsys.DeviceID, stream nsys.StreamID, start, end nsys.Time) uint32 {
	c := g.api(thread, nsys.APIGraphLaunch, "cudaGraphLaunch", at, at+g.launchLat)
	g.tr.Graphs = append(g.tr.Graphs, nsys.GraphExec{Start: start, End: end, Correlation: c, Stream: stream,
		Device: dev, Proc: g.procOf[thread]})
	return c
}

// memcpy adds a cudaMemcpyAsync call [apiStart, apiEnd) and its copy on the device.
func (g *tgen) memcpy(thread int64, apiStart, apiEnd nsys.Time, kind nsys.MemKind, dev nsys.DeviceID, stream nsys.StreamID, start, end nsys.Time) uint32 {
	name, ak := "cudaMemcpyAsync", nsys.APIMemcpy
	if kind == nsys.Memset {
		name, ak = "cudaMemsetAsync", nsys.APIMemset
	}
	c := g.api(thread, ak, name, apiStart, apiEnd)
	g.tr.Memops = append(g.tr.Memops, nsys.Memop{Start: start, End: end, Bytes: 32, Correlation: c,
		Stream: stream, Device: dev, Kind: kind, Proc: g.procOf[thread]})
	return c
}

// sync adds a cudaStreamSynchronize call.
func (g *tgen) sync(thread int64, start, end nsys.Time) {
	g.api(thread, nsys.APISync, "cudaStreamSynchronize", start, end)
}

// nvtx adds an NVTX push/pop range on thread; end < start makes it an open range.
func (g *tgen) nvtx(thread int64, start, end nsys.Time, text string) {
	id, ok := g.texts[text]
	if !ok {
		id = uint32(len(g.tr.RangeTexts))
		g.tr.RangeTexts = append(g.tr.RangeTexts, text)
		g.texts[text] = id
	}
	g.tr.Ranges = append(g.tr.Ranges, nsys.Range{Start: start, End: end, Thread: thread, Text: id, Proc: g.procOf[thread]})
}

// trace sorts everything as nsys.Open does, fills Devices and checks the result.
func (g *tgen) trace() *nsys.Trace {
	g.tb.Helper()
	t := g.tr
	t.Kernels = slices.Clone(t.Kernels)
	t.Memops = slices.Clone(t.Memops)
	t.Graphs = slices.Clone(t.Graphs)
	t.APICalls = slices.Clone(t.APICalls)
	t.Ranges = slices.Clone(t.Ranges)
	t.SortKernels()
	slices.SortStableFunc(t.Memops, func(a, b nsys.Memop) int { return cmp.Compare(a.Start, b.Start) })
	slices.SortStableFunc(t.Graphs, func(a, b nsys.GraphExec) int { return cmp.Compare(a.Start, b.Start) })
	slices.SortStableFunc(t.APICalls, func(a, b nsys.APICall) int { return cmp.Compare(a.Start, b.Start) })
	slices.SortStableFunc(t.Ranges, func(a, b nsys.Range) int { return cmp.Compare(a.Start, b.Start) })
	devs := map[nsys.DeviceID]bool{}
	for _, k := range t.Kernels {
		devs[t.SiteOf(k).Device] = true
	}
	for _, m := range t.Memops {
		devs[m.Device] = true
	}
	for _, gr := range t.Graphs {
		devs[gr.Device] = true
	}
	t.Devices = nil
	for d := range devs {
		t.Devices = append(t.Devices, nsys.Device{ID: d, Name: fmt.Sprintf("GPU %d", d)})
	}
	slices.SortFunc(t.Devices, func(a, b nsys.Device) int { return cmp.Compare(a.ID, b.ID) })
	if err := t.CheckValid(); err != nil {
		g.tb.Fatalf("generated trace is not valid: %v", err)
	}
	return &t
}

// summarize runs Summarize and fails the test on an error.
func mustSummarize(tb testing.TB, t *nsys.Trace, opt Options) *Report {
	tb.Helper()
	rep, err := Summarize(t, opt)
	if err != nil {
		tb.Fatalf("Summarize: %v", err)
	}
	return rep
}

// device returns the report of device d.
func devReport(tb testing.TB, rep *Report, d nsys.DeviceID) *DeviceReport {
	tb.Helper()
	for i := range rep.Devices {
		if rep.Devices[i].Device == d {
			return &rep.Devices[i]
		}
	}
	tb.Fatalf("no report for device %d (have %d devices)", d, len(rep.Devices))
	return nil
}

// starts returns the steps' start times.
func starts(steps []Step) []nsys.Time {
	out := make([]nsys.Time, len(steps))
	for i, s := range steps {
		out[i] = s.Start
	}
	return out
}

// phases returns the steps' phases as text.
func phases(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Phase.String()
	}
	return out
}

func TestTGenNames(t *testing.T) {
	cls := kernelclass.DefaultClassifier()
	for _, c := range kernelCats {
		if got, _ := cls.Classify(catKernel[c]); got != c {
			t.Errorf("Classify(%q) = %v, want %v", catKernel[c], got, c)
		}
	}
}
