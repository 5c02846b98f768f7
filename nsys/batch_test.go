package nsys

import (
	"testing"
	"unsafe"
)

// TestBatchReaderLinked checks that the C batch reader found go-sqlite3's SQLite at link
// time; without it every read silently falls back to database/sql, many times slower.
func TestBatchReaderLinked(t *testing.T) {
	if _, err := openBatch("file::memory:?mode=ro"); err == errNoBatch {
		t.Fatal("batch reader unavailable: sqlite3 symbols did not resolve")
	}
}

// TestRecordSizes guards the memory per row: a kernel and an API call are 24 bytes each.
func TestRecordSizes(t *testing.T) {
	if n := unsafe.Sizeof(Kernel{}); n != 24 {
		t.Errorf("Kernel is %d bytes, want 24", n)
	}
	if n := unsafe.Sizeof(APICall{}); n != 24 {
		t.Errorf("APICall is %d bytes, want 24", n)
	}
}
