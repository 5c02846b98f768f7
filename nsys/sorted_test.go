package nsys

import (
	"cmp"
	"testing"
)

// isSorted checks large slices in pieces at once: it must find an element out of order
// anywhere, at a piece's edge too.
func TestIsSortedPieces(t *testing.T) {
	const n = 5<<19 + 77
	s := make([]int, n)
	for i := range s {
		s[i] = i / 3 // ties too
	}
	if !isSorted(s, cmp.Compare[int]) {
		t.Fatal("a sorted slice reads as unsorted")
	}
	for _, at := range []int{1, 1<<19 - 1, 1 << 19, 1<<19 + 1, 2 << 19, n - 1} {
		s[at-1], s[at] = s[at]+1, s[at-1]
		if s[at-1] <= s[at] {
			s[at-1] = s[at] + 1
		}
		if isSorted(s, cmp.Compare[int]) {
			t.Errorf("an element out of order at %d not found", at)
		}
		for i := range s {
			s[i] = i / 3
		}
	}
}
