package nsys

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// This file puts several exports of one run (one file per node or per process) into one
// Trace on one clock: every file's devices become devices of the merged trace, numbered in
// file order, and every file's timestamps are shifted by the file's offset. Refining the
// offsets from the work itself (collectives that end together on every rank) is package
// breakdown's, which matches the collectives; ShiftFiles applies what it finds.

// A Run says how a merged trace (MergeRun) was put together.
type Run struct {
	// Files are the exports, in the order given (device numbering follows it).
	Files []RunFile
	// Devices has one entry per device of the merged trace, indexed by its DeviceID.
	Devices []RunDevice
	// Reference indexes Files: the file whose clock is the run's clock (the earliest
	// session start); its offset is 0.
	Reference int
	procFile  []int // per ProcID of the merged trace, the file it came from
}

// A RunFile is one export of a run.
type RunFile struct {
	Path   string
	Meta   Meta
	Origin Origin
	// WallOffset is what the session starts say: the file's start minus the reference's
	// (0 for a file without a recorded start, or for the reference).
	WallOffset time.Duration
	// Offset is what was added to the file's timestamps to put them on the run's clock:
	// WallOffset, then the refinements of MergeOptions.Refine (Refined) and ShiftFiles.
	Offset  time.Duration
	Refined bool
	// Devices are the merged trace's DeviceIDs of the file's devices.
	Devices []DeviceID
	// Start and End bound the file's GPU activity on the run's clock (at merge time).
	Start, End Time
}

// A RunDevice says where a device of the merged trace comes from.
type RunDevice struct {
	File   int      // index into Run.Files
	Device DeviceID // the CUDA device ordinal in its file
	PID    int64    // the process that ran most of its kernels (0 when unknown)
}

// FileOf returns the index into r.Files of the file a process came from.
func (r *Run) FileOf(p ProcID) int { return r.procFile[p] }

// Label names device d of the run: file, process and device, and RANK/LOCAL_RANK where
// the file's environment has them, e.g. "rank1.sqlite pid 1974 cuda 0 RANK=1".
func (r *Run) Label(d DeviceID) string {
	if int(d) < 0 || int(d) >= len(r.Devices) {
		return fmt.Sprintf("device %d", d)
	}
	rd := r.Devices[d]
	f := &r.Files[rd.File]
	s := filepath.Base(f.Path)
	if rd.PID != 0 {
		s += fmt.Sprintf(" pid %d", rd.PID)
	}
	s += fmt.Sprintf(" cuda %d", rd.Device)
	if f.Origin.Rank >= 0 {
		s += fmt.Sprintf(" RANK=%d", f.Origin.Rank)
	}
	if f.Origin.LocalRank >= 0 {
		s += fmt.Sprintf(" LOCAL_RANK=%d", f.Origin.LocalRank)
	}
	return s
}

// A NotOneRunError says that an export cannot be one run with the others.
type NotOneRunError struct {
	Path  string // the file refused
	Other string // the file it was compared with
	Why   string
}

func (e *NotOneRunError) Error() string {
	return fmt.Sprintf("%s: not one run with %s: %s", oneLine(e.Path), oneLine(e.Other), e.Why)
}

// ErrNotOneRun is matched by every NotOneRunError (errors.Is).
var ErrNotOneRun = errors.New("not one run")

// Is makes errors.Is(err, ErrNotOneRun) hold.
func (e *NotOneRunError) Is(target error) bool { return target == ErrNotOneRun }

// MergeOptions control MergeRun.
type MergeOptions struct {
	// Refine, when set, is given the traces (not yet merged), the index of the reference,
	// and each file's offset by the session starts; it returns each file's offset to use
	// (the same slice, changed where it knows better), and for each file whether it refined
	// it. Package breakdown's CollectiveOffsets matches the collectives' ends across the
	// files: what a collective is belongs to the classification, not to the reader.
	Refine func(traces []*Trace, ref int, offsets []time.Duration) ([]time.Duration, []bool)
}

