package breakdown

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// KernelStats classifies the trace's kernels (each distinct name once, NVTX category rules
// applied per launch) and totals them per name and category over the whole trace, by total
// time, descending.
func KernelStats(t *nsys.Trace, opt Options) []KernelStat {
	cls := opt.Classifier
	if cls == nil {
		cls = kernelclass.DefaultClassifier()
	}
	cats, rules := classifyNames(t, cls)
	return kernelStats(t, cats, rules, nvtxOverrides(t, opt.NVTXCategories))
}

// kernelStats totals kernels per distinct name over the whole trace; a name whose launches
// NVTX category rules moved gets a row per category.
func kernelStats(t *nsys.Trace, cats []kernelclass.Category, rules []string, over steps.KernelCats) []KernelStat {
	type key struct {
		name nsys.NameID
		cat  kernelclass.Category
	}
	type acc struct {
		n     int
		total time.Duration
	}
	per := map[key]*acc{}
	if over == nil {
		// Without NVTX rules a name has one category: totals per site in a slice (a map
		// lookup per kernel costs several times more), then per name, then one map entry
		// per distinct name.
		bySite := make([]acc, len(t.Sites))
		for i := range t.Kernels {
			k := &t.Kernels[i]
			bySite[k.Site].n++
			bySite[k.Site].total += k.Duration()
		}
		byName := make([]acc, len(t.Names))
		for s, a := range bySite {
			n := t.Sites[s].Name
			byName[n].n += a.n
			byName[n].total += a.total
		}
		for id := range byName {
			if byName[id].n > 0 {
				per[key{nsys.NameID(id), cats[id]}] = &byName[id]
			}
		}
	} else {
		for i := range t.Kernels {
			k := &t.Kernels[i]
			st := &t.Sites[k.Site]
			kk := key{st.Name, cats[st.Name]}
			if c, ok := over.Category(int32(i)); ok {
				kk.cat = c
			}
			a := per[kk]
			if a == nil {
				a = &acc{}
				per[kk] = a
			}
			a.n++
			a.total += k.Duration()
		}
	}
	out := make([]KernelStat, 0, len(per))
	for kk, a := range per {
		ks := KernelStat{Name: t.Names[kk.name], Category: kk.cat, Rule: rules[kk.name], Count: a.n, Total: a.total}
		if kk.cat != cats[kk.name] {
			ks.Rule = "nvtx-category"
		}
		if nk, ok := kernelclass.DecodeNCCL(ks.Name); ok {
			ks.NCCL = &nk
		}
		out = append(out, ks)
	}
	sortKernelStats(out)
	return out
}

// sortKernelStats orders the kernel table by total time, descending, then name and category.
func sortKernelStats(out []KernelStat) {
	slices.SortFunc(out, func(a, b KernelStat) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.Category, b.Category)
	})
}

// contextKernelStats moves the kernels whose category context decided (contextCats) to rows
// of their own, (name, category) with a rule "context: ..." that says which context, and
// drops rows left empty.
func contextKernelStats(t *nsys.Trace, stats []KernelStat, c *contextCats) []KernelStat {
	if c == nil || !c.moved.Load() {
		return stats
	}
	type key struct {
		name string
		cat  kernelclass.Category
	}
	at := map[key]int{}
	for i, ks := range stats {
		at[key{ks.Name, ks.Category}] = i
	}
	for _, m := range movedTotals(t, c) {
		site := &t.Sites[m.site]
		name := t.Names[site.Name]
		from, ok := at[key{name, c.base[site.Name]}]
		if !ok {
			continue
		}
		stats[from].Count -= m.n
		stats[from].Total -= m.total
		to, ok := at[key{name, m.cat}]
		if !ok {
			stats = append(stats, KernelStat{Name: name, Category: m.cat, Rule: contextRule(m.cat), NCCL: stats[from].NCCL})
			to = len(stats) - 1
			at[key{name, m.cat}] = to
		}
		stats[to].Count += m.n
		stats[to].Total += m.total
	}
	out := stats[:0]
	for _, ks := range stats {
		if ks.Count > 0 {
			out = append(out, ks)
		}
	}
	sortKernelStats(out)
	return out
}

// A movedTotal sums the kernels of one site that context moved to one category.
type movedTotal struct {
	site  int
	cat   kernelclass.Category
	n     int
	total time.Duration
}

// movedTotals sums the moved kernels per site and category, in (site, category) order: one
// pass over the context bytes into a slice (a map lookup per kernel costs far more), or a
// map when the file holds so many sites that the slice would outweigh the kernels.
func movedTotals(t *nsys.Trace, c *contextCats) []movedTotal {
	const nc = int(kernelclass.NumCategories)
	var dense []movedTotal
	sparse := map[int]*movedTotal{}
	if len(t.Sites)*nc <= len(t.Kernels)/8+1<<16 {
		dense = make([]movedTotal, len(t.Sites)*nc)
	}
	for i, b := range c.cat {
		if b == 0 || c.over != nil && c.over[i] != 0 {
			continue
		}
		k := &t.Kernels[i]
		j := int(k.Site)*nc + int(b-1)
		var m *movedTotal
		if dense != nil {
			m = &dense[j]
		} else if m = sparse[j]; m == nil {
			m = &movedTotal{}
			sparse[j] = m
		}
		m.n++
		m.total += k.Duration()
	}
	var out []movedTotal
	add := func(j int, m *movedTotal) {
		if m.n > 0 {
			out = append(out, movedTotal{site: j / nc, cat: kernelclass.Category(j % nc), n: m.n, total: m.total})
		}
	}
	for j := range dense {
		add(j, &dense[j])
	}
	for _, j := range slices.Sorted(maps.Keys(sparse)) {
		add(j, sparse[j])
	}
	return out
}

// unclassifiedWarning warns when more than 5% of kernel time is in unclassified kernels.
func unclassifiedWarning(ks []KernelStat) error {
	var other, total time.Duration
	for _, k := range ks {
		total += k.Total
		if k.Category == kernelclass.Other {
			other += k.Total
		}
	}
	if total > 0 && float64(other)/float64(total) > 0.05 {
		return fmt.Errorf("%.1f%% of kernel time is in unclassified kernels (other); 'stepstat classify' lists them", 100*float64(other)/float64(total))
	}
	return nil
}

// contextRule names the context rule that gives a kernel category c (context.go).
func contextRule(c kernelclass.Category) string {
	switch c {
	case kernelclass.Sampling:
		return "context: after the step's last GEMM (lm_head)"
	case kernelclass.MoERouting:
		return "context: MoE router (from top-k to the first expert GEMM)"
	case kernelclass.MoEExpert:
		return "context: MoE expert work (after routing, to the next norm)"
	case kernelclass.Attention:
		return "context: top-k before attention (sparse-attention indexer)"
	case kernelclass.Elementwise:
		return "context: a sampler before the lm_head"
	}
	return "context"
}
