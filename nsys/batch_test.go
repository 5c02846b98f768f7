package nsys

import "testing"

// TestBatchReaderLinked checks that the C batch reader found go-sqlite3's SQLite at link
// time; without it every read silently falls back to database/sql, many times slower.
func TestBatchReaderLinked(t *testing.T) {
	if _, err := openBatch("file::memory:?mode=ro"); err == errNoBatch {
		t.Fatal("batch reader unavailable: sqlite3 symbols did not resolve")
	}
}
