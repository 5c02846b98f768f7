package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// sideNCCL totals the NCCL kernels of a side's runs per op, algorithm, protocol and data
// type, in that order.
func sideNCCL(s Side) []NCCLCount {
	nccl := map[kernelclass.NCCLKernel]*NCCLCount{}
	for _, r := range s.Reports {
		for _, k := range r.Kernels {
			if k.NCCL == nil {
				continue
			}
			nc := nccl[*k.NCCL]
			if nc == nil {
				nc = &NCCLCount{NCCLKernel: *k.NCCL}
				nccl[*k.NCCL] = nc
			}
			nc.Count += k.Count
			nc.Total += k.Total
		}
	}
	var out []NCCLCount
	for _, nc := range nccl {
		out = append(out, *nc)
	}
	slices.SortFunc(out, func(a, b NCCLCount) int {
		return cmp.Compare(a.Op+" "+a.Algo+" "+a.Proto+" "+a.DType, b.Op+" "+b.Algo+" "+b.Proto+" "+b.DType)
	})
	return out
}

// runWarnings returns each warning of the side's runs once, with the runs that gave it.
func runWarnings(s Side) []SideWarning {
	var out []SideWarning
	at := map[string]int{}
	for ri, r := range s.Reports {
		for _, w := range r.Warnings {
			t := w.Error()
			i, ok := at[t]
			if !ok {
				i = len(out)
				at[t] = i
				out = append(out, SideWarning{Text: t})
			}
			if !slices.Contains(out[i].Runs, ri) {
				out[i].Runs = append(out[i].Runs, ri)
			}
		}
	}
	return out
}

func sideWarnings(b, n SideSummary) []error {
	var w []error
	if b.Devices != n.Devices {
		w = append(w, fmt.Errorf("the sides have different device counts: %s %d, %s %d", b.Label, b.Devices, n.Label, n.Devices))
	}
	if !slices.Equal(b.Methods, n.Methods) {
		w = append(w, fmt.Errorf("the sides found steps differently: %s by %s, %s by %s", b.Label, strings.Join(b.Methods, "+"), n.Label, strings.Join(n.Methods, "+")))
	}
	if b.Steps == 0 || n.Steps == 0 {
		w = append(w, fmt.Errorf("a side has no steps of the compared phase (%s: %d, %s: %d)", b.Label, b.Steps, n.Label, n.Steps))
	}
	if math.Abs(b.PhaseShare-n.PhaseShare) > 0.1 {
		w = append(w, fmt.Errorf("the sides have different phase mixes: %s %s; %s %s", b.Label, b.PhaseMix, n.Label, n.PhaseMix))
	}
	return w
}

// kernelChanges lists kernel families (Normalize) present on one side only, and families
// whose exact names differ between the sides (a different tile or template choice).
func kernelChanges(base, new Side) (appeared, vanished, variants []KernelChange) {
	type fam struct {
		cat   kernelclass.Category
		names map[string]bool
		count int
		total time.Duration
	}
	collect := func(s Side) map[string]*fam {
		m := map[string]*fam{}
		for _, r := range s.Reports {
			for _, k := range r.Kernels {
				f := kernelclass.Normalize(k.Name)
				x := m[f]
				if x == nil {
					x = &fam{cat: k.Category, names: map[string]bool{}}
					m[f] = x
				}
				x.names[k.Name] = true
				x.count += k.Count
				x.total += k.Total
			}
		}
		return m
	}
	b, n := collect(base), collect(new)
	keys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for f, x := range b {
		y := n[f]
		switch {
		case y == nil:
			vanished = append(vanished, KernelChange{Family: f, Category: x.cat, BaseNames: keys(x.names), BaseCount: x.count, BaseTotal: x.total})
		case !maps2Equal(x.names, y.names):
			variants = append(variants, KernelChange{Family: f, Category: x.cat, BaseNames: keys(x.names), NewNames: keys(y.names),
				BaseCount: x.count, NewCount: y.count, BaseTotal: x.total, NewTotal: y.total})
		}
	}
	for f, y := range n {
		if b[f] == nil {
			appeared = append(appeared, KernelChange{Family: f, Category: y.cat, NewNames: keys(y.names), NewCount: y.count, NewTotal: y.total})
		}
	}
	byTime := func(a, b KernelChange) int {
		if c := cmp.Compare(b.BaseTotal+b.NewTotal, a.BaseTotal+a.NewTotal); c != 0 {
			return c
		}
		return cmp.Compare(a.Family, b.Family)
	}
	slices.SortFunc(appeared, byTime)
	slices.SortFunc(vanished, byTime)
	slices.SortFunc(variants, byTime)
	return
}

func maps2Equal(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
