package steps

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stepstat/stepstat/nsys"
)

// TestRepeatStart checks the linear repeatStart against its definition (the first e with
// names[e:e+p] == names[e+p:e+2p]) on random sequences of few names, which repeat often.
func TestRepeatStart(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(40)
		names := make([]nsys.NameID, n)
		for i := range names {
			names[i] = nsys.NameID(rng.IntN(2 + rng.IntN(3)))
		}
		for p := 1; p <= n/2+1; p++ {
			want := -1
			for e := 0; e+2*p <= n; e++ {
				if slices.Equal(names[e:e+p], names[e+p:e+2*p]) {
					want = e
					break
				}
			}
			if got := repeatStart(names, p); got != want {
				t.Fatalf("repeatStart(%v, %d) = %d, want %d", names, p, got, want)
			}
		}
	}
}
