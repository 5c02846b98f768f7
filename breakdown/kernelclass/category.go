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
	Other       Category = iota // kernels no rule matched
	GEMM                        // dense matrix multiplies (cuBLAS, CUTLASS, GEMV, split-K reduce, FP8/FP4 GEMMs)
	Attention                   // flash/fused attention, paged/MLA/XQA attention and their combine kernels
	MoERouting                  // router top-k and gating, expert alignment, sort/count, permute
	MoEExpert                   // expert computation: fused MoE, grouped expert GEMMs, MoE sum/finalize
	AllReduce                   // NCCL and custom all-reduce kernels
	Collective                  // all other communication: all-gather, reduce-scatter, send/recv, all-to-all
	Elementwise                 // norms, activations, rotary, casts, copies, fills, reductions, KV-cache writes
	Sampling                    // logits processing and token sampling
	Memory                      // memcpy and memset activity (from the memcpy/memset tables, not kernels)
	// UntracedGraph is a CUDA graph replay traced at graph level (nsys' default
	// --cuda-graph-trace=graph): one opaque row per replay, the kernels inside unnamed.
	// Not a kernel category: no rule or NVTX range can assign it.
	UntracedGraph
	Idle          // no GPU activity on the device; not a kernel category
	NumCategories // the number of categories; not a category
)

// categories holds one row per category, in Order: its identifier and its priority when
// kernels of several categories overlap.
//
// The priority of a category decides who owns an instant when kernels of several
// categories run at the same time on one device (on different streams); exclusive time goes
// to the highest value.
//
// Communication wins: an all-reduce or collective that overlaps compute is counted as
// communication, so that the exposed communication time is visible, and the compute hidden
// under it is still counted once, in busy time. Among compute, the big, characteristic
// kernels (attention, expert, GEMM) win over their small helpers (routing, sampling,
// elementwise); unclassified kernels rank below every known kernel, so that an unknown
// kernel never hides known work. A CUDA graph replay traced at graph level
// (untraced_graph) is real GPU work of unknown kind: it owns its time over memory
// operations and idle, but under every named kernel that overlaps it (on another stream),
// unclassified ones included, since those at least have a name. memcpy/memset activity
// ranks lowest, since a copy that overlaps a kernel is not what keeps the device busy. Idle
// is never running and ranks below everything.
//
//	allreduce > collective > attention > moe_expert > gemm > moe_routing > sampling >
//	elementwise > other > untraced_graph > memory > idle
var categories = [NumCategories]struct {
	cat      Category
	name     string
	priority int
}{
	{GEMM, "gemm", 7},
	{Attention, "attention", 9},
	{MoERouting, "moe_routing", 6},
	{MoEExpert, "moe_expert", 8},
	{AllReduce, "allreduce", 11},
	{Collective, "collective", 10},
	{Elementwise, "elementwise", 4},
	{Sampling, "sampling", 5},
	{Memory, "memory", 1},
	{Other, "other", 3},
	{UntracedGraph, "untraced_graph", 2},
	{Idle, "idle", 0},
}

// categoryNames and categoryPriority index the rows of categories by category.
var categoryNames, categoryPriority = func() (names [NumCategories]string, prio [NumCategories]int) {
	for _, r := range categories {
		names[r.cat], prio[r.cat] = r.name, r.priority
	}
	return names, prio
}()

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

// ParseAssignable returns the category whose identifier is s, as ParseCategory does, for a
// rule or an NVTX mapping: a category that cannot be assigned (see Assignable) is an
// error, and the error of an unknown word lists only the categories that can be.
func ParseAssignable(s string) (Category, error) {
	c, err := ParseCategory(s)
	if err == nil && !c.Assignable() {
		return c, fmt.Errorf("category %s cannot be assigned (want one of %s)", c, assignableList())
	}
	if err != nil {
		return c, fmt.Errorf("unknown category %q (want one of %s)", s, assignableList())
	}
	return c, nil
}

// assignableList returns the identifiers of the categories a rule may assign, in Order.
func assignableList() string {
	var names []string
	for _, c := range Order {
		if c.Assignable() {
			names = append(names, c.String())
		}
	}
	return strings.Join(names, ", ")
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
// communication, then the rest, with idle last (the rows of categories).
var Order = func() (o [NumCategories]Category) {
	for i, r := range categories {
		o[i] = r.cat
	}
	return o
}()

// Assignable reports whether a rule (or an NVTX range) may put a kernel in the category:
// every category but other (no rule matched), untraced_graph (graph replays, not kernels),
// idle, and values out of range.
func (c Category) Assignable() bool {
	return c != Other && c != UntracedGraph && c != Idle && c < NumCategories
}

// Priority returns the category's rank for exclusive-time accounting when kernels overlap:
// the running kernel with the highest priority owns the instant. The order, highest first,
// is allreduce, collective, attention, moe_expert, gemm, moe_routing, sampling,
// elementwise, other, untraced_graph, memory, idle. A value out of range has priority -1.
func (c Category) Priority() int {
	if c < NumCategories {
		return categoryPriority[c]
	}
	return -1
}
