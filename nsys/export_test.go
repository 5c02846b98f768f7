package nsys

// PartRows returns Options that read the large tables in parts of about n rows.
func PartRows(n int) Options { return Options{partRows: n} }