// MergeRun puts the traces of one run (one export per node or per process, as read by
// Open) into one trace named path, on the clock of the file with the earliest session
// start: each file's timestamps are shifted by its session start minus that file's. Each
// file's devices become devices of the merged trace, numbered from 0 in the order of
// traces, then by device id. It refuses traces that are not one run (a NotOneRunError
// naming the file): a different program, or GPU activity that does not overlap the
// reference file's in time. The traces given are emptied (Release) as their rows are
// copied: at most one file's largest table is held twice.
func MergeRun(path string, traces []*Trace, opt MergeOptions) (*Trace, error) {
	if len(traces) == 0 {
		return nil, errors.New("no traces to merge")
	}
	run := &Run{Files: make([]RunFile, len(traces))}
	for i, t := range traces {
		run.Files[i] = RunFile{Path: t.Path, Meta: t.Meta, Origin: t.Origin}
		if t.Origin.HasStart && (!traces[run.Reference].Origin.HasStart || t.Origin.SessionStart < traces[run.Reference].Origin.SessionStart) {
			run.Reference = i
		}
	}
	ref := traces[run.Reference]
	for i, t := range traces {
		if ref.Origin.HasStart && t.Origin.HasStart {
			run.Files[i].WallOffset = time.Duration(t.Origin.SessionStart - ref.Origin.SessionStart)
		}
		run.Files[i].Offset = run.Files[i].WallOffset
		if i != run.Reference && t.Origin.Program != "" && ref.Origin.Program != "" && t.Origin.Program != ref.Origin.Program {
			return nil, &NotOneRunError{Path: t.Path, Other: ref.Path,
				Why: fmt.Sprintf("it runs %q, %s runs %q", t.Origin.Program, filepath.Base(ref.Path), ref.Origin.Program)}
		}
	}
	for i, t := range traces {
		s, e, _ := t.Span()
		run.Files[i].Start, run.Files[i].End = s+Time(run.Files[i].Offset), e+Time(run.Files[i].Offset)
	}
	if opt.Refine != nil {
		offs := make([]time.Duration, len(traces))
		for i := range run.Files {
			offs[i] = run.Files[i].Offset
		}
		offs, refined := opt.Refine(traces, run.Reference, offs)
		for i := range run.Files {
			if refined[i] {
				run.Files[i].Start += Time(offs[i] - run.Files[i].Offset)
				run.Files[i].End += Time(offs[i] - run.Files[i].Offset)
				run.Files[i].Offset = offs[i]
				run.Files[i].Refined = true
			}
		}
	}
	rf := &run.Files[run.Reference]
	for i, t := range traces {
		f := &run.Files[i]
		if i == run.Reference || !t.Origin.HasStart || !ref.Origin.HasStart {
			continue
		}
		if f.End < rf.Start || f.Start > rf.End {
			return nil, &NotOneRunError{Path: t.Path, Other: ref.Path, Why: fmt.Sprintf(
				"their GPU work does not overlap in time (by the session starts: %s-%s UTC, %s %s-%s UTC)",
				utcClock(t.Origin.SessionStart, f.Start-Time(f.Offset)), utcClock(t.Origin.SessionStart, f.End-Time(f.Offset)),
				filepath.Base(ref.Path), utcClock(ref.Origin.SessionStart, rf.Start), utcClock(ref.Origin.SessionStart, rf.End))}
		}
	}
	m := &Trace{Path: path, Meta: ref.Meta, Domains: map[uint32]string{}, big: &bigMaps{}, Run: run}
	m.Origin = ref.Origin
	m.Capture = ref.Capture
	mergeMeta(m, traces)
	mg := newMerger(m, traces)
	mg.kernels()
	mg.calls()
	mg.rest()
	for _, t := range traces {
		t.Release()
	}
	return m, nil
}

// utcClock formats the UTC time of timestamp t of a file whose timestamp 0 is start.
func utcClock(start int64, t Time) string {
	return time.Unix(0, start+int64(t)).UTC().Format("2006-01-02 15:04:05.000")
}

