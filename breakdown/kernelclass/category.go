// Package kernelclass says what kind of GPU work a kernel is, from its name alone: the
// categories and their priorities, the built-in rules and rules files, NCCL kernel-name
// decoding and name normalisation. It knows nothing of traces, steps or time.
package kernelclass

import (
	"fmt"
	"strconv"
	"strings"
)

// Category is the kind of GPU work a kernel (or gap) is counted as.
type Category uint8

// The categories. Their identifiers (Category.String) are stable: every output uses them.
const (
	Other         Category = iota // kernels no rule matched
	GEMM                          // dense matrix multiplies (cuBLAS, CUTLASS, GEMV, split-K reduce, FP8/FP4 GEMMs)
	Attention                     // flash/fused attention, paged/MLA/XQA attention and their combine kernels
	MoERouting                    // router top-k and gating, expert alignment, sort/count, permute
	MoEExpert                     // expert computation: fused MoE, grouped expert GEMMs, MoE sum/finalize
	AllReduce                     // NCCL and custom all-reduce kernels
	Collective                    // all other communication: all-gather, reduce-scatter, send/recv, all-to-all
	Elementwise                   // norms, activations, rotary, casts, copies, fills, reductions, KV-cache writes
	Sampling                      // logits processing and token sampling
	Memory                        // memcpy and memset activity (from the memcpy/memset tables, not kernels)
	Idle                          // no GPU activity on the device; not a kernel category
	NumCategories                 // the number of categories; not a category
)

var categoryNames = [NumCategories]string{
	Other:       "other",
	GEMM:        "gemm",
	Attention:   "attention",
	MoERouting:  "moe_routing",
	MoEExpert:   "moe_expert",
	AllReduce:   "allreduce",
	Collective:  "collective",
	Elementwise: "elementwise",
	Sampling:    "sampling",
	Memory:      "memory",
	Idle:        "idle",
}

// String returns the category's stable identifier, such as "gemm" or "moe_routing".
// A value out of range prints as "category(N)".
func (c Category) String() string {
	if c < NumCategories {
		return categoryNames[c]
	}
	return "category(" + strconv.Itoa(int(c)) + ")"
}

// ParseCategory returns the category whose identifier is s (as printed by String;
// letter case and surrounding spaces are ignored).
func ParseCategory(s string) (Category, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for c, name := range categoryNames {
		if t == name {
			return Category(c), nil
		}
	}
	return Other, fmt.Errorf("unknown category %q (want one of %s)", s, categoryList())
}

// categoryList returns the identifiers in Order, comma-separated, for error messages.
func categoryList() string {
	names := make([]string, len(Order))
	for i, c := range Order {
		names[i] = c.String()
	}
	return strings.Join(names, ", ")
}

// Order lists every category in the stable order of tables and charts: compute first, then
// communication, then the rest, with idle last.
var Order = [...]Category{
	GEMM,
	Attention,
	MoERouting,
	MoEExpert,
	AllReduce,
	Collective,
	Elementwise,
	Sampling,
	Memory,
	Other,
	Idle,
}

// categoryPriority decides who owns an instant when kernels of several categories run at the
// same time on one device (on different streams); exclusive time goes to the highest value.
//
// Communication wins: an all-reduce or collective that overlaps compute is counted as
// communication, so that the exposed communication time is visible, and the compute hidden
// under it is still counted once, in busy time. Among compute, the big, characteristic
// kernels (attention, expert, GEMM) win over their small helpers (routing, sampling,
// elementwise); unclassified kernels rank below every known kernel, so that an unknown
// kernel never hides known work; memcpy/memset activity ranks lowest, since a copy that
// overlaps a kernel is not what keeps the device busy. Idle is never running and ranks
// below everything.
//
//	allreduce > collective > attention > moe_expert > gemm > moe_routing > sampling >
//	elementwise > other > memory > idle
var categoryPriority = [NumCategories]int{
	AllReduce:   10,
	Collective:  9,
	Attention:   8,
	MoEExpert:   7,
	GEMM:        6,
	MoERouting:  5,
	Sampling:    4,
	Elementwise: 3,
	Other:       2,
	Memory:      1,
	Idle:        0,
}

// Priority returns the category's rank for exclusive-time accounting when kernels overlap:
// the running kernel with the highest priority owns the instant. The order, highest first,
// is allreduce, collective, attention, moe_expert, gemm, moe_routing, sampling,
// elementwise, other, memory, idle. A value out of range has priority -1.
func (c Category) Priority() int {
	if c < NumCategories {
		return categoryPriority[c]
	}
	return -1
}
