package nsys

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stepstat/stepstat/nsys/sqlitefile"
)

// ErrNoGPUActivity is wrapped by errors of callers that need GPU activity and find none.
var ErrNoGPUActivity = errors.New("no GPU activity (no kernel, memcpy, memset or CUDA graph rows)")

// An Error is a failure to read an export. Its text starts with the file's path.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string {
	return oneLine(e.Path) + ": " + oneLine(clip(e.Err.Error(), maxErrorText))
}

// maxErrorText bounds the text of an error: SQLite quotes the schema it cannot parse, and a
// damaged schema can be any length.
const maxErrorText = 400

// oneLine writes control characters (a newline in a quoted schema, a tab) as Go escapes, so
// that an error is one line whatever the file holds.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// clip shortens s to about n bytes, keeping its head and tail (on rune boundaries).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n/2, n/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:head] + " … " + s[t:]
}
func (e *Error) Unwrap() error { return e.Err }

const sqliteMagic = sqlitefile.Magic

// CheckFile checks, without opening a database, that path names a regular, non-empty,
// complete SQLite file. It never creates or changes the file.
func CheckFile(path string) error {
	s, err := openSource(path)
	if err != nil {
		return err
	}
	s.close()
	return nil
}

// checkPath checks what a stat of path says, before it is opened: it exists, is not a
// directory or another non-regular file (open(2) of a FIFO blocks), is not empty.
func checkPath(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &Error{path, errors.New("no such file")}
	case err != nil:
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &Error{path, err}
	case fi.IsDir():
		return &Error{path, errors.New("is a directory, not an nsys SQLite export")}
	case !fi.Mode().IsRegular():
		return &Error{path, errNotRegular}
	case fi.Size() == 0:
		return &Error{path, errors.New("empty file, not an nsys SQLite export")}
	}
	return nil
}