// mergeMeta fills the merged trace's tables, warnings, reads and configuration.
func mergeMeta(m *Trace, traces []*Trace) {
	tables := map[string]int{}
	config := map[string]string{}
	for _, t := range traces {
		base := filepath.Base(t.Path)
		m.HasKernelTable = m.HasKernelTable || t.HasKernelTable
		for _, tb := range t.Tables {
			j, ok := tables[tb.Name]
			if !ok {
				tables[tb.Name] = len(m.Tables)
				m.Tables = append(m.Tables, tb)
				continue
			}
			if m.Tables[j].Rows < 0 || tb.Rows < 0 {
				m.Tables[j].Rows = -1
			} else {
				m.Tables[j].Rows += tb.Rows
			}
		}
		for _, w := range t.Warnings {
			m.Warnings = append(m.Warnings, fmt.Errorf("%s: %w", base, w))
		}
		for _, rd := range t.Reads {
			rd.Table = base + ": " + rd.Table
			m.Reads = append(m.Reads, rd)
		}
		for _, e := range t.Config {
			v, ok := config[e.Name]
			switch {
			case !ok:
				config[e.Name] = e.Value
				m.Config = append(m.Config, e)
			case v != e.Value:
				m.Warnings = append(m.Warnings, fmt.Errorf("run configuration: %s is %q in %s, %q in %s (the first is shown)",
					e.Name, ClipValue(e.Value), base, ClipValue(v), filepath.Base(traces[0].Path)))
			}
		}
	}
	slices.SortFunc(m.Tables, func(a, b Table) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(m.Config, func(a, b EnvVar) int { return strings.Compare(a.Name, b.Name) })
}

// A merger copies the rows of the files into the merged trace, with each file's ids
// (names, sites, processes, devices, callers, texts, domains, threads) renumbered.
type merger struct {
	m       *Trace
	traces  []*Trace
	off     []Time
	names   [][]NameID
	sites   []SiteID // per file, the first merged site
	procs   []ProcID // per file, the first merged process
	devs    []map[DeviceID]DeviceID
	callers []CallerID        // per file, the first merged caller
	thread  []map[int64]int64 // per file, its thread ids' merged ids (nil: its own, unless ids collide)
	// The numberings of the merged names and API names.
	nameIdx *interner[string, NameID]
	apiIdx  *interner[string, uint8]
	owner   map[int64]int // merged thread id -> the file using it
	fresh   int64         // the last renumbered thread id (negative; 0: none yet)
}

// threadOf returns the merged id of thread th of file i.
func (g *merger) threadOf(i int, th int64) int64 {
	if m := g.thread[i]; m != nil {
		return m[th]
	}
	return th
}

func newMerger(m *Trace, traces []*Trace) *merger {
	g := &merger{m: m, traces: traces, nameIdx: newInterner[string, NameID](&m.Names),
		apiIdx: newInterner[string, uint8](&m.APINames), owner: map[int64]int{}}
	g.apiIdx.limit = 256 // the 256th and later names share the last slot, as in Open
	run := m.Run
	for i, t := range traces {
		g.off = append(g.off, Time(run.Files[i].Offset))
		ids := make([]NameID, len(t.Names))
		for j, n := range t.Names {
			ids[j] = g.nameIdx.id(n)
		}
		g.names = append(g.names, ids)
		g.procs = append(g.procs, ProcID(len(m.Procs)))
		for range t.Procs {
			run.procFile = append(run.procFile, i)
		}
		m.Procs = append(m.Procs, t.Procs...)
		g.sites = append(g.sites, SiteID(len(m.Sites)))
		g.addDevices(i, t)
		for _, s := range t.Sites {
			s.Name = ids[s.Name]
			s.Device = g.dev(i, s.Device)
			s.Proc += g.procs[i]
			m.Sites = append(m.Sites, s)
		}
		g.thread = append(g.thread, g.threadMap(i, t))
		g.callers = append(g.callers, CallerID(len(m.Callers)))
		for _, w := range t.Callers {
			name := "?"
			if int(w.Name) < len(t.APINames) {
				name = t.APINames[w.Name]
			}
			w.Name = g.apiIdx.id(name)
			w.Proc += g.procs[i]
			w.Thread = g.threadOf(i, w.Thread)
			m.Callers = append(m.Callers, w)
		}
	}
	return g
}

// addDevices numbers the devices of file i, t, in the merged trace, by their ids.
func (g *merger) addDevices(i int, t *Trace) {
	m, run := g.m, g.m.Run
	dm := map[DeviceID]DeviceID{}
	pids := mainPIDs(t)
	devs := slices.Clone(t.Devices)
	slices.SortFunc(devs, func(a, b Device) int { return cmp.Compare(a.ID, b.ID) })
	for _, d := range devs {
		id := DeviceID(len(m.Devices))
		dm[d.ID] = id
		nd := d
		nd.ID = id
		m.Devices = append(m.Devices, nd)
		run.Devices = append(run.Devices, RunDevice{File: i, Device: d.ID, PID: pids[d.ID]})
		run.Files[i].Devices = append(run.Files[i].Devices, id)
	}
	g.devs = append(g.devs, dm)
}

// threadMap returns the merged ids of the thread ids of file i, t: nil (its own), unless
// one of its threads is an earlier file's. Threads are globalTids (process and thread
// ids); files from different hosts can hold the same one. A file that holds one of an
// earlier file's has all its threads renumbered: ids below every globalTid (negative), in
// thread order, so any number of files stays apart (or'ing the file's index into the top
// bits wrapped at file 256).
func (g *merger) threadMap(i int, t *Trace) map[int64]int64 {
	seen := map[int64]bool{}
	for _, w := range t.Callers {
		seen[w.Thread] = true
	}
	for _, r := range t.Ranges {
		seen[r.Thread] = true
	}
	var remap map[int64]int64
	for th := range seen {
		if _, ok := g.owner[th]; ok {
			remap = map[int64]int64{}
			break
		}
	}
	for _, th := range slices.Sorted(maps.Keys(seen)) {
		if remap != nil {
			g.fresh--
			remap[th] = g.fresh
			th = g.fresh
		}
		g.owner[th] = i
	}
	return remap
}

// dev returns the merged id of device d of file i.
func (g *merger) dev(i int, d DeviceID) DeviceID {
	if id, ok := g.devs[i][d]; ok {
		return id
	}
	// A device with rows but not in Devices (not expected: Devices lists every device
	// with activity): give it an id of its own.
	id := DeviceID(len(g.m.Devices))
	g.devs[i][d] = id
	g.m.Devices = append(g.m.Devices, Device{ID: id})
	g.m.Run.Devices = append(g.m.Run.Devices, RunDevice{File: i, Device: d})
	g.m.Run.Files[i].Devices = append(g.m.Run.Files[i].Devices, id)
	return id
}

// mainPIDs returns, per device of t, the pid of the process that launched most of its
// kernels (one pass over the kernels).
func mainPIDs(t *Trace) map[DeviceID]int64 {
	type key struct {
		d DeviceID
		p ProcID
	}
	count := map[key]int{}
	for _, k := range t.Kernels {
		s := &t.Sites[k.Site]
		count[key{s.Device, s.Proc}]++
	}
	best := map[DeviceID]key{}
	for k, c := range count {
		b, ok := best[k.d]
		if !ok || c > count[b] || c == count[b] && k.p < b.p {
			best[k.d] = k
		}
	}
	out := map[DeviceID]int64{}
	for d, k := range best {
		if int(k.p) < len(t.Procs) {
			out[d] = (t.Procs[k.p] >> 24) & 0xFFFFFF
		}
	}
	return out
}

// kernels copies every file's kernels into one array and sorts it; each file's array is
// given back as soon as it is copied.
func (g *merger) kernels() {
	ks := mergeRows(g, func(t *Trace) *[]Kernel { return &t.Kernels }, func(k *Kernel, i int) {
		k.Start += g.off[i]
		k.End += g.off[i]
		k.Site += g.sites[i]
	})
	sortKernels(ks, g.m.Sites)
	g.m.Kernels = ks
}

// mergeRows copies one table of every file (table picks it) into one array of the merged
// trace, each row moved onto the run's clock and ids by shift (its file's index), and
// gives each file's table back as soon as it is copied.
func mergeRows[T any](g *merger, table func(*Trace) *[]T, shift func(*T, int)) []T {
	n := 0
	for _, t := range g.traces {
		n += len(*table(t))
	}
	out := bigSlice[T](g.m, n)[:0]
	freed := 0 // heap bytes freed since the last scavenge
	for i, t := range g.traces {
		for _, r := range *table(t) {
			shift(&r, i)
			out = append(out, r)
		}
		if freed += giveBack(t, table(t)); freed >= scavengeEvery {
			debug.FreeOSMemory()
			freed = 0
		}
	}
	if freed > 0 {
		debug.FreeOSMemory()
	}
	return out
}

// scavengeEvery is how many heap bytes of copied tables mergeRows frees before it gives
// them back to the system (a collection and a scavenge): after every file's table, the
// collections would cost files x heap, quadratic in the files of a run.
const scavengeEvery = 64 << 20

// giveBack gives the memory of *s, one of t's tables just copied, back and empties *s:
// its pages to the system when it is mapped (bigSlice, bigMin bytes and more), else to
// the Go heap, returning the bytes freed there, for the caller to give back to the system
// through a collection and a scavenge once they add up (mergeRows): without it, every
// file's tables under bigMin stay resident beside the merged ones, since the heap gives
// freed memory back to the system only slowly.
func giveBack[T any](t *Trace, s *[]T) (heapFreed int) {
	var zero T
	if len(*s) == 0 {
		return 0
	}
	// bigSlice decided by the size allocated, which a table read in parts and filtered
	// keeps as its capacity.
	size := cap(*s) * int(unsafe.Sizeof(zero))
	mapped := t.big != nil && size >= bigMin
	if mapped {
		releaseSlots(t, *s)
	}
	*s = nil
	if mapped {
		return 0
	}
	return max(size, 1)
}

// calls copies every file's API calls into one array and sorts it, as kernels does.
func (g *merger) calls() {
	cs := mergeRows(g, func(t *Trace) *[]APICall { return &t.APICalls }, func(c *APICall, i int) {
		c.Start += g.off[i]
		c.End += g.off[i]
		c.Caller += g.callers[i]
	})
	sortCalls(cs, g.m.Callers)
	g.m.APICalls = cs
}

// rest copies the memory operations, graph executions and NVTX ranges.
func (g *merger) rest() {
	m := g.m
	textIdx := newInterner[string, uint32](&m.RangeTexts)
	domIdx := map[string]uint32{}
	for i, t := range g.traces {
		off := g.off[i]
		for _, x := range t.Memops {
			x.Start += off
			x.End += off
			x.Device = g.dev(i, x.Device)
			x.Proc += g.procs[i]
			m.Memops = append(m.Memops, x)
		}
		for _, x := range t.Graphs {
			x.Start += off
			x.End += off
			x.Device = g.dev(i, x.Device)
			x.Proc += g.procs[i]
			m.Graphs = append(m.Graphs, x)
		}
		texts := make([]uint32, len(t.RangeTexts))
		for j, s := range t.RangeTexts {
			texts[j] = textIdx.id(s)
		}
		doms := map[uint32]uint32{0: 0}
		if name, ok := t.Domains[0]; ok {
			m.Domains[0] = name
		}
		ids := make([]uint32, 0, len(t.Domains))
		for id := range t.Domains {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if id == 0 {
				continue
			}
			name := t.Domains[id]
			nid, ok := domIdx[name]
			if !ok {
				nid = uint32(len(domIdx) + 1)
				domIdx[name] = nid
				m.Domains[nid] = name
			}
			doms[id] = nid
		}
		for _, r := range t.Ranges {
			if !r.Open() {
				r.End += off
			}
			r.Start += off
			if int(r.Text) < len(texts) {
				r.Text = texts[r.Text]
			}
			if d, ok := doms[r.Domain]; ok {
				r.Domain = d
			}
			r.Proc += g.procs[i]
			r.Thread = g.threadOf(i, r.Thread)
			m.Ranges = append(m.Ranges, r)
		}
	}
	m.sortRest()
}

// sortRest puts the memory operations, graph executions and ranges in Open's orders.
func (t *Trace) sortRest() {
	sortUnlessSorted(t.Memops, memopOrder)
	slices.SortStableFunc(t.Graphs, func(a, b GraphExec) int { return cmp.Compare(a.Start, b.Start) })
	slices.SortStableFunc(t.Ranges, rangeOrder)
}

// ShiftFiles adds delta[i] to every timestamp of file i of a merged trace (Run.Files) and
// to its Offset, and sorts the rows again: how a refined clock offset is applied.
func (t *Trace) ShiftFiles(delta []time.Duration) {
	run := t.Run
	if run == nil {
		return
	}
	for i := range run.Files {
		run.Files[i].Offset += delta[i]
		run.Files[i].Start += Time(delta[i])
		run.Files[i].End += Time(delta[i])
	}
	d := func(p ProcID) Time { return Time(delta[run.procFile[p]]) }
	for i := range t.Kernels {
		k := &t.Kernels[i]
		s := d(t.Sites[k.Site].Proc)
		k.Start += s
		k.End += s
	}
	for i := range t.APICalls {
		c := &t.APICalls[i]
		s := d(t.Callers[c.Caller].Proc)
		c.Start += s
		c.End += s
	}
	for i := range t.Memops {
		s := d(t.Memops[i].Proc)
		t.Memops[i].Start += s
		t.Memops[i].End += s
	}
	for i := range t.Graphs {
		s := d(t.Graphs[i].Proc)
		t.Graphs[i].Start += s
		t.Graphs[i].End += s
	}
	for i := range t.Ranges {
		r := &t.Ranges[i]
		s := d(r.Proc)
		open := r.Open()
		r.Start += s
		if !open {
			r.End += s
		}
	}
	sortKernels(t.Kernels, t.Sites)
	sortCalls(t.APICalls, t.Callers)
	t.sortRest()
}
