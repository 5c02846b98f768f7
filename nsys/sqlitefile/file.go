// Package sqlitefile reads the SQLite file format (sqlite.org/fileformat.html) far enough
// to walk a rowid table's B-tree and decode the integers (and one text column) of its
// records, without SQLite. The file is mapped read-only (read with pread where mapping
// fails) and never written; every offset is checked against the page and the file.
// Anything it does not handle is an *Unhandled error: the caller then reads the table
// through SQLite. What it finds inconsistent is a *Damaged error (an Unhandled one too):
// SQLite reads such pages as they stand, so the caller decides (nsys asks SQLite's
// quick_check).
//
// It knows nothing of what the tables hold.
package sqlitefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"unsafe"
)

// Magic is the first 16 bytes of every SQLite database file.
const Magic = "SQLite format 3\x00"

// An Unhandled error says why a table was not read: something this package does not
// handle (a -wal file, a text encoding, a column type), or finds inconsistent (a damaged
// page: then also a *Damaged error).
type Unhandled struct{ Why string }

func (e *Unhandled) Error() string { return e.Why }

// Unhandledf returns an *Unhandled error of the formatted text.
func Unhandledf(format string, args ...any) error {
	return &Unhandled{fmt.Sprintf(format, args...)}
}

// IsUnhandled reports whether err is (or wraps) an *Unhandled error.
func IsUnhandled(err error) bool {
	var u *Unhandled
	return errors.As(err, &u)
}

// A Damaged error says that the file's pages or records are inconsistent where a table
// was read: a page met twice in a B-tree, rowids out of order, a cell past its page, a
// record whose body does not match its header, a pointer past the file. Page is the page
// it was found on (0: not known yet; the caller's message names it). It is an *Unhandled
// error too (errors.As finds one), for callers that treat both alike; SQLite reads such
// pages as they stand, so a caller may rather stop than fall back.
type Damaged struct {
	Page uint32
	Why  string
}

func (e *Damaged) Error() string { return e.Why }

// As makes a *Damaged an *Unhandled error too.
func (e *Damaged) As(target any) bool {
	if u, ok := target.(**Unhandled); ok {
		*u = &Unhandled{e.Why}
		return true
	}
	return false
}

// Damagedf returns a *Damaged error of the formatted text, found on page.
func Damagedf(page uint32, format string, args ...any) error {
	return &Damaged{page, fmt.Sprintf(format, args...)}
}

// IsDamaged reports whether err is (or wraps) a *Damaged error.
func IsDamaged(err error) bool {
	var d *Damaged
	return errors.As(err, &d)
}

// ErrChanged is the error of a read of the mapped file that faulted: the file shrank (was
// truncated or rewritten) while mapped. It is not an *Unhandled error: SQLite would read
// the changed file, so the caller stops.
var ErrChanged = errors.New("the file changed while being read (truncated or rewritten while mapped): read it again once it is complete")

// guardFault, deferred (after debug.SetPanicOnFault(true)) by every method that reads the
// mapped pages (Table, RowidBounds, Scan), turns the fault of a mapped file that shrank
// (SIGBUS) into ErrChanged in *err; any other panic goes on.
func guardFault(err *error) {
	if e := recover(); e != nil {
		if _, fault := e.(interface{ Addr() uintptr }); !fault {
			panic(e)
		}
		*err = ErrChanged
	}
}

// A File is an SQLite database file opened for reading pages.
type File struct {
	f        *os.File
	mapped   []byte // the whole file mapped read-only; nil: pages are read with pread
	pageSize int
	usable   int    // page size less the reserved bytes at the end of each page
	npages   uint32 // pages in the file
	own      bool   // Close closes f (Open, not OpenFile)
}

// PageSize returns the file's page size in bytes.
func (s *File) PageSize() int { return s.pageSize }

// Usable returns the bytes of each page in use: the page size less the reserved bytes.
func (s *File) Usable() int { return s.usable }

// Pages returns the number of pages of the file.
func (s *File) Pages() uint32 { return s.npages }

// Mapped reports whether the file is mapped (pages are read in place, not copied).
func (s *File) Mapped() bool { return s.mapped != nil }

// Open opens path and checks its header for what this package handles: a
// rollback-journal or WAL database without WAL frames, UTF-8 text, schema format 1-4.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	s, err := OpenFile(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.own = true
	return s, nil
}

