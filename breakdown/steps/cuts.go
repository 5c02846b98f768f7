package steps

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// The host signals of the serving loop: what every loop does once (or a few times) per
// iteration cuts a device's timeline into segments, which the step finder (stepfind.go)
// groups into steps and the model's forwards (forwards.go) split.

// Why a segment starts.
const (
	cutSync  uint8 = 1 << iota // first activity after a host synchronisation
	cutGraph                   // first activity of a CUDA graph launch
	cutH2D                     // a host-to-device copy
	// cutForward: a forward's end inside a segment that holds several forwards with no host
	// signal between them (eager warm-up iterations before a graph loop): the segment is cut
	// after the sampler that ends each (splitDeep).
	cutForward
	cutReadBack // with cutSync: the sync was a device-to-host read-back
)

// cutSignals names each cut signal, in the order the step methods' help lists them.
var cutSignals = []struct {
	cut  uint8
	help string // what the signal is, for the help of the methods that use it
}{
	{cutGraph, "CUDA graph launches"},
	{cutSync, "read-backs and synchronize calls"},
	{cutH2D, "input copies"},
}

// A segment is a run of the device's activities between two cuts.
type segment struct {
	start, end nsys.Time // first activity's start; latest end
	// sig hashes the multiset of the activities' categories and kinds: streams may
	// interleave them in any order, and a kernel's variant may change from one step to
	// the next (vectorized or unrolled, as a tensor's alignment changes).
	sig     uint64
	kernels int32
	// graphs counts the graph work among kernels: replays traced at graph level, and
	// kernels a graph launched (node-level traces).
	graphs  int32
	cut     uint8 // why the segment starts; 0 for the first
	sampler bool  // it runs a sampler (argmax, multinomial, ...): a step ends soon after
	// fwd: a forward of the model ends in it: a sampler after a GEMM (the lm_head), with no
	// GEMM or attention kernel after it before the segment ends (forwards.go).
	fwd   bool
	fwdAt nsys.Time // the start of the sampler that ends the forward
	attn  int32     // attention kernels: a forward's depth (its layers)
	// kstart is the first kernel's start (0 without kernels); leadEnd the latest end of the
	// activities before it (copies: a read-back that ends the previous iteration; 0 when
	// the segment starts with a kernel).
	kstart, leadEnd nsys.Time
	// cands are the places where a forward may end inside the segment: the first kernel
	// after a sampler that follows a GEMM, with the segment's counts before it (splitDeep
	// cuts there). At most maxCands; more are not kept.
	cands   []fwdCand
	pending nsys.Time // a sampler after a GEMM ran at this time, no other kernel since; 0: none
}

// A fwdCand is a place in a segment where a forward may end (segment.cands).
type fwdCand struct {
	at, sampler   nsys.Time // the next kernel's start; the sampler's
	kernels, attn int32     // the segment's kernels and attention kernels before at
	sig           uint64    // the segment's sig before at
	end           nsys.Time // the latest end before at
}

// maxCands bounds the forward-end candidates kept per segment.
const maxCands = 4096

// add accounts activity a (role: its name's, inGraph: launched by a graph) to the segment,
// and follows the forward ends in fw.
func (s *segment) add(a *Activity, role kernelclass.Role, inGraph bool, fw *forwardEnds) {
	before := s.end
	s.end = max(s.end, a.End)
	if s.kernels == 0 {
		if a.Src == SrcMemop {
			s.leadEnd = max(s.leadEnd, a.End)
		} else {
			s.kstart = a.Start
		}
	}
	switch a.Src {
	case SrcKernel:
		samples := role == kernelclass.RoleSampler || role == kernelclass.RoleReduce
		if s.pending != 0 && !samples {
			if len(s.cands) < maxCands {
				s.cands = append(s.cands, fwdCand{at: a.Start, sampler: s.pending, kernels: s.kernels, attn: s.attn, sig: s.sig, end: before})
			}
			s.pending = 0
		}
		if samples && fw.armed {
			s.pending = a.Start
		}
		s.kernels++
		s.sampler = s.sampler || role == kernelclass.RoleSampler
		fw.add(a, role)
		if a.Cat == kernelclass.Attention {
			s.attn++
		}
		if inGraph {
			s.graphs++
			// A replayed kernel differs from the same kernel launched eagerly: warm-up
			// steps before the first replay are not steps of the graph loop.
			s.sig += Mix64(uint64(a.Cat) + 1 + 1<<42)
		} else {
			s.sig += Mix64(uint64(a.Cat) + 1)
		}
	case SrcGraph:
		// A replay traced at graph level hides its kernels: it runs the forward's GEMMs
		// as far as the trace shows (a sampler after it ends a forward).
		s.kernels++
		s.graphs++
		s.sig += Mix64(1 << 40)
		fw.armed, fw.pending = true, false
	case SrcMemop:
		s.sig += Mix64(1<<41 + uint64(a.MemKind))
	}
}

