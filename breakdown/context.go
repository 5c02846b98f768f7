package breakdown

import (
	"sync/atomic"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// Context classification: the same generic kernel serves several purposes, and its place
// in the step decides which. After steps are found, each step's kernels are read in order:
//
//   - After the step's last GEMM (the lm_head), top-k, sort, softmax, argmax and sampler
//     kernels are sampling.
//   - Before it, a top-k or sort (after an optional softmax or sigmoid) starts MoE routing;
//     the kernels from there to the first GEMM are moe_routing (gating, top-k, sort, counts,
//     scatter), and from that GEMM (or an inductor kernel that indexes the expert weights)
//     on, expert work is moe_expert (per-expert or grouped
//     GEMMs, weight and token gathers, activations, the weighted combine) until the next
//     norm, attention or collective kernel. A top-k followed by attention instead of a
//     GEMM picks tokens for sparse attention (DeepSeek/GLM-5's indexer): attention.
//   - A sampling kernel before the last GEMM is not sampling the step's token: elementwise.
//
// Kernels moved by --nvtx-category keep the category the user gave them.

// contextCats holds the categories context gave kernels (index into Trace.Kernels; 0 for
// none, else category+1), filled by each device's pass on its own kernels.
type contextCats struct {
	cat   []uint8
	roles []kernelclass.Role     // per NameID
	base  []kernelclass.Category // the name's own category, per NameID
	moved atomic.Bool            // devices run their passes at once
}

func newContextCats(t *nsys.Trace, h *hostIndex, base []kernelclass.Category) *contextCats {
	return &contextCats{cat: make([]uint8, len(t.Kernels)), roles: h.roles, base: base}
}

// category returns the category context gave kernel i, if any.
func (c *contextCats) category(i int32) (kernelclass.Category, bool) {
	if c == nil || c.cat[i] == 0 {
		return 0, false
	}
	return kernelclass.Category(c.cat[i] - 1), true
}

// ctxKernel is a kernel of a step as the context pass sees it.
type ctxKernel struct {
	idx   int32
	cat   kernelclass.Category
	role  kernelclass.Role
	fixed bool // moved by an NVTX category rule: it guides the rules but keeps its category
}

// classifyContext runs the context rules over each of the device's steps and windows
// outside steps (over each forward of a speculative round).
func classifyContext(tl *timeline, det *detection, c *contextCats) {
	var buf []ctxKernel
	moved := false
	bi := -1 // the boundary the activity falls in
	fi := 0  // the next forward end (det.forwards) at or after the activity
	flush := func() {
		if bi >= 0 && c.step(buf) { // a window outside steps too: its layers are layers all the same
			moved = true
		}
		buf = buf[:0]
	}
	tl.each(func(a *activity) bool {
		for bi+1 < len(det.bounds) && det.bounds[bi+1].start <= a.start {
			flush()
			bi++
		}
		if bi < 0 || a.src != srcKernel {
			return true
		}
		k := ctxKernel{idx: a.idx, cat: a.cat, role: c.roles[a.name]}
		if tl.over != nil {
			_, k.fixed = tl.over.category(a.proc, a.corr) // the user's NVTX category wins
		}
		buf = append(buf, k)
		// A speculative round is several forwards, each ending with its own lm_head and
		// sampler (the drafts sample the draft tokens): the rules read each forward apart.
		for fi < len(det.forwards) && det.forwards[fi] < a.start {
			fi++
		}
		if det.bounds[bi].drafts > 0 && fi < len(det.forwards) && det.forwards[fi] == a.start {
			flush()
		}
		return true
	})
	flush()
	if moved {
		c.moved.Store(true) // once per device: devices run their passes at once
	}
}

// step applies the rules to one step's kernels, in order, and reports whether it moved any.
func (c *contextCats) step(ks []ctxKernel) (moved bool) {
	lastGEMM := -1
	for i, k := range ks {
		if k.cat == kernelclass.GEMM {
			lastGEMM = i
		}
	}
	set := func(k ctxKernel, cat kernelclass.Category) {
		if k.cat != cat && !k.fixed {
			c.cat[k.idx] = uint8(cat) + 1
			moved = true
		}
	}
	const (
		normal = iota
		gate
		routing
		expert
	)
	state, from := normal, 0 // from: where the pending gate or routing run starts
	for i, k := range ks {
		if i > lastGEMM {
			// XLA's argmax is a reduction fusion after the lm_head.
			if k.role == kernelclass.RoleTopK || k.role == kernelclass.RoleSampler || k.role == kernelclass.RoleGate || k.role == kernelclass.RoleReduce {
				set(k, kernelclass.Sampling)
			}
			continue
		}
		comm := k.cat == kernelclass.AllReduce || k.cat == kernelclass.Collective
		switch state {
		case normal, gate:
			switch {
			case k.role == kernelclass.RoleTopK:
				if state != gate {
					from = i
				}
				state = routing
			case k.role == kernelclass.RoleGate:
				if state != gate {
					from = i
				}
				state = gate
			case state == gate && (k.cat == kernelclass.GEMM || k.cat == kernelclass.Attention || comm || k.role == kernelclass.RoleNorm):
				state = normal // a softmax of attention or of something else: no routing
			}
		case routing:
			// Routing runs to the first expert work: inductor fuses the next norm into
			// routing and expert kernels, so a norm does not end it.
			switch {
			case k.cat == kernelclass.GEMM || k.cat == kernelclass.MoEExpert || k.role == kernelclass.RoleGather:
				for _, r := range ks[from:i] {
					set(r, kernelclass.MoERouting)
				}
				set(k, kernelclass.MoEExpert)
				state = expert
			case k.cat == kernelclass.Attention:
				for _, r := range ks[from:i] {
					if r.role == kernelclass.RoleTopK {
						set(r, kernelclass.Attention) // the sparse-attention indexer picks tokens
					}
				}
				state = normal
			case comm:
				state = normal
			}
		case expert:
			if k.cat == kernelclass.Attention || comm || k.role == kernelclass.RoleNorm {
				state = normal
				continue
			}
			set(k, kernelclass.MoEExpert)
		}
		if state == normal && k.cat == kernelclass.Sampling && c.cat[k.idx] == 0 {
			set(k, kernelclass.Elementwise) // a sampler before the lm_head samples nothing
		}
	}
	return moved
}