// checkHeader checks that the open file f (of path, size bytes) is a complete SQLite file:
// its magic, a whole header, no fewer bytes than the header's page count says.
func checkHeader(f *os.File, path string, size int64) error {
	var hdr [100]byte
	n, err := f.ReadAt(hdr[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return &Error{path, err}
	}
	if size == 0 {
		return &Error{path, errors.New("empty file, not an nsys SQLite export")}
	}
	if n < len(sqliteMagic) || !bytes.Equal(hdr[:len(sqliteMagic)], []byte(sqliteMagic)) {
		if strings.HasSuffix(path, ".nsys-rep") || strings.HasSuffix(path, ".qdrep") {
			return &Error{path, errors.New(`is an Nsight Systems report, not its SQLite export (run "nsys export --type sqlite ` + filepath.Base(path) + `")`)}
		}
		for _, c := range compressions {
			if bytes.HasPrefix(hdr[:n], c.magic) {
				return &Error{path, errors.New(`is ` + c.name + `-compressed, not an SQLite database (decompress it first: "` + c.undo + ` ` + filepath.Base(path) + `")`)}
			}
		}
		return &Error{path, errors.New(`not an SQLite database (expected an export made with "nsys export --type sqlite")`)}
	}
	if n < 100 {
		return &Error{path, fmt.Errorf("truncated SQLite file (%d bytes, shorter than its header)", size)}
	}
	pageSize := int64(binary.BigEndian.Uint16(hdr[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(binary.BigEndian.Uint32(hdr[28:32]))
	// The in-header page count is valid when the version-valid-for number matches the change counter.
	if pages > 0 && binary.BigEndian.Uint32(hdr[92:96]) == binary.BigEndian.Uint32(hdr[24:28]) {
		if want := pages * pageSize; size < want {
			return &Error{path, fmt.Errorf("truncated SQLite file (%d bytes, its header says %d)", size, want)}
		}
	}
	return nil
}

// compressions are the compressed formats an export is often shipped in: the magic bytes
// each file starts with, and the command that decompresses it beside itself.
var compressions = []struct {
	name  string
	magic []byte
	undo  string
}{
	{"gzip", []byte{0x1f, 0x8b}, "gunzip -k"},
	{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0}, "xz -dk"},
	{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}, "zstd -d"},
	{"bzip2", []byte("BZh"), "bunzip2 -k"},
}

// errNotRegular is the error of a path that is not a regular file.
var errNotRegular = errors.New("is not a regular file")

// regularOnly returns f when it is a regular file, checked on the open file itself;
// otherwise it closes f and returns the error.
func regularOnly(f *os.File) (*os.File, error) {
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// dsn returns a read-only, immutable SQLite URI for path. go-sqlite3 honours mode=ro only
// when the DSN starts with "file:"; immutable=1 keeps SQLite from creating journal, WAL or
// SHM files beside the input.
func dsn(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return u.String() + "?mode=ro&immutable=1&_query_only=1", nil
}

// sqliteHint turns SQLite's terse corruption messages into ones a user can act on.
func sqliteHint(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "malformed"), strings.Contains(msg, "disk I/O error"), strings.Contains(msg, "database corrupt"):
		return fmt.Errorf("corrupt or truncated SQLite file (%w)", err)
	case strings.Contains(msg, "file is not a database"), strings.Contains(msg, "file is encrypted"):
		return fmt.Errorf(`not an SQLite database (expected an export made with "nsys export --type sqlite")`)
	}
	return err
}

// warnSidecars warns when a -wal or a hot -journal file sits beside the trace. SQLite
// looks for them beside the file a symbolic link names, so the link is resolved first.
// The reader opens the file immutably (it never changes the input or creates files beside
// it), so neither is applied: a WAL's frames are committed changes not yet in the file,
// and a hot journal holds the rollback of a write left unfinished (the file may hold part
// of it). A WAL without frames and a journal with a zeroed header hold nothing.
func warnSidecars(t *Trace, path string) {
	real := resolveLinks(path)
	via := ""
	if real != path && filepath.Base(real) != filepath.Base(path) {
		via = " (the file " + filepath.Base(path) + " links to)"
	}
	if walFrames(real) {
		t.Warnings = append(t.Warnings, fmt.Errorf("%s-wal sits beside the trace%s: it holds committed changes not yet written into the file, and the trace is read without them (open it once with sqlite3 to apply them)", filepath.Base(real), via))
	}
	if hotJournal(real) {
		t.Warnings = append(t.Warnings, fmt.Errorf("%s-journal sits beside the trace%s: a hot journal holds the rollback of a write left unfinished, and the trace is read as it is on disk, which may hold part of that write (open it once with sqlite3 to roll it back)", filepath.Base(real), via))
	}
}

// resolveLinks returns path with its symbolic links resolved, or path when they cannot be.
func resolveLinks(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// walFrames reports whether path-wal holds frames: a WAL header (32 bytes, its magic
// 0x377f0682 or 0x377f0683) and more. SQLite ignores a WAL of another magic.
func walFrames(path string) bool {
	h, size := sidecarHead(path+"-wal", 4)
	m := binary.BigEndian.Uint32(append(h, 0, 0, 0, 0))
	return size > 32 && (m == 0x377f0682 || m == 0x377f0683)
}

// hotJournal reports whether path-journal can be hot: it is not empty and its header is
// not zeroed (SQLite's hasHotJournal reads the first byte; a committed journal of
// journal_mode=PERSIST has its header zeroed).
func hotJournal(path string) bool {
	h, _ := sidecarHead(path+"-journal", 1)
	return len(h) == 1 && h[0] != 0
}

// sidecarHead returns up to the first n bytes of the regular file at path and its size.
func sidecarHead(path string, n int) ([]byte, int64) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0
	}
	b := make([]byte, n)
	k, _ := io.ReadFull(f, b)
	return b[:k], fi.Size()
}
