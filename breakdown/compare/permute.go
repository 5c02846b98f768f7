package compare

import (
	"math"
	"math/rand/v2"
	"slices"
)

// This file holds the test of the headline: a two-sided permutation test on the difference
// of the means. It assumes nothing about the shape of the samples (per-step times are
// heavy-tailed and often bimodal: a rank that waits at some steps and not at others), only
// that under "no change" the labels base/new are exchangeable.
//
// Arrangements: every split of the pooled samples into groups of the two sizes when there
// are at most exactLimit of them (4 + 4 samples: 70); else, with more than normalLimit
// samples in the smaller group and no sample holding more than lindebergShare of the
// pooled sum of squares (so that the central limit theorem for sampling without
// replacement holds), the normal approximation of the permutation distribution, whose
// variance is known in closed form; else permutationRounds random splits (a partial
// shuffle drawing the smaller group, from a fixed seed, so the same input gives the same
// p-value).

const (
	exactLimit        = 20000 // arrangements enumerated exactly up to this many
	permutationRounds = 1999  // random arrangements otherwise; p = (1 + hits) / (1 + rounds)...
	drawBudget        = 2e7   // ...fewer when rounds x the smaller group's size would exceed this
	minRounds         = 199   // but never fewer than this (p no lower than 0.005)
	normalLimit       = 100   // above this many samples in the smaller group: normal approximation...
	lindebergShare    = 0.1   // ...unless one sample holds more than this share of the sum of squares
	permutationSeed   = 0x5EED57E9
)

// MinSamples is the fewest samples a side needs for the permutation test: with 4 + 4 it
// can reach p = 2/70 = 0.029 (both extreme splits), with 3 + 3 no lower than 2/20 = 0.1.
const MinSamples = 4

// meanTest is the result of the permutation test of one quantity.
type meanTest struct {
	Delta float64 // mean(new) - mean(base) of the samples
	P     float64 // two-sided
	// Half is the half-width of the confidence interval of Delta: the quantile at the
	// confidence level of |difference| over the arrangements, i.e. the smallest change the
	// test would call significant at 1 - confidence (the interval is Delta ± Half).
	Half   float64
	Method string // "exact", "monte-carlo" or "normal"
	Rounds int    // arrangements evaluated
}

// testable reports whether the permutation test can reject at level alpha with nb and nn
// samples: at least MinSamples a side, and the smallest p-value it can give, 2/C(nb+nn, nb),
// below alpha.
func testable(nb, nn int, alpha float64) bool {
	if nb < MinSamples || nn < MinSamples {
		return false
	}
	c := binomial(nb+nn, min(nb, nn))
	return 2/c < alpha
}

// SamplesNeeded returns the fewest samples per side (at least MinSamples) with which the
// permutation test can reject at level alpha.
func SamplesNeeded(alpha float64) int {
	for k := MinSamples; k < 64; k++ {
		if testable(k, k, alpha) {
			return k
		}
	}
	return 64
}

// binomial returns C(n, k) as a float (exact while it fits in 53 bits, +Inf when huge).
func binomial(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	k = min(k, n-k)
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
		if math.IsInf(c, 0) {
			return c
		}
	}
	return math.Round(c)
}

// permutationTest tests mean(new) - mean(base) against 0 at the given confidence (for the
// interval's half-width). Both samples must be non-empty.
func permutationTest(base, new []float64, confidence float64) meanTest {
	ps := newPermSample(base, new)
	var sumNew float64
	for _, x := range new {
		sumNew += x
	}
	obs := ps.diff(sumNew)
	res := meanTest{Delta: obs}
	// Ties: differences equal up to rounding count as at least as extreme.
	scale := 0.0
	for _, x := range ps.pooled {
		scale = max(scale, math.Abs(x))
	}
	eps := 1e-9 * max(scale, 1)
	mean := ps.total / float64(ps.n)
	var ss, big float64
	for _, x := range ps.pooled {
		ss += (x - mean) * (x - mean)
		big = max(big, (x-mean)*(x-mean))
	}
	if ss <= eps*eps*float64(ps.n) { // every sample the same: nothing to reject
		return meanTest{Delta: obs, P: 1, Method: "exact", Rounds: 1}
	}
	if ps.k > normalLimit && big <= lindebergShare*ss {
		return ps.normalTest(res, ss, eps, confidence)
	}
	var abs []float64
	if c := binomial(ps.n, ps.k); c <= exactLimit {
		res.Method = "exact"
		abs = ps.exactDraws(int(c))
		hits := 0
		for _, a := range abs {
			if a >= math.Abs(obs)-eps {
				hits++
			}
		}
		res.P = float64(hits) / float64(len(abs))
	} else {
		res.Method = "monte-carlo"
		var hits int
		abs, hits = ps.randomDraws(math.Abs(obs) - eps)
		res.P = float64(1+hits) / float64(1+len(abs))
	}
	res.Rounds = len(abs)
	slices.Sort(abs)
	res.Half = abs[min(len(abs)-1, int(math.Ceil(confidence*float64(len(abs))))-1)]
	return res
}