// OpenFile is Open of the open file f (of path: the -wal beside it is looked for there),
// which the caller keeps: Close unmaps it and leaves f open.
func OpenFile(f *os.File, path string) (*File, error) {
	s, err := checkHeader(f, path)
	if err != nil {
		return nil, err
	}
	// Mapped only where a run of pages can be mapped in one call: a page fault per page
	// costs more than pread's copy on virtual machines.
	if m := mapFile(f, int64(s.npages)*int64(s.pageSize)); m != nil {
		if populateRead(m[:min(len(m), os.Getpagesize())]) == nil {
			s.mapped = m
		} else {
			unmapFile(m)
		}
	}
	return s, nil
}

func checkHeader(f *os.File, path string) (*File, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var h [100]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return nil, Unhandledf("file header unreadable (%v)", err)
	}
	if string(h[:16]) != Magic {
		return nil, Unhandledf("no SQLite header")
	}
	ps := int(binary.BigEndian.Uint16(h[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps&(ps-1) != 0 {
		return nil, Unhandledf("page size %d", ps)
	}
	switch {
	case h[18] == 2 || h[19] == 2:
		if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 32 {
			return nil, Unhandledf("a -wal file with frames sits beside it")
		}
		if h[18] != h[19] {
			return nil, Unhandledf("file format versions %d/%d", h[18], h[19])
		}
	case h[18] != 1 || h[19] != 1:
		return nil, Unhandledf("file format versions %d/%d", h[18], h[19])
	}
	usable := ps - int(h[20])
	if usable < 480 {
		return nil, Unhandledf("%d reserved bytes per page", h[20])
	}
	if enc := binary.BigEndian.Uint32(h[56:60]); enc != 1 {
		return nil, Unhandledf("text encoding %s, not UTF-8", map[uint32]string{2: "UTF-16le", 3: "UTF-16be"}[enc])
	}
	if sf := binary.BigEndian.Uint32(h[44:48]); sf < 1 || sf > 4 {
		return nil, Unhandledf("schema format %d", sf)
	}
	n := fi.Size() / int64(ps)
	// The header's page count, when valid, is what SQLite reads (a file can be longer).
	if hp := int64(binary.BigEndian.Uint32(h[28:32])); hp > 0 && binary.BigEndian.Uint32(h[92:96]) == binary.BigEndian.Uint32(h[24:28]) {
		if hp > n {
			return nil, Unhandledf("file shorter than its header says")
		}
		n = hp
	}
	if n > math.MaxUint32-1 {
		return nil, Unhandledf("%d pages", n)
	}
	return &File{f: f, pageSize: ps, usable: usable, npages: uint32(n)}, nil
}

// Close unmaps the file and closes it (when Open opened it); pages returned before must not be used after.
func (s *File) Close() error {
	if s.mapped != nil {
		unmapFile(s.mapped)
		s.mapped = nil
	}
	if !s.own {
		return nil
	}
	return s.f.Close()
}

// ReadPages returns n pages from page pg on: in place when the file is mapped (mapped in
// one call), else read into buf (which must hold them). The bytes are valid until Close; Done gives the
// mapped pages' memory back once they are decoded.
func (s *File) ReadPages(pg uint32, n int, buf []byte) ([]byte, error) {
	if pg < 1 || n < 1 || uint64(pg)+uint64(n)-1 > uint64(s.npages) {
		return nil, Damagedf(pg, "page %d out of the file's %d", uint64(pg)+uint64(max(n, 1))-1, s.npages)
	}
	off := int64(pg-1) * int64(s.pageSize)
	size := n * s.pageSize
	if s.mapped != nil {
		b := s.mapped[off : off+int64(size) : off+int64(size)]
		if n > 1 {
			s.around(b, func(b []byte) { populateRead(b) })
		}
		return b, nil
	}
	b := buf[:size]
	if _, err := s.f.ReadAt(b, off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Damagedf(pg, "page %d past the end of the file", pg)
		}
		return nil, err
	}
	return b, nil
}

// Done says that pages b (from ReadPages) are decoded: mapped pages stop counting as
// the process's resident memory (they stay in the page cache). b must not be used after.
func (s *File) Done(b []byte) {
	if s.mapped == nil || len(b) == 0 {
		return
	}
	s.around(b, dontNeed)
}

// around calls fn with the whole pages of the system in b (madvise's unit): pages smaller
// than the system's leave their first and last system page out.
func (s *File) around(b []byte, fn func([]byte)) {
	ps := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	a, e := (start+ps-1)&^(ps-1), (start+uintptr(len(b)))&^(ps-1)
	if e > a {
		fn(b[a-start : e-start])
	}
}
