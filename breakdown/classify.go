package breakdown

import (
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// nvtxOverrides returns the category the Options.NVTXCategories rules give each kernel
// launched inside their ranges (the first matching rule wins); nil when there are no rules.
func nvtxOverrides(t *nsys.Trace, rules []NVTXCategory) steps.KernelCats {
	if len(rules) == 0 {
		return nil
	}
	var los []*steps.LaunchOwners // one per rule, in rule order
	for _, rl := range rules {
		matches := make([]bool, len(t.RangeTexts))
		for j, s := range t.RangeTexts {
			matches[j] = rl.Match.MatchString(s)
		}
		var rs []steps.OwnerRange
		for _, r := range t.Ranges {
			if !matches[r.Text] {
				continue
			}
			end := r.End
			if r.Open() {
				end = 1<<63 - 1
			}
			rs = append(rs, steps.OwnerRange{Thread: r.Thread, Start: r.Start, End: end})
		}
		rs = steps.MergeOwnerRanges(rs)
		los = append(los, steps.NewLaunchOwners(t, rs, func(w *nsys.Caller) bool {
			return w.Kind == nsys.APILaunch || w.Kind == nsys.APIGraphLaunch
		}))
	}
	over := make(steps.KernelCats, len(t.Kernels))
	for i := range t.Kernels {
		k := &t.Kernels[i]
		proc := t.Sites[k.Site].Proc
		for r, lo := range los {
			if _, ok := lo.Owner(proc, k.Correlation); ok {
				over[i] = uint8(rules[r].Category) + 1
				break
			}
		}
	}
	return over
}

// classifyNames classifies each distinct kernel name once.
func classifyNames(t *nsys.Trace, cls *kernelclass.Classifier) ([]kernelclass.Category, []string) {
	cats := make([]kernelclass.Category, len(t.Names))
	rules := make([]string, len(t.Names))
	for i, name := range t.Names {
		c, r := cls.Classify(name)
		cats[i] = c
		if r != nil {
			rules[i] = r.Name
		}
	}
	return cats, rules
}
