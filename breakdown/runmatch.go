package breakdown

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// This file places the files of a run on one clock before any step is found
// (nsys.MergeOptions.Refine): a collective ends at nearly the same instant on every rank,
// so among the differences between the ends of one file's collectives and the reference
// file's (of the same operation, within matchWindow of the session starts' placement),
// those of the same call pile up within a microsecond, where other pairings spread over
// the steps' jitter. The pile is the file's offset; summarizeRun then checks it against the
// collectives matched step by step (ranks.go) and refines it if they disagree.

// matchWindow bounds the correction of the session starts' placement looked for: hosts'
// clocks under NTP agree to milliseconds.
const matchWindow = 100 * time.Millisecond

// matchSamples is the most reference collectives compared (spread evenly over the trace).
const matchSamples = 4096

// collEnd is one collective kernel's end and operation.
type collEnd struct {
	end nsys.Time
	op  int // index into the interned operation names
}

// CollectiveOffsets returns an nsys.MergeOptions.Refine that matches the files'
// collective kernels (as cls classifies them: allreduce and collective) by their ends; a
// file whose ends pile up nowhere (no collectives, or none within matchWindow of the
// session starts' placement) keeps its offset, unrefined.
func CollectiveOffsets(cls *kernelclass.Classifier) func([]*nsys.Trace, int, []time.Duration) ([]time.Duration, []bool) {
	if cls == nil {
		cls = kernelclass.DefaultClassifier()
	}
	return func(traces []*nsys.Trace, ref int, offs []time.Duration) ([]time.Duration, []bool) {
		refined := make([]bool, len(traces))
		ops := map[string]int{}
		ends := make([][]collEnd, len(traces))
		for i, t := range traces {
			ends[i] = collectiveEnds(t, cls, ops)
		}
		for i := range traces {
			if i == ref || len(ends[i]) == 0 || len(ends[ref]) == 0 {
				continue
			}
			if d, ok := pileOffset(ends[ref], ends[i], offs[i]); ok {
				offs[i], refined[i] = d, true
			}
		}
		return offs, refined
	}
}

// collectiveEnds returns t's collective kernels by end.
func collectiveEnds(t *nsys.Trace, cls *kernelclass.Classifier, ops map[string]int) []collEnd {
	cats, _ := classifyNames(t, cls)
	opOf := make([]int, len(t.Names))
	for id, name := range t.Names {
		if cats[id] != kernelclass.AllReduce && cats[id] != kernelclass.Collective {
			opOf[id] = -1
			continue
		}
		s := kernelclass.Normalize(name)
		if nk, ok := kernelclass.DecodeNCCL(name); ok {
			s = nk.Op
		}
		o, ok := ops[s]
		if !ok {
			o = len(ops)
			ops[s] = o
		}
		opOf[id] = o
	}
	var out []collEnd
	for _, k := range t.Kernels {
		if o := opOf[t.Sites[k.Site].Name]; o >= 0 {
			out = append(out, collEnd{k.End, o})
		}
	}
	slices.SortFunc(out, func(a, b collEnd) int { return cmp.Compare(a.end, b.end) })
	return out
}

// pileOffset finds the offset of file b against the reference a near guess: the 1 µs bin
// of end differences (a.end - b.end, same operation, within matchWindow of guess) that
// holds the most pairs, refined to their median. ok is false when the pile is not clear:
// fewer than a quarter of the sampled collectives in it, or less than 1.25 times any bin
// 3 µs or more away (a loop that repeats exactly piles other calls' ends one period off:
// a trace grown by copying steps has 69% of the calls in such a pile). summarizeRun checks
// the offset against the calls matched step by step either way.
func pileOffset(a, b []collEnd, guess time.Duration) (time.Duration, bool) {
	const bin = int64(time.Microsecond)
	w := int64(matchWindow)
	nb := int(2*w/bin) + 1
	hist := make([]int32, nb)
	// The sampled calls: every call, or matchSamples spread over the trace by
	// multiplicative hashing (a fixed stride would pick the same call of each step: a loop
	// of 9 collectives a step and a stride of 9 compares only its first all-reduces).
	sample := make([]int, 0, min(len(a), matchSamples))
	if len(a) <= matchSamples {
		for i := range a {
			sample = append(sample, i)
		}
	} else {
		for k := range matchSamples {
			sample = append(sample, int(uint64(k)*2654435761%uint64(len(a))))
		}
		slices.Sort(sample)
		sample = slices.Compact(sample)
	}
	each := func(fn func(d int64)) {
		for _, i := range sample {
			r := a[i]
			// b's ends within the window: r.end - (b.end + guess) in [-w, w].
			lo := int64(r.end) - int64(guess) - w
			j, _ := slices.BinarySearchFunc(b, nsys.Time(lo), func(c collEnd, t nsys.Time) int { return cmp.Compare(c.end, t) })
			for ; j < len(b) && int64(b[j].end) <= lo+2*w; j++ {
				if b[j].op == r.op {
					fn(int64(r.end) - int64(b[j].end) - int64(guess))
				}
			}
		}
	}
	each(func(d int64) { hist[(d+w)/bin]++ })
	samples := len(sample)
	best := 0
	for i := range hist {
		if pair(hist, i) > pair(hist, best) {
			best = i
		}
	}
	peak := pair(hist, best)
	other := int32(0)
	for i := range hist {
		if i < best-3 || i > best+4 {
			other = max(other, pair(hist, i))
		}
	}
	if int(peak) < max(4, samples/4) || 4*peak < 5*other {
		return guess, false
	}
	// Each sampled call's partner: of its pairs, the one nearest the pile (within 5 µs:
	// the ends of one call differ by a microsecond or two); their median.
	center := int64(best)*bin - w + bin
	var in []float64
	for _, i := range sample {
		r := a[i]
		lo := int64(r.end) - int64(guess) - center - 5*bin
		j, _ := slices.BinarySearchFunc(b, nsys.Time(lo), func(c collEnd, t nsys.Time) int { return cmp.Compare(c.end, t) })
		near, found := int64(0), false
		for ; j < len(b) && int64(b[j].end) <= lo+10*bin; j++ {
			if b[j].op != r.op {
				continue
			}
			d := int64(r.end) - int64(b[j].end) - int64(guess)
			if !found || abs64(d-center) < abs64(near-center) {
				near, found = d, true
			}
		}
		if found {
			in = append(in, float64(near))
		}
	}
	return guess + time.Duration(math.Round(QuantileF(in, 0.5))), true
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// pair is the count of bins i and i+1 (a pile can straddle a bin edge).
func pair(h []int32, i int) int32 {
	if i+1 < len(h) {
		return h[i] + h[i+1]
	}
	return h[i]
}
