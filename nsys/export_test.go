package nsys

// PartRows returns Options that read the large tables in parts of about n rows.
func PartRows(n int) Options { return Options{partRows: n} }

// LeafPages returns the leaf pages of table's B-tree in the file at path, in rowid
// order (nil when the direct reader cannot walk it).
func LeafPages(path, table string, root int64) []uint32 {
	f, err := openSQLiteFile(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	ls, err := f.leaves(uint32(root))
	if err != nil {
		return nil
	}
	out := make([]uint32, len(ls))
	for i, l := range ls {
		out[i] = l.pgno
	}
	return out
}
