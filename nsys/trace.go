package nsys

import (
	"fmt"
	"time"
)

// Time is a timestamp in nanoseconds on the trace's clock (the nsys start/end columns).
type Time int64

// Sub returns t-u as a duration.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

type (
	// DeviceID is the CUDA device ordinal of the process that ran the work (the deviceId
	// column); it matches TARGET_INFO_GPU.cuDevice, not TARGET_INFO_GPU.id.
	DeviceID int16
	// StreamID is a CUDA stream id as exported.
	StreamID int32
	// NameID indexes Trace.Names (kernel names).
	NameID uint32
	// ProcID indexes Trace.Procs.
	ProcID uint16
)

// A Kernel is one CUDA kernel execution (a row of CUPTI_ACTIVITY_KIND_KERNEL). It is 24
// bytes and holds no strings: what repeats from one execution to the next (name,
// stream, device, process) is its Site, stored once per trace.
type Kernel struct {
	Start, End  Time
	Correlation uint32 // links to the launching API call within the same process
	Site        SiteID // indexes Trace.Sites
}

// SiteID indexes Trace.Sites.
type SiteID uint32

// A Site is where kernels run: kernels of one name on one stream of one device, launched
// by one process. A trace has few (about the distinct names times the streams), however
// many kernels it holds.
type Site struct {
	Name   NameID // demangled name
	Stream StreamID
	Device DeviceID
	Proc   ProcID // the process that launched them
}

// Duration returns the kernel's run time.
func (k Kernel) Duration() time.Duration { return k.End.Sub(k.Start) }

// MemKind says what a memory operation did.
type MemKind uint8

// Memory operation kinds. The copy values are those of ENUM_CUDA_MEMCPY_OPER.
const (
	MemcpyUnknown MemKind = 0
	MemcpyHtoD    MemKind = 1
	MemcpyDtoH    MemKind = 2
	MemcpyHtoA    MemKind = 3
	MemcpyAtoH    MemKind = 4
	MemcpyAtoA    MemKind = 5
	MemcpyAtoD    MemKind = 6
	MemcpyDtoA    MemKind = 7
	MemcpyDtoD    MemKind = 8
	MemcpyHtoH    MemKind = 9
	MemcpyPtoP    MemKind = 10
	Memset        MemKind = 255
)

var memKindNames = map[MemKind]string{
	MemcpyUnknown: "memcpy", MemcpyHtoD: "memcpy HtoD", MemcpyDtoH: "memcpy DtoH",
	MemcpyHtoA: "memcpy HtoA", MemcpyAtoH: "memcpy AtoH", MemcpyAtoA: "memcpy AtoA",
	MemcpyAtoD: "memcpy AtoD", MemcpyDtoA: "memcpy DtoA", MemcpyDtoD: "memcpy DtoD",
	MemcpyHtoH: "memcpy HtoH", MemcpyPtoP: "memcpy PtoP", Memset: "memset",
}

func (k MemKind) String() string {
	if s, ok := memKindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("memcpy kind %d", uint8(k))
}

// A Memop is one memcpy or memset on the GPU (CUPTI_ACTIVITY_KIND_MEMCPY / _MEMSET).
type Memop struct {
	Start, End  Time
	Bytes       int64
	Correlation uint32
	Stream      StreamID
	Device      DeviceID
	Kind        MemKind
	Proc        ProcID
}

// A GraphExec is one CUDA graph execution traced at graph level
// (CUPTI_ACTIVITY_KIND_GRAPH_TRACE): the kernels inside it have no rows of their own.
type GraphExec struct {
	Start, End  Time
	Correlation uint32
	Stream      StreamID
	Device      DeviceID
	Proc        ProcID
}

// APIKind groups the CUDA runtime and driver calls the analysis uses.
type APIKind uint8

// API call kinds.
const (
	APIOther       APIKind = iota
	APILaunch              // a kernel launch (cudaLaunchKernel, cuLaunchKernel, ...)
	APIGraphLaunch         // cudaGraphLaunch / cuGraphLaunch
	APISync                // stream, device, event or context synchronize
	APIMemcpy              // cudaMemcpy*, cuMemcpy*
	APIMemset              // cudaMemset*, cuMemset*
	// APIModule loads or prepares device code: cuLibraryLoad*, cuModuleLoad*,
	// cuLibraryGetKernel, cuModuleGetFunction, cuKernelSetAttribute, cuFuncSetAttribute,
	// cuLink* (module loading and run-time compilation; cuDNN and Triton do it per new shape).
	APIModule
	// APIMemMgmt allocates, frees or registers memory: cudaMalloc*, cudaFree*,
	// cudaHostAlloc/Register, cuMemAlloc*, cuMemFree*, cuMemCreate/Map/Unmap, ...
	APIMemMgmt
	// APIMisc is any other CUDA call, kept only when it lasts MiscCallMin or longer.
	APIMisc
)

