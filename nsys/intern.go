package nsys

// An interner numbers values in the order they first come, each new one appended to
// *list (a Trace's names, texts, sites or callers), so that id(v) indexes *list. With a
// limit, values past the first limit share the last id, limit-1, and are not appended
// (APICall's uint8 names).
type interner[K comparable, ID ~uint8 | ~uint32] struct {
	idx   map[K]ID
	list  *[]K
	limit int // 0: none
}

func newInterner[K comparable, ID ~uint8 | ~uint32](list *[]K) *interner[K, ID] {
	return &interner[K, ID]{idx: map[K]ID{}, list: list}
}

// id returns the number of v, adding it when new.
func (n *interner[K, ID]) id(v K) ID {
	if id, ok := n.idx[v]; ok {
		return id
	}
	return n.add(v)
}

// add numbers v, which is not numbered yet.
func (n *interner[K, ID]) add(v K) ID {
	if n.limit > 0 && len(*n.list) >= n.limit {
		id := ID(n.limit - 1)
		n.idx[v] = id
		return id
	}
	id := ID(len(*n.list))
	n.idx[v] = id
	*n.list = append(*n.list, v)
	return id
}

// internBytes is n.id(string(b)), without making the string when b is numbered already.
func internBytes[ID ~uint8 | ~uint32](n *interner[string, ID], b []byte) ID {
	if id, ok := n.idx[string(b)]; ok {
		return id
	}
	return n.add(string(b))
}
