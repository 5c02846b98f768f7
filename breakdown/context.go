package breakdown

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// Context classification: the same generic kernel serves several purposes, and its place
// in the step decides which. After steps are found, each step's kernels are read in order:
//
//   - After the step's last GEMM (the lm_head), top-k, sort, softmax, argmax and sampler
//     kernels are sampling.
//   - Before it, a top-k or sort (after an optional softmax or sigmoid) may start MoE
//     routing; the kernels from there to the first GEMM are moe_routing (gating, top-k,
//     sort, counts, scatter), but the gathers directly before that GEMM (vectorized_gather,
//     index_select: the selected experts' weights or tokens) are expert work; from that GEMM
//     (or an inductor kernel that indexes the expert weights) on, expert work is moe_expert
//     (per-expert or grouped GEMMs, activations) up to the last combine (index_add_,
//     scatter_add, the weighted sum, moe_sum/finalize), or a shared expert's last GEMM
//     after it, before the next norm, attention or collective kernel: the next layer's
//     residual add, norm and RoPE after the combine are not experts. A run is routing only
//     with a router: a softmax or sigmoid before the top-k or between it and the GEMM, and
//     such runs at least twice in the step (once per MoE layer), or once with two expert
//     GEMMs or more and a combine after it (a model of one MoE layer); a lone top-k/sort (a
//     draft head's top-p sort in a dense model, whose next GEMM is followed by attention)
//     is not. A top-k followed by attention instead of a GEMM picks tokens for sparse
//     attention (DeepSeek/GLM-5's indexer): attention.
//   - A sampling kernel before the last GEMM is not sampling the step's token: elementwise.
//
// Kernels moved by an NVTX category mapping (Options) keep the category the user gave them.

func isNorm(r kernelclass.Role) bool {
	return r == kernelclass.RoleNorm || r == kernelclass.RoleNormCombine
}

// contextCats holds the categories context gave kernels (index into Trace.Kernels), filled
// by each device's pass on its own kernels, on top of the NVTX category rules' (over): the
// timeline reads both from cat.
type contextCats struct {
	cat   steps.KernelCats
	over  steps.KernelCats       // the NVTX category rules' (nil for none): context leaves them
	roles []kernelclass.Role     // per NameID
	base  []kernelclass.Category // the name's own category, per NameID
	moved atomic.Bool            // devices run their passes at once
}

func newContextCats(t *nsys.Trace, h *steps.HostIndex, base []kernelclass.Category, over steps.KernelCats) *contextCats {
	cat := make(steps.KernelCats, len(t.Kernels))
	copy(cat, over)
	return &contextCats{cat: cat, over: over, roles: h.Roles, base: base}
}

// ctxKernel is a kernel of a step as the context pass sees it.
type ctxKernel struct {
	idx   int32
	cat   kernelclass.Category
	role  kernelclass.Role
	fixed bool // moved by an NVTX category rule: it guides the rules but keeps its category
}

// classifyContext runs the context rules over each of the device's steps and windows
// outside steps (over each forward of a speculative round). Long timelines are read in
// pieces of steps at once (split: where, nil for splitSteps); each step is read whole
// by one piece, so the result is the same whatever the pieces.
func classifyContext(tl *steps.Timeline, det *steps.Detection, c *contextCats, split func(steps, kernels int) []int) {
	if split == nil {
		split = splitSteps
	}
	firsts := pieceFirsts(split(len(det.Bounds), len(tl.Trace.Kernels)), len(det.Bounds))
	if !slices.IsSorted(det.Forwards) || !slices.IsSortedFunc(det.Bounds, func(a, b steps.Boundary) int { return cmp.Compare(a.Start, b.Start) }) {
		firsts = firsts[:1]
	}
	var moved atomic.Bool
	inPieces(firsts, len(det.Bounds), func(_, lo, hi int) {
		if classifySteps(tl, det, c, lo, hi) {
			moved.Store(true)
		}
	})
	if moved.Load() {
		c.moved.Store(true) // once per device: devices run their passes at once
	}
}

