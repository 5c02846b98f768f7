package breakdown

import (
	"testing"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// ctxStep runs the context rules on one step of kernels given as (category, role) and
// returns each kernel's category after them.
func ctxStep(ks []ctxKernel) []kernelclass.Category {
	c := &contextCats{cat: make([]uint8, len(ks))}
	for i := range ks {
		ks[i].idx = int32(i)
	}
	c.step(ks)
	out := make([]kernelclass.Category, len(ks))
	for i, k := range ks {
		out[i] = k.cat
		if cat, ok := c.cat.Category(int32(i)); ok {
			out[i] = cat
		}
	}
	return out
}

const (
	cG = kernelclass.GEMM
	cE = kernelclass.Elementwise
	cA = kernelclass.Attention
	cS = kernelclass.Sampling
	cR = kernelclass.MoERouting
	cX = kernelclass.MoEExpert
)

// olmoeLayer is one layer of transformers' eager OLMoE decode (hf-moe-eager): attention,
// the router GEMM, softmax, top-k, sort, bookkeeping, then per selected expert the gather
// of its gate/up weights, the GEMM, the activation, the gather of its down weights, the
// GEMM, the weighted sum (the combine), then the next layer's residual add, cast and norm.
func olmoeLayer() ([]ctxKernel, []kernelclass.Category) {
	ks := []ctxKernel{
		{cat: cE, role: kernelclass.RoleNorm}, {cat: cG}, {cat: cA}, {cat: cG}, // norm, qkv, attention, o_proj
		{cat: cG},                                                                                                                      // router
		{cat: cE, role: kernelclass.RoleGate}, {cat: cS, role: kernelclass.RoleTopK}, {cat: cS, role: kernelclass.RoleTopK}, {cat: cE}, // softmax, top-k, sort, counts
		{cat: cE, role: kernelclass.RoleWeightGather}, {cat: cG}, {cat: cE}, // gate/up weights, GEMM, SiLU
		{cat: cE, role: kernelclass.RoleWeightGather}, {cat: cG}, // down weights, GEMM
		{cat: cE, role: kernelclass.RoleCombine}, // the weighted sum
		{cat: cE}, {cat: cE},                     // the next layer's residual add and cast
	}
	want := []kernelclass.Category{cE, cG, cA, cG, cG, cR, cR, cR, cR, cX, cX, cX, cX, cX, cX, cE, cE}
	return ks, want
}

// TestContextMoE checks the MoE context rules on step shapes of real captures: expert-weight
// gathers right before the expert GEMM are moe_expert, expert work ends at the combine, and
// a top-k without a router (a draft head's top-p sort in a dense model) is no MoE at all.
func TestContextMoE(t *testing.T) {
	check := func(name string, ks []ctxKernel, want []kernelclass.Category) {
		t.Helper()
		got := ctxStep(ks)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: kernel %d is %v, want %v (all %v)", name, i, got[i], want[i], got)
				return
			}
		}
	}
	var ks []ctxKernel
	var want []kernelclass.Category
	for range 2 {
		l, w := olmoeLayer()
		ks, want = append(ks, l...), append(want, w...)
	}
	tail := []ctxKernel{{cat: cE, role: kernelclass.RoleNorm}, {cat: cG}, {cat: cS, role: kernelclass.RoleSampler}} // final norm, lm_head, argmax
	check("two OLMoE layers", append(ks, tail...), append(want, cE, cG, cS))

	// One MoE layer: routed with two expert GEMMs and a combine, it is MoE on its own.
	l, w := olmoeLayer()
	check("one OLMoE layer", append(l, tail...), append(w, cE, cG, cS))

	// A dense model whose step ends in a draft head after a top-p sort (softmax, sort,
	// cumsum, then the draft's GEMM and attention): no MoE categories.
	dense := []ctxKernel{
		{cat: cE, role: kernelclass.RoleNorm}, {cat: cG}, {cat: cA}, {cat: cG}, {cat: cE, role: kernelclass.RoleNorm}, {cat: cG}, {cat: cG},
		{cat: cG}, {cat: cE, role: kernelclass.RoleGate}, {cat: cS, role: kernelclass.RoleTopK}, {cat: cE}, // lm_head, softmax, top-p sort, cumsum
		{cat: cG}, {cat: cA}, {cat: cG}, // the draft head's qkv, attention, o_proj
		{cat: cG}, {cat: cS, role: kernelclass.RoleSampler}, // the draft's lm_head, sampler
	}
	got := ctxStep(dense)
	for i, c := range got {
		if c == cR || c == cX {
			t.Errorf("dense step with a draft head: kernel %d is %v (all %v)", i, c, got)
		}
	}
}