// MiscCallMin is the duration from which a CUDA call of kind APIMisc is kept: the many
// short bookkeeping calls (cudaGetDevice, cudaEventRecord, cudaStreamIsCapturing) would
// multiply the calls read, and one shorter than this explains no idle gap worth naming.
const MiscCallMin = 10 * time.Microsecond

var apiKindNames = [...]string{"other", "launch", "graph launch", "synchronize", "memcpy", "memset", "module", "memory management", "other CUDA call"}

func (k APIKind) String() string {
	if int(k) < len(apiKindNames) {
		return apiKindNames[k]
	}
	return fmt.Sprintf("api kind %d", uint8(k))
}

// An APICall is one CUDA runtime or driver API call (CUPTI_ACTIVITY_KIND_RUNTIME), restricted
// to the kinds in APIKind. It is 24 bytes: the thread and the function, which repeat from
// one call to the next, are its Caller, stored once per trace.
type APICall struct {
	Start, End  Time
	Correlation uint32
	Caller      CallerID // indexes Trace.Callers
}

// CallerID indexes Trace.Callers.
type CallerID uint32

// A Caller is one CUDA function called from one thread.
type Caller struct {
	Thread int64 // globalTid
	Proc   ProcID
	Name   uint8 // index into Trace.APINames (the 256th and later names share the last slot)
	Kind   APIKind
}

// A Range is an NVTX push/pop or start/end range.
type Range struct {
	Start, End Time   // End is -1 for a range that was never closed
	Thread     int64  // globalTid of the thread that opened it
	Text       uint32 // index into Trace.RangeTexts
	Domain     uint32 // NVTX domain id; 0 is the default domain
	Depth      int16  // nesting depth on its thread (push/pop ranges), 0 = outermost
	Proc       ProcID
}

// Open reports whether the range was never closed.
func (r Range) Open() bool { return r.End < r.Start }

// A Device is a GPU that has activity in the trace.
type Device struct {
	ID     DeviceID
	Name   string // from TARGET_INFO_GPU / TARGET_INFO_CUDA_GPU; empty when the export has none
	Memory int64  // bytes; 0 when unknown
	SMs    int
	// Bandwidth is the memory bandwidth in bytes per second from TARGET_INFO_GPU; 0 when unknown.
	Bandwidth int64
}

// Meta is what the export says about itself.
type Meta struct {
	NsysVersion   string // EXPORT_PRODUCT_VERSION, e.g. "2025.3.1.90"; empty when unknown
	SchemaVersion string // EXPORT_SCHEMA_VERSION, e.g. "3.17.0"; empty when unknown
	MetaTable     string // META_DATA_EXPORT, EXPORT_META_DATA or "" (no metadata table)
}

// A Table is a table of the export and its row count (-1 when not counted).
type Table struct {
	Name string
	Rows int64
}

