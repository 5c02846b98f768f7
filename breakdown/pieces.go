package breakdown

import "sync"

// pieceFirsts returns the first items (steps, windows) of the pieces that cuts make of n
// items: 0, then each cut inside (0, n) greater than the one before.
func pieceFirsts(cuts []int, n int) []int {
	firsts := []int{0}
	for _, m := range cuts {
		if m > firsts[len(firsts)-1] && m < n {
			firsts = append(firsts, m)
		}
	}
	return firsts
}

// inPieces calls fn(p, lo, hi) for each piece p, [lo, hi), of n items whose first items are
// firsts (pieceFirsts): one piece on the calling goroutine, several each on its own.
func inPieces(firsts []int, n int, fn func(p, lo, hi int)) {
	if len(firsts) == 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for p, lo := range firsts {
		hi := n
		if p+1 < len(firsts) {
			hi = firsts[p+1]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(p, lo, hi)
		}()
	}
	wg.Wait()
}
