package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestPermutationExact: 4 + 4 samples, completely separated: the observed split and its
// mirror are the two most extreme of the 70, so p = 2/70; the interval excludes 0.
func TestPermutationExact(t *testing.T) {
	r := permutationTest([]float64{10, 11, 12, 13}, []float64{1, 2, 3, 4}, 0.95)
	if r.Method != "exact" || r.Rounds != 70 || math.Abs(r.P-2.0/70) > 1e-12 || r.Delta != -9 {
		t.Errorf("got %+v; want exact over 70 arrangements, p = 2/70, delta -9", r)
	}
	if !(r.Half > 0 && r.Half < 9) {
		t.Errorf("half-width %v; want in (0, 9): the interval excludes 0", r.Half)
	}
	// Identical samples: nothing to reject.
	if r := permutationTest([]float64{5, 5, 5, 5}, []float64{5, 5, 5, 5}, 0.95); r.P != 1 || r.Delta != 0 {
		t.Errorf("constant samples: %+v; want p = 1", r)
	}
	// Interleaved samples: p = 1 exactly when the means are equal.
	if r := permutationTest([]float64{1, 4, 5, 8}, []float64{2, 3, 6, 7}, 0.95); r.P != 1 {
		t.Errorf("equal means: p = %v; want 1", r.P)
	}
}

// TestPermutationBimodal: the case the medians miss. Base: 12 steps that wait ~10 ms and
// 12 that take ~44 µs (two ranks pooled); new: 24 steps of ~50 µs. The Monte Carlo test is
// deterministic (fixed seed) and finds the change; a null comparison of two halves of one
// bimodal sample does not.
func TestPermutationBimodal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var base, new []float64
	for i := 0; i < 12; i++ {
		base = append(base, 6e6+rng.Float64()*10e6, 44e3+rng.Float64()*1e3)
	}
	for i := 0; i < 24; i++ {
		new = append(new, 50e3+rng.Float64()*20e3)
	}
	r := permutationTest(base, new, 0.95)
	if r.Method != "monte-carlo" || r.Rounds != permutationRounds || r.P > 0.01 {
		t.Errorf("got %+v; want a Monte Carlo p under 0.01", r)
	}
	if again := permutationTest(base, new, 0.95); again != r {
		t.Errorf("not deterministic: %+v then %+v", r, again)
	}
	half := permutationTest(base[:12], base[12:], 0.95)
	if half.P < 0.2 {
		t.Errorf("two halves of one sample: p = %v; want no rejection", half.P)
	}
}

// TestPermutationNormal: above normalLimit samples, the normal approximation agrees with
// the Monte Carlo test on the same data (a shift of 0.1 sd over 3,000 + 3,000 samples:
// z ≈ 3.9) and is deterministic by construction.
func TestPermutationNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b []float64
	for i := 0; i < 3000; i++ {
		a = append(a, rng.NormFloat64())
		b = append(b, rng.NormFloat64()+0.1)
	}
	r := permutationTest(a, b, 0.95)
	if r.Method != "normal" || r.P > 0.01 || r.Half < 0.03 || r.Half > 0.07 {
		t.Errorf("got %+v; want the normal approximation, p < 0.01, half-width ~1.96*sqrt(2/3000) = 0.05", r)
	}
}

// TestPermutationOutlier: one step far longer than the 299 others holds most of the
// variance, so the normal approximation does not hold and the splits are drawn instead: the
// outlier alone does not make the change significant.
func TestPermutationOutlier(t *testing.T) {
	var a, b []float64
	for i := 0; i < 150; i++ {
		a = append(a, 1e6+float64((i+2)%5)*1e3)
		b = append(b, 1e6+float64(i%5)*1e3)
	}
	a[17] = 2e9 // a 2 s step: a stall
	r := permutationTest(a, b, 0.95)
	if r.Method != "monte-carlo" || r.P < 0.2 {
		t.Errorf("got %+v; want Monte Carlo splits and no rejection from one outlier", r)
	}
}

// TestTestable: 4 + 4 is the smallest balanced design that reaches p < 0.05; 3 + 3 (p >=
// 0.1) is not; at alpha 0.01 it takes 5 a side.
func TestTestable(t *testing.T) {
	for _, c := range []struct {
		nb, nn int
		alpha  float64
		want   bool
	}{{4, 4, 0.05, true}, {3, 3, 0.05, false}, {2, 30, 0.05, false}, {4, 4, 0.01, false}, {5, 5, 0.01, true}, {12, 12, 0.05, true}} {
		if got := testable(c.nb, c.nn, c.alpha); got != c.want {
			t.Errorf("testable(%d, %d, %g) = %v", c.nb, c.nn, c.alpha, got)
		}
	}
	if SamplesNeeded(0.05) != 4 || SamplesNeeded(0.01) != 5 {
		t.Errorf("SamplesNeeded: %d at 0.05, %d at 0.01; want 4, 5", SamplesNeeded(0.05), SamplesNeeded(0.01))
	}
}

// BenchmarkPermutation times one row's test at sizes around the method switches.
func BenchmarkPermutation(b *testing.B) {
	for _, n := range []int{12, 200, 2000, 20000} {
		rng := rand.New(rand.NewPCG(5, 6))
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = rng.ExpFloat64(), rng.ExpFloat64()
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				permutationTest(x, y, 0.95)
			}
		})
	}
}