// A Trace is the in-memory form of one nsys SQLite export.
type Trace struct {
	Path       string
	Meta       Meta
	Tables     []Table     // every table in the file, by name; Rows counted only by Options.CountRows
	Devices    []Device    // devices with GPU activity, by ID
	Kernels    []Kernel    // sorted by Start, then Device, Stream
	Memops     []Memop     // sorted by Start
	Graphs     []GraphExec // graph-level executions, sorted by Start
	APICalls   []APICall   // sorted by Start
	Callers    []Caller    // APICall.Caller indexes this
	APINames   []string    // Caller.Name indexes this; version suffixes (_v7000) removed
	Ranges     []Range     // NVTX ranges, sorted by Start; empty when the export has no NVTX_EVENTS
	RangeTexts []string    // Range.Text indexes this
	Domains    map[uint32]string
	Names      []string // Site.Name indexes this
	Sites      []Site   // Kernel.Site indexes this
	Procs      []int64  // globalPid per ProcID
	Warnings   []error  // non-fatal: dropped rows, missing tables, fallbacks
	// Reads says, for each large table read, whether the direct reader decoded it from
	// the file or SQLite read it, and why; by table name.
	Reads []TableRead
	// Config holds the performance knobs of the environment nsys recorded for the run
	// (TARGET_INFO_SYSTEM_ENV), by name: allow-listed prefixes only (ConfigKnob); empty
	// when the export has no recorded environment.
	Config []EnvVar
	// Capture holds the options nsys recorded the capture with (META_DATA_CAPTURE,
	// CaptureOptions only), in CaptureOptions order; empty when the export has none. A
	// trace merged from several files has its reference file's.
	Capture []EnvVar
	// HasKernelTable is false when the export has no CUPTI_ACTIVITY_KIND_KERNEL table.
	HasKernelTable bool
	// Origin is where the file's clock and processes come from (origin.go).
	Origin Origin
	// Run says how a trace merged from several exports of one run was put together
	// (run.go); nil for a trace read from one file.
	Run *Run

	big       *bigMaps            // memory mapped outside the Go heap, for Release
	siteIdx   map[Site]SiteID     // for AddKernel, built on first use
	callerIdx map[Caller]CallerID // for AddCall, built on first use
}

// Name returns the demangled name of k.
func (t *Trace) Name(k Kernel) string { return t.Names[t.Sites[k.Site].Name] }

// SiteOf returns the site of k: its name, stream, device and process.
func (t *Trace) SiteOf(k Kernel) Site { return t.Sites[k.Site] }

// CallerOf returns the caller of c: its thread, process, function and kind.
func (t *Trace) CallerOf(c APICall) Caller { return t.Callers[c.Caller] }

// AddCall appends c, made by caller w, to t.APICalls, adding w to t.Callers if it is new;
// c.Caller is set. Like AddKernel, it is for building traces by hand.
func (t *Trace) AddCall(c APICall, w Caller) {
	c.Caller = intern(&t.callerIdx, &t.Callers, w)
	t.APICalls = append(t.APICalls, c)
}

// AddKernel appends k, run at site s, to t.Kernels, adding s to t.Sites if it is new;
// k.Site is set. It is for building traces by hand (tests, generators): Open fills
// Kernels and Sites itself, in order.
func (t *Trace) AddKernel(k Kernel, s Site) {
	k.Site = intern(&t.siteIdx, &t.Sites, s)
	t.Kernels = append(t.Kernels, k)
}

// intern returns the index of x in *list, appending it when new. *idx maps values to
// their first index; it is built again when it does not cover the list (one set by hand).
func intern[T comparable, I ~uint32](idx *map[T]I, list *[]T, x T) I {
	if *idx == nil || len(*idx) != len(*list) {
		*idx = make(map[T]I, len(*list))
		for i, y := range *list {
			if _, ok := (*idx)[y]; !ok {
				(*idx)[y] = I(i)
			}
		}
	}
	id, ok := (*idx)[x]
	if !ok {
		id = I(len(*list))
		*list = append(*list, x)
		(*idx)[x] = id
	}
	return id
}

// Span returns the first start and last end of GPU activity (kernels, memory operations,
// graph executions). ok is false when there is none.
func (t *Trace) Span() (start, end Time, ok bool) {
	first := true
	add := func(s, e Time) {
		if first || s < start {
			start = s
		}
		if first || e > end {
			end = e
		}
		first = false
	}
	for _, k := range t.Kernels {
		add(k.Start, k.End)
	}
	for _, m := range t.Memops {
		add(m.Start, m.End)
	}
	for _, g := range t.Graphs {
		add(g.Start, g.End)
	}
	return start, end, !first
}

// HasGPUActivity reports whether the trace holds any kernel, memory operation or graph execution.
func (t *Trace) HasGPUActivity() bool {
	return len(t.Kernels)+len(t.Memops)+len(t.Graphs) > 0
}

// Device returns the device with the given id.
func (t *Trace) Device(id DeviceID) (Device, bool) {
	for _, d := range t.Devices {
		if d.ID == id {
			return d, true
		}
	}
	return Device{}, false
}

// HasTable reports whether the export has the named table.
func (t *Trace) HasTable(name string) bool {
	for _, tb := range t.Tables {
		if tb.Name == name {
			return true
		}
	}
	return false
}
