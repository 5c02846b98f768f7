package nsys

import (
	"fmt"
	"math"
	"regexp"
	"strings"
)

var (
	apiSuffix   = regexp.MustCompile(`(_v\d+|_ptsz|_ptds)+$`)
	apiPatterns = []struct {
		re   *regexp.Regexp
		kind APIKind
	}{
		{regexp.MustCompile(`^cu(da)?GraphLaunch`), APIGraphLaunch},
		{regexp.MustCompile(`^cu(da)?LaunchHostFunc`), APIMisc},
		{regexp.MustCompile(`^cu(da)?Launch`), APILaunch},
		{regexp.MustCompile(`^cu(da)?(Stream|Device|Event|Ctx|Thread)Synchronize`), APISync},
		{regexp.MustCompile(`^cu(da)?Memcpy`), APIMemcpy},
		{regexp.MustCompile(`^cu(da)?Memset`), APIMemset},
		{regexp.MustCompile(`^cu(da)?(Library|Module)(Load|Unload|GetKernel|GetFunction|GetGlobal)|^cu(da)?(Kernel|Func)SetAttribute|^cuLink(Create|Add|Complete)`), APIModule},
		{regexp.MustCompile(`^cu(da)?(Malloc|Free|HostAlloc|HostRegister|HostUnregister)|^cuMem(Alloc|Free|HostAlloc|HostRegister|HostUnregister|Create|Release|Map|Unmap|AddressReserve|AddressFree|SetAccess)`), APIMemMgmt},
		{regexp.MustCompile(`^cu`), APIMisc},
	}
)

// APIKindOf returns the kind of a CUDA runtime or driver API function name.
func APIKindOf(name string) APIKind {
	name = apiSuffix.ReplaceAllString(name, "")
	for _, p := range apiPatterns {
		if p.re.MatchString(name) {
			return p.kind
		}
	}
	return APIOther
}

const runtimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME"

// apiPlan is the runtime-table scan, planned before the lanes start: which names to keep.
type apiPlan struct {
	names  []apiName // by StringIds id
	idList string    // the kept ids, for SQL
}

type apiName struct {
	idx  uint8
	kind APIKind
	ok   bool
}

// planAPI finds the API names the analysis uses (launch, graph launch, synchronize,
// memcpy, memset, module loading, memory management, and other CUDA calls, these kept only
// from MiscCallMin on), so the runtime table's other rows are skipped as cheaply as possible.
func (r *reader) planAPI() error {
	if !r.has(runtimeTable) {
		return nil
	}
	if err := r.require(runtimeTable, "start", "end", "nameId"); err != nil {
		return err
	}
	rows, err := r.db.QueryContext(r.ctx, `SELECT id, value FROM StringIds WHERE value GLOB 'cu*'`)
	if err != nil {
		return fmt.Errorf("reading StringIds: %w", err)
	}
	p := &apiPlan{}
	idxOf := map[string]uint8{}
	var ids []string
	for rows.Next() {
		var id int64
		var v string
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return fmt.Errorf("reading StringIds: %w", err)
		}
		k := APIKindOf(v)
		if k == APIOther {
			continue
		}
		if id < 0 || id >= 1<<24 {
			continue // not a StringIds id this reader can index; such calls are skipped
		}
		base := apiSuffix.ReplaceAllString(v, "")
		idx, ok := idxOf[base]
		if !ok {
			if len(r.t.APINames) == math.MaxUint8 {
				base = "other CUDA calls" // more distinct names than APICall.Name holds
			}
			if idx, ok = idxOf[base]; !ok {
				idx = uint8(len(r.t.APINames))
				idxOf[base] = idx
				r.t.APINames = append(r.t.APINames, base)
			}
		}
		if int(id) >= len(p.names) {
			p.names = append(p.names, make([]apiName, int(id)+1-len(p.names))...)
		}
		p.names[id] = apiName{idx, k, true}
		ids = append(ids, fmt.Sprint(id))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading StringIds: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	p.idList = strings.Join(ids, ",")
	r.shared.api = p
	return nil
}

// planCalls plans the runtime table's read: its launch, synchronize, memcpy and memset
// calls into Trace.APICalls, in time order, in rowid parts like the kernel table.
func (r *reader) planCalls() (*job, error) {
	p := r.shared.api
	if p == nil {
		return nil, nil
	}
	// Filtered in SQL: SQLite then decodes the other columns of kept rows only. Against
	// stepping every row out and filtering in C, the 60 M-row table of the 2-GPU eager
	// bench trace took 8.1-8.6 s instead of 8.8-10.3 s (three runs each, one lane).
	kept := make([]bool, len(p.names))
	for id, n := range p.names {
		kept[id] = n.ok
	}
	// A part keeps only the calls the analysis uses (about a third of the rows of eager
	// traces): joining the parts moves them down. APICall.Caller indexes the part's own
	// callers until finishCalls numbers them.
	scan := func(l *reader, d *callPart) func(v []int64) {
		return func(v []int64) {
			var ni apiName
			if name := v[callName]; name >= 0 && name < int64(len(p.names)) {
				ni = p.names[name]
			}
			start, end := v[callStart], v[callEnd]
			if ni.ok && ni.kind == APIMisc && !miscKept(start, end) {
				return // before the row checks: a damaged short call is not read, as when it was whole
			}
			if !d.drop.keep(start, end, v[callCols]) {
				return
			}
			if !ni.ok {
				return
			}
			d.rows = append(d.rows, APICall{Start: Time(start), End: Time(end), Correlation: uint32(v[callCorrelation]),
				Caller: d.caller(l, v[callThread], ni)})
		}
	}
	return readParts(r, callQuery(kept), "CUDA API", scan, finishCalls), nil
}