// classifySteps is classifyContext for the steps [lo, hi) of det; it reports whether it
// moved any kernel.
func classifySteps(tl *steps.Timeline, det *steps.Detection, c *contextCats, lo, hi int) (moved bool) {
	var buf []ctxKernel
	var scan moeScan
	bi := -1 // the boundary the activity falls in
	fi := 0  // the next forward end (det.forwards) at or after the activity
	from, until := nsys.Time(math.MinInt64), nsys.Time(math.MaxInt64)
	if lo > 0 {
		bi, from = lo-1, det.Bounds[lo].Start
		fi = sort.Search(len(det.Forwards), func(i int) bool { return det.Forwards[i] >= from })
	}
	if hi < len(det.Bounds) {
		until = det.Bounds[hi].Start
	}
	flush := func() {
		if bi >= 0 && c.stepWith(buf, &scan) { // a window outside steps too: its layers are layers all the same
			moved = true
		}
		buf = buf[:0]
	}
	tl.EachFrom(from, func(a *steps.Activity) bool {
		if a.Start >= until {
			return false
		}
		for bi+1 < len(det.Bounds) && det.Bounds[bi+1].Start <= a.Start {
			flush()
			bi++
		}
		if bi < 0 || a.Src != steps.SrcKernel {
			return true
		}
		k := ctxKernel{idx: a.Idx, cat: a.Cat, role: c.roles[a.Name]}
		_, k.fixed = c.over.Category(a.Idx) // the user's NVTX category wins
		buf = append(buf, k)
		// A speculative round is several forwards, each ending with its own lm_head and
		// sampler (the drafts sample the draft tokens): the rules read each forward apart.
		for fi < len(det.Forwards) && det.Forwards[fi] < a.Start {
			fi++
		}
		if det.Bounds[bi].Drafts > 0 && fi < len(det.Forwards) && det.Forwards[fi] == a.Start {
			flush()
		}
		return true
	})
	flush()
	return moved
}

// step applies the rules to one step's kernels, in order, and reports whether it moved any.
func (c *contextCats) step(ks []ctxKernel) (moved bool) { return c.stepWith(ks, &moeScan{}) }

// stepWith is step with m's buffers reused (one scan a step: the buffers grew anew for
// every step, most of the context pass's allocations).
func (c *contextCats) stepWith(ks []ctxKernel, m *moeScan) (moved bool) {
	*m = moeScan{c: c, ks: ks, lastGEMM: -1, moe: m.moe[:0], pending: m.pending[:0], region: m.region[:0]}
	for i, k := range ks {
		if k.cat == kernelclass.GEMM {
			m.lastGEMM = i
		}
	}
	for i := range ks {
		m.next(i)
	}
	if m.state == scanExpert {
		m.endExpert(len(ks))
	}
	if m.regions >= 2 {
		m.moe = append(m.moe, m.pending...)
	}
	for _, x := range m.moe {
		m.set(x.k, x.cat)
	}
	return m.moved
}

// The states of moeScan.
const (
	scanNormal = iota
	scanGate
	scanRouting
	scanExpert
	scanUngated // a top-k or sort without a router, past a GEMM: an indexer if attention follows
)

// A moeSet is a category that a step's scan gives a kernel once the step is read.
type moeSet struct {
	k   ctxKernel
	cat kernelclass.Category
}

// moeScan reads one step's kernels in order (contextCats.step). MoE categories wait
// until the step is read: they apply only when the step has two routed layers or more,
// or a region whole on its own.
type moeScan struct {
	c        *contextCats
	ks       []ctxKernel
	lastGEMM int
	moved    bool
	moe      []moeSet // settings kept
	pending  []moeSet // regions kept only if the step has two or more
	regions  int      // routed regions
	region   []moeSet // the current region's settings, kept in moe only when whole or not alone
	state    int
	from     int  // where the pending gate or routing run starts
	gated    bool // a softmax or sigmoid belongs to the pending routing run
	// the current expert region: its start, its last combine and GEMM, its GEMM count
	regionStart, lastCombine, regionGEMM, gemms int
}

func (m *moeScan) set(k ctxKernel, cat kernelclass.Category) {
	if k.cat != cat && !k.fixed {
		m.c.cat[k.idx] = uint8(cat) + 1
		m.moved = true
	}
}

// endExpert closes the region [regionStart, end): expert work up to its last combine.
func (m *moeScan) endExpert(end int) {
	ks := m.ks
	last := end - 1
	if m.lastCombine >= 0 {
		last = max(m.lastCombine, m.regionGEMM) // a shared expert after the routed combine is expert work too
	}
	for _, r := range ks[m.regionStart : last+1] {
		m.region = append(m.region, moeSet{r, kernelclass.MoEExpert})
	}
	if m.gemms >= 2 && (m.lastCombine >= 0 || (end < len(ks) && ks[end].role == kernelclass.RoleNormCombine)) {
		m.moe = append(m.moe, m.region...) // whole on its own: two expert GEMMs or more and a combine
	} else {
		m.pending = append(m.pending, m.region...)
	}
	m.region = m.region[:0]
}

