package nsys

/*
#include <stdint.h>
#include <stdlib.h>

// The SQLite that github.com/mattn/go-sqlite3 compiles into the binary. The references
// are weak so that cgo's own link check of this package passes; the final link resolves
// them against go-sqlite3's copy, which this package imports.
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
extern int sqlite3_open_v2(const char*, sqlite3**, int, const char*) __attribute__((weak));
extern int sqlite3_close_v2(sqlite3*) __attribute__((weak));
extern int sqlite3_prepare_v2(sqlite3*, const char*, int, sqlite3_stmt**, const char**) __attribute__((weak));
extern int sqlite3_step(sqlite3_stmt*) __attribute__((weak));
extern int sqlite3_finalize(sqlite3_stmt*) __attribute__((weak));
extern int64_t sqlite3_column_int64(sqlite3_stmt*, int) __attribute__((weak));
extern int sqlite3_column_type(sqlite3_stmt*, int) __attribute__((weak));
extern double sqlite3_column_double(sqlite3_stmt*, int) __attribute__((weak));
extern const char* sqlite3_errmsg(sqlite3*) __attribute__((weak));

static int batch_available(void) {
	return sqlite3_open_v2 != 0 && sqlite3_step != 0 && sqlite3_column_int64 != 0 && sqlite3_column_type != 0 &&
		sqlite3_column_double != 0;
}

#define SQLITE_OPEN_READONLY 0x00000001
#define SQLITE_OPEN_URI      0x00000040
#define SQLITE_OPEN_NOMUTEX  0x00008000
#define SQLITE_ROW 100
#define SQLITE_DONE 101
#define SQLITE_INTEGER 1
#define SQLITE_FLOAT 2

// integral_double stores d in *v and returns 1 when d is a whole number within int64
// (a REAL column's value, or an INTEGER stored in a column of REAL affinity, which SQLite
// returns as REAL); the direct reader reads the same (integralFloat).
static int integral_double(double d, int64_t* v) {
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
		return 0;
	}
	int64_t x = (int64_t)d;
	if ((double)x != d) {
		return 0;
	}
	*v = x;
	return 1;
}

// No mmap (PRAGMA mmap_size): it saves the read() calls, about a fifth of the time of a
// big scan, but every page of the file it touches then counts as resident memory.
static int batch_open(const char* uri, sqlite3** db) {
	return sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, 0);
}

// batch_step steps stmt up to max rows, writing ncol int64 values per row into out, and
// after them one more: a bit per column (up to 63) that does not hold an INTEGER (NULL,
// text, blob or a real that is not a whole number), whose value column_int64 would make up. It returns SQLITE_ROW when the buffer filled (more rows may follow), SQLITE_DONE at the
// end, or an SQLite error code; *n is the number of rows written.
static int batch_step(sqlite3_stmt* st, int ncol, int64_t* out, int max, int* n) {
	int i = 0;
	while (i < max) {
		int rc = sqlite3_step(st);
		if (rc != SQLITE_ROW) {
			*n = i;
			return rc;
		}
		int64_t* row = out + (int64_t)i * (ncol + 1);
		int64_t bad = 0;
		for (int c = 0; c < ncol; c++) {
			row[c] = sqlite3_column_int64(st, c);
			int t = sqlite3_column_type(st, c);
			if (t == SQLITE_FLOAT && integral_double(sqlite3_column_double(st, c), &row[c])) {
				continue;
			}
			if (c < 63 && t != SQLITE_INTEGER) {
				bad |= (int64_t)1 << c;
			}
		}
		row[ncol] = bad;
		i++;
	}
	*n = i;
	return SQLITE_ROW;
}

*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// A batchDB is a read-only SQLite connection used to scan large tables of integers many
// rows per cgo call, which costs a fraction of database/sql's per-row overhead.
type batchDB struct {
	db *C.sqlite3
}

var errNoBatch = errors.New("batch reader unavailable")

func openBatch(uri string) (*batchDB, error) {
	if C.batch_available() == 0 {
		return nil, errNoBatch
	}
	cs := C.CString(uri)
	defer C.free(unsafe.Pointer(cs))
	var db *C.sqlite3
	if rc := C.batch_open(cs, &db); rc != 0 {
		msg := "cannot open"
		if db != nil {
			msg = C.GoString(C.sqlite3_errmsg(db))
			C.sqlite3_close_v2(db)
		}
		return nil, fmt.Errorf("%s (sqlite code %d)", msg, int(rc))
	}
	return &batchDB{db: db}, nil
}

func (b *batchDB) Close() {
	if b != nil && b.db != nil {
		C.sqlite3_close_v2(b.db)
		b.db = nil
	}
}

const batchRows = 4096

// scan runs query, whose ncol columns are integers, and calls fn with batches of rows
// laid out row-major: ncol values per row, then the row's mask of columns that did not
// hold an INTEGER (bit c for column c). The slice is reused between calls.
func (b *batchDB) scan(query string, ncol int, fn func(rows []int64, n int) error) error {
	cq := C.CString(query)
	defer C.free(unsafe.Pointer(cq))
	var st *C.sqlite3_stmt
	if rc := C.sqlite3_prepare_v2(b.db, cq, -1, &st, nil); rc != 0 {
		return fmt.Errorf("%s", C.GoString(C.sqlite3_errmsg(b.db)))
	}
	defer C.sqlite3_finalize(st)
	buf := make([]int64, batchRows*(ncol+1))
	for {
		var n C.int
		rc := C.batch_step(st, C.int(ncol), (*C.int64_t)(unsafe.Pointer(&buf[0])), C.int(batchRows), &n)
		if n > 0 {
			if err := fn(buf[:int(n)*(ncol+1)], int(n)); err != nil {
				return err
			}
		}
		switch rc {
		case C.SQLITE_ROW:
			continue
		case C.SQLITE_DONE:
			return nil
		default:
			return fmt.Errorf("%s", C.GoString(C.sqlite3_errmsg(b.db)))
		}
	}
}