// The runtime table's columns, by their place in a row of callQuery; callCols, their
// number, is the place of the row's mask.
const (
	callStart  = colStart
	callEnd    = colEnd
	callThread = iota
	callCorrelation
	callName
	callCols
)

// callQuery is the read of the runtime table's rows whose nameId has kept[nameId].
func callQuery(kept []bool) *tableQuery {
	cols := [callCols]tableCol{
		callStart:       needCol("start"),
		callEnd:         needCol("end"),
		callThread:      optCol("globalTid", 0),
		callCorrelation: optCol("correlationId", 0),
		callName:        needCol("nameId"),
	}
	return &tableQuery{table: runtimeTable, cols: cols[:], in: "nameId", kept: kept}
}

// miscKept reports whether a call of kind APIMisc from start to end is kept: well formed
// (a positive start, under 2^40 ns long) and lasting MiscCallMin or longer.
func miscKept(start, end int64) bool {
	d := end - start
	return start > 0 && d >= MiscCallMin.Nanoseconds() && d <= 1<<40
}

// finishCalls numbers the callers of the parts' calls and sorts the calls.
func finishCalls(r *reader, calls []APICall, cp []callPart) error {
	// Number the callers in order of first appearance, whichever part met them.
	ids := newInterner[Caller, CallerID](&r.t.Callers)
	renumber(calls, cp, func(c *APICall) *CallerID { return &c.Caller },
		func(d *callPart) int { return len(d.callers) },
		func(d *callPart, local CallerID) CallerID { return ids.id(d.callers[local]) })
	sortCalls(calls, r.t.Callers)
	r.t.APICalls = calls
	return nil
}

// A callPart is the kept calls of one part of the runtime table, with their callers.
type callPart struct {
	partOut[APICall]
	callers []Caller // APICall.Caller indexes this until finish
	// head[name] is 1 + the first caller of that function (0: none), next chains the
	// others: a function is called from one to a few threads.
	head [256]int32
	next []int32
	wide map[callerKey]CallerID // callers past a chain of maxChain
}

// caller returns the part's index of the caller (tid, function), adding it when new.
func (d *callPart) caller(l *reader, tid int64, ni apiName) CallerID {
	p := &d.head[ni.idx]
	n := 0
	for i := *p; i != 0; i = d.next[i-1] {
		if d.callers[i-1].Thread == tid {
			return CallerID(i - 1)
		}
		p = &d.next[i-1]
		n++
	}
	if n >= maxChain { // a function called from many threads: the rest through the map
		if d.wide == nil {
			d.wide = map[callerKey]CallerID{}
		}
		k := callerKey{tid, ni.idx}
		id, ok := d.wide[k]
		if !ok {
			id = CallerID(len(d.callers))
			d.wide[k] = id
			d.callers = append(d.callers, Caller{Thread: tid, Proc: l.proc(tid), Name: ni.idx, Kind: ni.kind})
			d.next = append(d.next, 0)
		}
		return id
	}
	d.callers = append(d.callers, Caller{Thread: tid, Proc: l.proc(tid), Name: ni.idx, Kind: ni.kind})
	d.next = append(d.next, 0)
	*p = int32(len(d.callers))
	return CallerID(len(d.callers) - 1)
}

type callerKey struct {
	tid  int64
	name uint8
}

// dropSharedCorrelations drops the CUDA API calls whose correlation id was given to an
// earlier call of the same thread that had ended when the call started. CUPTI gives every
// call its own id (a runtime call and the driver call it makes inside it share one, and
// overlap); two calls one after the other with one id is a file that links every kernel
// of that id to two calls (a file with every id equal made 801 steps of a 13-step
// capture). Every call of a shared id is dropped, so kernels of it link to none; the
// warning says how many. O(n): one pass in time order with the last call of each thread.
func (r *reader) dropSharedCorrelations() {
	calls := r.t.APICalls
	if len(calls) < 2 {
		return
	}
	threadOf := make([]int32, len(r.t.Callers)) // caller -> thread number
	threads := map[int64]int32{}
	for i, c := range r.t.Callers {
		n, ok := threads[c.Thread]
		if !ok {
			n = int32(len(threads))
			threads[c.Thread] = n
		}
		threadOf[i] = n
	}
	type last struct {
		corr uint32
		end  Time
		ok   bool
	}
	lasts := make([]last, len(threads))
	type key struct {
		proc ProcID
		corr uint32
	}
	var shared map[key]bool
	for _, c := range calls {
		l := &lasts[threadOf[c.Caller]]
		if l.ok && l.corr == c.Correlation && c.Start >= l.end {
			if shared == nil {
				shared = map[key]bool{}
			}
			shared[key{r.t.Callers[c.Caller].Proc, c.Correlation}] = true
		}
		if !l.ok || c.Correlation != l.corr || c.End > l.end {
			*l = last{c.Correlation, c.End, true}
		}
	}
	if shared == nil {
		return
	}
	out := calls[:0]
	for _, c := range calls {
		if !shared[key{r.t.Callers[c.Caller].Proc, c.Correlation}] {
			out = append(out, c)
		}
	}
	n := len(calls) - len(out)
	r.t.APICalls = out
	r.warnf("dropped %d of %d CUDA API rows of %s (%.3g%%): %d sharing %d correlation ids with an earlier call of their thread (the kernels they launched are not linked to a call)",
		n, len(calls), runtimeTable, 100*float64(n)/float64(len(calls)), n, len(shared))
}