// syncAfter returns the launch keys of the first launch-like call of each process after
// each of its synchronize calls ended, and the number of such synchronisations.
func syncAfter(t *nsys.Trace, tl *Timeline) (map[uint64]bool, int) {
	after := map[uint64]bool{}
	pending := map[nsys.ProcID]nsys.Time{}
	n := 0
	for i := range t.APICalls {
		c := &t.APICalls[i]
		w := &t.Callers[c.Caller]
		if !tl.HasProc(w.Proc) {
			continue
		}
		if w.Kind == nsys.APISync {
			if e, ok := pending[w.Proc]; !ok || c.End > e {
				pending[w.Proc] = c.End
			}
			continue
		}
		if e, ok := pending[w.Proc]; ok && isLaunchLike(w.Kind) && c.Start >= e {
			after[actKey(w.Proc, c.Correlation)] = true
			delete(pending, w.Proc)
			n++
		}
	}
	return after, n
}

// cutCounts counts the signals that cut a device's timeline, for the method's detail.
type cutCounts struct{ sync, d2h, graph, h2d int }

// segmentTimeline cuts the device's timeline at the signals in use and returns the segments.
func segmentTimeline(t *nsys.Trace, h *HostIndex, tl *Timeline, use uint8) ([]segment, cutCounts) {
	var after map[uint64]bool
	var cc cutCounts
	if use&cutSync != 0 {
		after, cc.sync = syncAfter(t, tl)
	}
	side := func(*Activity) bool { return false }
	if use&cutH2D != 0 {
		side = sideCopies(t, tl)
	}
	var segs []segment
	var d2hEnd nsys.Time
	d2h := false
	seenGraph := map[uint64]bool{}
	var lastGraphKey uint64
	keyOf, inGraph := uint64(0), false // the last key looked up, and whether a graph launch has it
	var fw forwardEnds
	tl.Each(func(a *Activity) bool {
		var why uint8
		k := a.Key()
		if a.Src == SrcKernel && k != keyOf {
			keyOf, inGraph = k, h.Graphs[k]
		}
		aside := side(a)
		readBack := d2h && a.Start >= d2hEnd && !aside
		if use&cutSync != 0 && !aside && (after[k] || readBack) {
			why |= cutSync
			if readBack {
				why |= cutReadBack
			}
			delete(after, k) // a graph's kernels share the key: the first one cuts
		}
		if use&cutGraph != 0 && a.Src != SrcMemop && k != lastGraphKey && h.Graphs[k] {
			lastGraphKey = k
			if !seenGraph[k] {
				seenGraph[k] = true
				why |= cutGraph
				cc.graph++
			}
		}
		if use&cutH2D != 0 && a.Src == SrcMemop && a.MemKind == nsys.MemcpyHtoD && !aside {
			why |= cutH2D
			cc.h2d++
		}
		if len(segs) == 0 || why != 0 {
			if why&cutSync != 0 && !aside {
				d2h = false
			}
			if len(segs) > 0 {
				last := &segs[len(segs)-1]
				last.fwdAt = fw.close()
				last.fwd = last.fwdAt != 0
			}
			segs = append(segs, segment{start: a.Start, end: a.End, cut: why})
		}
		role := kernelclass.RoleNone
		if a.Src == SrcKernel {
			role = h.Roles[a.Name] // only kernels have names
		}
		segs[len(segs)-1].add(a, role, inGraph, &fw)
		if a.Src == SrcMemop && use&cutSync != 0 && a.MemKind == nsys.MemcpyDtoH {
			d2h, d2hEnd = true, a.End
			cc.d2h++
		}
		return true
	})
	if len(segs) > 0 {
		last := &segs[len(segs)-1]
		last.fwdAt = fw.close()
		last.fwd = last.fwdAt != 0
	}
	return segs, cc
}

