package breakdown

import (
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// overrides assigns categories to kernels launched inside NVTX ranges (Options.NVTXCategories).
type overrides struct {
	rules []*launchOwners // one per rule, in rule order: the first match wins
	cats  []kernelclass.Category
}

// category returns the category the first matching rule gives the launch (proc, corr).
func (o *overrides) category(proc nsys.ProcID, corr uint32) (kernelclass.Category, bool) {
	if o == nil {
		return 0, false
	}
	for i, lo := range o.rules {
		if _, ok := lo.owner(proc, corr); ok {
			return o.cats[i], true
		}
	}
	return 0, false
}

// nvtxOverrides builds the Options.NVTXCategories rules; nil when there are none.
func nvtxOverrides(t *nsys.Trace, rules []NVTXCategory) *overrides {
	if len(rules) == 0 {
		return nil
	}
	o := &overrides{}
	for _, rl := range rules {
		matches := make([]bool, len(t.RangeTexts))
		for j, s := range t.RangeTexts {
			matches[j] = rl.Match.MatchString(s)
		}
		var rs []ownerRange
		for _, r := range t.Ranges {
			if !matches[r.Text] {
				continue
			}
			end := r.End
			if r.Open() {
				end = 1<<63 - 1
			}
			rs = append(rs, ownerRange{r.Thread, r.Start, end})
		}
		rs = mergeOwnerRanges(rs)
		o.rules = append(o.rules, newLaunchOwners(t, rs, func(w *nsys.Caller) bool {
			return w.Kind == nsys.APILaunch || w.Kind == nsys.APIGraphLaunch
		}))
		o.cats = append(o.cats, rl.Category)
	}
	return o
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
