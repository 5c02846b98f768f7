package nsys

import (
	"cmp"
	"runtime"
	"slices"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// The orders of the trace's tables. Each is a total order, start first (so that the
// unstable sorts give the same result every time), its ties broken by the columns of
// the row's identity; start is compared on its own first, as it decides nearly every
// comparison.

// kernelOrder orders kernels by start, then device, stream, end, process, correlation
// and name.
func kernelOrder(sites []Site) func(a, b Kernel) int {
	return func(a, b Kernel) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		sa, sb := &sites[a.Site], &sites[b.Site]
		return cmp.Or(cmp.Compare(sa.Device, sb.Device), cmp.Compare(sa.Stream, sb.Stream), cmp.Compare(a.End, b.End),
			cmp.Compare(sa.Proc, sb.Proc), cmp.Compare(a.Correlation, b.Correlation), cmp.Compare(sa.Name, sb.Name))
	}
}

func sortKernels(ks []Kernel, sites []Site) { sortUnlessSorted(ks, kernelOrder(sites)) }

// SortKernels puts t.Kernels in the order Open gives them (start, then device, stream,
// end, process, correlation and name), for traces built by hand with AddKernel.
func (t *Trace) SortKernels() { sortKernels(t.Kernels, t.Sites) }

// apiOrder orders API calls by start, then thread, end, correlation and function.
func apiOrder(callers []Caller) func(a, b APICall) int {
	return func(a, b APICall) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		ca, cb := &callers[a.Caller], &callers[b.Caller]
		return cmp.Or(cmp.Compare(ca.Thread, cb.Thread), cmp.Compare(a.End, b.End),
			cmp.Compare(a.Correlation, b.Correlation), cmp.Compare(ca.Name, cb.Name))
	}
}

func sortCalls(cs []APICall, callers []Caller) { sortUnlessSorted(cs, apiOrder(callers)) }

// memopOrder orders memory operations by start, then device, stream, end, process,
// correlation and kind.
func memopOrder(a, b Memop) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.Device, b.Device), cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.End, b.End),
		cmp.Compare(a.Proc, b.Proc), cmp.Compare(a.Correlation, b.Correlation), cmp.Compare(a.Kind, b.Kind))
}

// rangeOrder orders ranges by start; ranges that start together nest by length: the
// longer (or never closed) one first.
func rangeOrder(a, b Range) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	return cmp.Compare(rangeEnd(b), rangeEnd(a))
}

// sortUnlessSorted sorts s by cmp; tables come sorted most of the time, and checking costs
// a fraction of sorting (checked in pieces at once: large tables are tens of millions of
// rows).
func sortUnlessSorted[T any](s []T, cmp func(a, b T) int) {
	if !isSorted(s, cmp) {
		slices.SortFunc(s, cmp)
	}
}

// isSorted is slices.IsSortedFunc, in pieces at once from 2^20 elements on.
func isSorted[T any](s []T, cmp func(a, b T) int) bool {
	const piece = 1 << 19
	if len(s) < 2*piece {
		return slices.IsSortedFunc(s, cmp)
	}
	var g errgroup.Group
	g.SetLimit(max(1, runtime.GOMAXPROCS(0)))
	var unsorted atomic.Bool
	for lo := 0; lo < len(s); lo += piece {
		hi := min(lo+piece+1, len(s)) // one past: the pieces overlap by an element
		g.Go(func() error {
			if !unsorted.Load() && !slices.IsSortedFunc(s[lo:hi], cmp) {
				unsorted.Store(true)
			}
			return nil
		})
	}
	g.Wait()
	return !unsorted.Load()
}