// sideCopies returns whether a kernel or memory operation of the device runs on a side
// stream: not the loop's stream (the one of most kernels and graph executions), when the
// loop's stream copies inputs of its own. A transfer stream's work (a disaggregated decode
// worker's KV imports beside the loop: copies, then per-layer cache writes) starts no
// iteration: neither its host-to-device copies nor its first activity after a read-back
// cut, nor does it as the first launch after a synchronize. Where every input copy runs on a copy stream, nothing is on a side stream.
func sideCopies(t *nsys.Trace, tl *Timeline) func(*Activity) bool {
	type sk struct {
		proc   nsys.ProcID
		stream nsys.StreamID
	}
	count := map[sk]int{}
	for site, n := range SiteCounts(t, tl) {
		if n > 0 {
			st := &t.Sites[site]
			count[sk{st.Proc, st.Stream}] += n
		}
	}
	for i := range t.Graphs {
		if g := &t.Graphs[i]; tl.Owns(g.Device, g.Proc) {
			count[sk{g.Proc, g.Stream}]++
		}
	}
	var main sk
	best := 0
	for k, c := range count {
		if c > best || (c == best && (k.proc < main.proc || (k.proc == main.proc && k.stream < main.stream))) {
			main, best = k, c
		}
	}
	own := false
	for i := range t.Memops {
		m := &t.Memops[i]
		if tl.Owns(m.Device, m.Proc) && m.Kind == nsys.MemcpyHtoD && m.Proc == main.proc && m.Stream == main.stream {
			own = true
			break
		}
	}
	if best == 0 || !own {
		return func(*Activity) bool { return false }
	}
	return func(a *Activity) bool {
		var at sk
		switch a.Src {
		case SrcMemop:
			m := &t.Memops[a.Idx]
			at = sk{m.Proc, m.Stream}
		case SrcKernel:
			st := &t.Sites[t.Kernels[a.Idx].Site]
			at = sk{st.Proc, st.Stream}
		default:
			return false
		}
		return at != main
	}
}

// mergeEmpty joins each run of segments without kernels (an input copy, a copy after a
// sync) to the segment with kernels that follows: a copy belongs to the step it feeds.
// Trailing ones stay.
func mergeEmpty(segs []segment) []segment {
	out := segs[:0]
	pending := -1 // index in out of the first empty segment waiting for kernels
	for _, s := range segs {
		if pending >= 0 {
			p := &out[pending]
			p.leadEnd = max(p.end, s.leadEnd)
			if s.kernels > 0 {
				p.kstart = s.kstart
			}
			for _, c := range s.cands {
				c.sig += p.sig
				c.kernels += p.kernels
				c.attn += p.attn
				p.cands = append(p.cands, c)
			}
			p.end, p.sig, p.kernels, p.cut = max(p.end, s.end), p.sig+s.sig, p.kernels+s.kernels, p.cut|s.cut
			p.graphs += s.graphs
			p.sampler = p.sampler || s.sampler
			if s.fwd {
				p.fwd, p.fwdAt = true, s.fwdAt
			}
			p.attn += s.attn
			if s.kernels > 0 {
				pending = -1
			}
			continue
		}
		out = append(out, s)
		if s.kernels == 0 && len(out) > 1 {
			pending = len(out) - 1
		}
	}
	return out
}

// describe says what cut the timeline, and how many cuts make a step.
func (cc cutCounts) describe(k int) string {
	var why []string
	if cc.graph > 0 {
		why = append(why, fmt.Sprintf("%d CUDA graph launches", cc.graph))
	}
	if cc.d2h > 0 {
		why = append(why, fmt.Sprintf("%d device-to-host copies", cc.d2h))
	}
	if cc.sync > 0 {
		why = append(why, fmt.Sprintf("%d synchronize calls", cc.sync))
	}
	if cc.h2d > 0 {
		why = append(why, fmt.Sprintf("%d host-to-device copies", cc.h2d))
	}
	s := strings.Join(why, ", ")
	if k > 1 {
		s += fmt.Sprintf("; a step spans %d of the segments they cut", k)
	}
	return s
}

// Mix64 scrambles x (a 64-bit finaliser): signatures add it over activities.
func Mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// SiteCounts returns the number of kernels of each site (by SiteID) of the timeline (its
// device, and its process where the device is shared: Timeline.Owns), counted in pieces of
// the kernels at once (one per core Go may use) from 2^20 kernels on.
func SiteCounts(t *nsys.Trace, tl *Timeline) []int {
	owned := make([]bool, len(t.Sites))
	for i := range t.Sites {
		owned[i] = tl.Owns(t.Sites[i].Device, t.Sites[i].Proc)
	}
	n := 1
	if len(t.Kernels) >= 1<<20 {
		n = max(1, runtime.GOMAXPROCS(0))
	}
	counts := make([][]int, n)
	var wg sync.WaitGroup
	for p := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := make([]int, len(t.Sites))
			for _, k := range t.Kernels[len(t.Kernels)*p/n : len(t.Kernels)*(p+1)/n] {
				if owned[k.Site] {
					c[k.Site]++
				}
			}
			counts[p] = c
		}()
	}
	wg.Wait()
	for _, c := range counts[1:] {
		for i, v := range c {
			counts[0][i] += v
		}
	}
	return counts[0]
}