// next reads kernel i.
func (m *moeScan) next(i int) {
	k := m.ks[i]
	if i > m.lastGEMM {
		if m.state == scanExpert {
			m.endExpert(i)
			m.state = scanNormal
		}
		// XLA's argmax is a reduction fusion after the lm_head.
		if k.role == kernelclass.RoleTopK || k.role == kernelclass.RoleSampler || k.role == kernelclass.RoleGate || k.role == kernelclass.RoleReduce {
			m.set(k, kernelclass.Sampling)
		}
		return
	}
	comm := k.cat == kernelclass.AllReduce || k.cat == kernelclass.Collective
	switch m.state {
	case scanNormal, scanGate:
		m.beforeRouting(i, k, comm)
	case scanRouting:
		m.routing(i, k, comm)
	case scanUngated:
		switch {
		case k.cat == kernelclass.Attention:
			m.indexer(i)
		case comm || isNorm(k.role):
			m.state = scanNormal
		}
	case scanExpert:
		if k.cat == kernelclass.Attention || comm || isNorm(k.role) {
			m.endExpert(i)
			m.state = scanNormal
			break
		}
		if k.role == kernelclass.RoleCombine {
			m.lastCombine = i
		}
		if k.cat == kernelclass.GEMM || k.cat == kernelclass.MoEExpert {
			m.gemms++
			m.regionGEMM = i
		}
	}
	if m.state == scanNormal && k.cat == kernelclass.Sampling && m.c.cat[k.idx] == 0 {
		m.set(k, kernelclass.Elementwise) // a sampler before the lm_head samples nothing
	}
}

// beforeRouting reads kernel i outside routing and expert work: a gate or a top-k starts
// a routing run.
func (m *moeScan) beforeRouting(i int, k ctxKernel, comm bool) {
	switch {
	case k.role == kernelclass.RoleTopK:
		if m.state != scanGate {
			m.from = i
		}
		m.gated = m.state == scanGate
		m.state = scanRouting
	case k.role == kernelclass.RoleGate:
		if m.state != scanGate {
			m.from = i
		}
		m.state = scanGate
	case m.state == scanGate && (k.cat == kernelclass.GEMM || k.cat == kernelclass.Attention || comm || isNorm(k.role)):
		m.state = scanNormal // a softmax of attention or of something else: no routing
	}
}

// routing reads kernel i of a routing run, which runs to the first expert work: inductor
// fuses the next norm into routing and expert kernels, so a norm does not end it.
func (m *moeScan) routing(i int, k ctxKernel, comm bool) {
	switch {
	case k.role == kernelclass.RoleGate:
		m.gated = true // top-k then softmax (GPT-OSS, Mixtral's renormalisation)
	case k.cat == kernelclass.GEMM || k.cat == kernelclass.MoEExpert || k.role == kernelclass.RoleGather:
		if !m.gated {
			m.state = scanUngated // a top-k or sort without a router: not MoE routing
			break
		}
		start := i // the gathers directly before the GEMM are expert work
		for start > m.from && m.ks[start-1].role == kernelclass.RoleWeightGather {
			start--
		}
		m.region = m.region[:0]
		for _, r := range m.ks[m.from:start] {
			m.region = append(m.region, moeSet{r, kernelclass.MoERouting})
		}
		m.regions++
		m.state, m.regionStart, m.lastCombine, m.regionGEMM, m.gemms = scanExpert, start, -1, -1, 0
		if k.cat == kernelclass.GEMM || k.cat == kernelclass.MoEExpert {
			m.gemms, m.regionGEMM = 1, i
		}
	case k.cat == kernelclass.Attention:
		m.indexer(i)
	case comm:
		m.state = scanNormal
	}
}

// indexer handles attention after a top-k run that was not MoE routing: the top-k kernels
// since from are the sparse-attention indexer picking tokens.
func (m *moeScan) indexer(i int) {
	for _, r := range m.ks[m.from:i] {
		if r.role == kernelclass.RoleTopK {
			m.set(r, kernelclass.Attention)
		}
	}
	m.state = scanNormal
}
