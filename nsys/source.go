package nsys

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"os"
	"runtime"

	"github.com/mattn/go-sqlite3"

	"github.com/stepstat/stepstat/nsys/sqlitefile"
)

// This file opens an export once: the open file is what every reader of it reads (the
// direct reader's map and every SQLite connection), so that a file renamed over, or
// replaced, while it is read gives the report of the file that was opened or an error,
// never a mix of two files.

// A FileID identifies a file by what it is, not by its name: the device and the inode
// (a symbolic or hard link and its target have one).
type FileID struct{ Dev, Ino uint64 }

// IdentifyFile returns the FileID of the file path names (links followed); ok is false
// where it cannot be had (the path is missing, or the system has no inodes).
func IdentifyFile(path string) (FileID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return FileID{}, false
	}
	return fileID(fi)
}

// A source is an export opened once (openSource).
type source struct {
	path  string
	f     *os.File
	id    FileID
	hasID bool
	size  int64
}

// errReplaced is the error of a path that names another file than the one opened: it was
// renamed over, or replaced, while being read.
var errReplaced = errors.New("was replaced while being read (another file now has its name): read it again")

// openSource checks path (checkPath), opens it once (OpenRegular: a FIFO swapped in is
// refused on the open file) and checks the open file's header (checkHeader). Errors name
// path.
func openSource(path string) (*source, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	f, err := OpenRegular(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{path, err}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &Error{path, err}
	}
	s := &source{path: path, f: f, size: fi.Size()}
	s.id, s.hasID = fileID(fi)
	if err := checkHeader(f, path, s.size); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func (s *source) close() { s.f.Close() }

// same checks that path still names the file opened (errReplaced when not).
func (s *source) same() error {
	if !s.hasID {
		return nil
	}
	if id, ok := IdentifyFile(s.path); !ok || id != s.id {
		return errReplaced
	}
	return nil
}

// mapFile returns the file for the direct reader, from the one open file (sqlitefile.File
// does not close it). The -wal beside the file a link names is the one SQLite would apply.
func (s *source) mapFile() (*sqlitefile.File, error) {
	return sqlitefile.OpenFile(s.f, resolveLinks(s.path))
}

// db opens the export read-only through go-sqlite3 (dsn). SQLite opens the file by its
// name: every connection is checked to have opened the file s holds (its name names it
// just before and just after the connection opens), and the connections a read may use
// at once (one per lane, and one more) are all opened here and kept, so that a rename
// during the read opens nothing more. Errors name the file.
func (s *source) db(ctx context.Context) (*sql.DB, error) {
	d, err := dsn(s.path)
	if err != nil {
		return nil, &Error{s.path, err}
	}
	db := sql.OpenDB(&sourceConnector{s: s, dsn: d})
	n := min(max(1, runtime.GOMAXPROCS(0))+1, 64)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close() // back to the pool, kept (MaxIdleConns)
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			db.Close()
			if errors.Is(err, errReplaced) {
				return nil, &Error{s.path, errReplaced}
			}
			return nil, &Error{s.path, sqliteHint(err)}
		}
		conns = append(conns, c)
	}
	return db, nil
}

// A sourceConnector opens SQLite connections to a source's file, each checked to be that
// file (source.same before and after).
type sourceConnector struct {
	s   *source
	dsn string
}

var sqliteDriver = &sqlite3.SQLiteDriver{}

func (c *sourceConnector) Connect(context.Context) (driver.Conn, error) {
	if err := c.s.same(); err != nil {
		return nil, err
	}
	conn, err := sqliteDriver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	if err := c.s.same(); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func (c *sourceConnector) Driver() driver.Driver { return sqliteDriver }
