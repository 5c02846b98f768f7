package nsys

import (
	"strconv"
	"strings"
)

// The query builder: what a table reader asks of one table (a tableQuery: its integer
// columns, a filter, a text column), read by the direct reader (direct.go) or, as the SQL
// query built here, by SQLite (scan.go); both give the same rows.

// A tableCol is a column a table read asks for: a column the table must have (opt
// false), one it may have (opt: COALESCE(name, def), or the constant def when the table
// lacks it), or a constant (name "").
type tableCol struct {
	name string
	def  int64
	opt  bool
}

func needCol(name string) tableCol           { return tableCol{name: name} }
func optCol(name string, def int64) tableCol { return tableCol{name: name, def: def, opt: true} }
func constCol(v int64) tableCol              { return tableCol{def: v, opt: true} }

// Every table read's first columns are start and end, then deviceId where it reads one:
// dropCounter.keep reads the bits colStart and colEnd of a row's mask, keepDevice the bit
// colDevice. Each reader names its columns' places after these (kernelStart, ...) and
// builds its column list keyed by those names (kernelQuery, ...), so that a row's v[i] is
// the column the list puts at i (TestColumnLists).
const (
	colStart  = 0
	colEnd    = 1
	colDevice = 2
)

// A tableQuery is the integer columns read of one table, optionally only the rows whose
// column in has a value kept[value] (WHERE in IN (...)).
type tableQuery struct {
	table string
	cols  []tableCol
	in    string
	kept  []bool
	// text, when set, is a TEXT column also read (COALESCE(text, '')): given to the row
	// function through directTable.text. Only for tables read in one part (scanTable).
	text string
	// nullsOnly: the mask is read as NULLs only (sqlitefile.Columns.NullsOnly).
	nullsOnly bool
}

// sql returns the query for SQLite, for part p of the table.
func (q *tableQuery) sql(r *reader, p part) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range q.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case c.name == "":
			b.WriteString(itoa(c.def))
		case c.opt:
			b.WriteString(r.colOr(q.table, c.name, itoa(c.def)))
		default:
			b.WriteString(c.name)
		}
	}
	b.WriteString(" FROM " + q.table)
	if q.in != "" {
		b.WriteString(" WHERE " + q.in + " IN (")
		n := 0
		for v, ok := range q.kept {
			if ok {
				if n > 0 {
					b.WriteByte(',')
				}
				b.WriteString(itoa(int64(v)))
				n++
			}
		}
		b.WriteString(")" + p.and())
	} else {
		b.WriteString(p.where())
	}
	return b.String()
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