// permSample is the pooled samples of a permutation test, drawn as groups of the smaller
// side's size k (the complement is the other side).
type permSample struct {
	pooled       []float64
	nb, nn, n, k int
	total        float64
	small        bool // the drawn group plays the new side
}

func newPermSample(base, new []float64) *permSample {
	ps := &permSample{pooled: append(slices.Clone(base), new...), nb: len(base), nn: len(new)}
	for _, x := range ps.pooled {
		ps.total += x
	}
	ps.n = len(ps.pooled)
	ps.k = min(ps.nb, ps.nn)
	ps.small = ps.nn == ps.k
	return ps
}

// diff is the difference of means for a group G of the new side's size with sum s:
// s/nn - (total-s)/nb.
func (ps *permSample) diff(s float64) float64 {
	return s/float64(ps.nn) - (ps.total-s)/float64(ps.nb)
}

// value is the difference of means when the drawn group sums to s.
func (ps *permSample) value(s float64) float64 {
	if ps.small {
		return ps.diff(s)
	}
	return ps.diff(ps.total - s)
}

// normalTest completes res by the normal approximation: under exchangeability the mean of
// a random group of size nn drawn without replacement has variance sigma²/nn * (n-nn)/(n-1),
// sigma² the pooled population variance (ss/n); the difference is n/nb times that mean
// minus a constant.
func (ps *permSample) normalTest(res meanTest, ss, eps, confidence float64) meanTest {
	n, nb, nn := float64(ps.n), float64(ps.nb), float64(ps.nn)
	sd := math.Sqrt(n * n * (ss / n) / (nb * nn * (n - 1)))
	res.Method, res.Rounds = "normal", 0
	if sd == 0 {
		res.P = 1
		if math.Abs(res.Delta) > eps {
			res.P = 0
		}
		return res
	}
	res.P = math.Erfc(math.Abs(res.Delta) / sd / math.Sqrt2)
	res.Half = sd * math.Sqrt2 * math.Erfinv(confidence)
	return res
}

// exactDraws returns |difference of means| of every one of the c groups of size k, in
// lexicographic order of the combinations.
func (ps *permSample) exactDraws(c int) []float64 {
	n, k := ps.n, ps.k
	abs := make([]float64, 0, c)
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		var s float64
		for _, i := range idx {
			s += ps.pooled[i]
		}
		abs = append(abs, math.Abs(ps.value(s)))
		// next combination in lexicographic order
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return abs
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// randomDraws returns |difference of means| of seeded random groups of size k and how many
// of them reach at least limit.
func (ps *permSample) randomDraws(limit float64) ([]float64, int) {
	n, k := ps.n, ps.k
	rng := rand.New(rand.NewPCG(permutationSeed, uint64(n)))
	work := slices.Clone(ps.pooled)
	rounds := max(minRounds, min(permutationRounds, int(drawBudget)/k))
	abs := make([]float64, 0, rounds)
	hits := 0
	for r := 0; r < rounds; r++ {
		var s float64
		for i := 0; i < k; i++ {
			// j uniform in [i, n): Lemire's multiply-shift (bias under 2^-32 * n).
			j := i + int((rng.Uint64()>>32)*uint64(n-i)>>32)
			work[i], work[j] = work[j], work[i]
			s += work[i]
		}
		a := math.Abs(ps.value(s))
		abs = append(abs, a)
		if a >= limit {
			hits++
		}
	}
	return abs, hits
}
