package nsys

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/stepstat/stepstat/nsys/sqlitefile"
)

// Damage the direct reader finds in a table's B-tree or records is not a layout it does
// not handle: SQLite reads such a table as it stands (a child pointer redirected to
// another table's page drops part of the table, a cell pointer past the page reads
// whatever lies beyond it), so falling back to SQLite would answer silently, or not the
// same way twice. The reader asks SQLite's own check of the table (PRAGMA quick_check):
// when it fails too, the read fails, naming the table and the page; only when it passes is
// the table read through SQLite, with a warning in every output.

// A DamageError says that a table of the export is damaged: the direct reader found it
// (Why names the page), or a table read through SQLite refers to rows it lacks (string
// ids not in StringIds), and SQLite's quick_check of the table fails too (Check: its first
// findings).
type DamageError struct {
	Table string
	Why   string // the direct reader's finding, "page 273: cell 5 at offset 65535 outside the page"
	Check string // quick_check's first findings
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%s is damaged: %s; SQLite's quick_check of the table fails too (%s)", e.Table, e.Why, e.Check)
}

// quickCheck runs SQLite's PRAGMA quick_check of table and returns "" when it passes,
// else its first findings (up to three, joined).
func quickCheck(ctx context.Context, db *sql.DB, table string) (string, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	// Cell pointers checked as pages are read: without it, quick_check's scan of the
	// rows reads what lies past a page through a cell pointer past it, and its findings
	// differ from run to run.
	if _, err := conn.ExecContext(ctx, `PRAGMA cell_size_check = ON`); err != nil {
		return "", err
	}
	rows, err := conn.QueryContext(ctx, `PRAGMA quick_check("`+strings.ReplaceAll(table, `"`, `""`)+`")`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var found []string
	for rows.Next() && len(found) < 3 {
		var s string
		if err := rows.Scan(&s); err != nil {
			return "", err
		}
		if s == "ok" {
			return "", nil
		}
		for l := range strings.SplitSeq(s, "\n") { // a row can hold several lines
			if l != "" && !strings.HasPrefix(l, "*** in database ") && len(found) < 3 {
				found = append(found, l)
			}
		}
	}
	if err := rows.Err(); err != nil {
		// SQLite gives up on some damage with an error of its own: that is a finding too.
		found = append(found, err.Error())
	}
	if len(found) == 0 {
		return "", errors.New("quick_check gave no answer")
	}
	return strings.Join(found, "; "), nil
}

// DamageFallbackText is in the warning of a table read through SQLite after the direct
// reader found damage that SQLite's quick_check of the table does not confirm.
const DamageFallbackText = "SQLite's quick_check of the table passes"

// A tableDamage is damage the direct reader found in a table: the table and the
// sqlitefile error (a *sqlitefile.Damaged, so an Unhandled one too).
type tableDamage struct {
	table string
	err   error
}

func (e *tableDamage) Error() string { return e.err.Error() }
func (e *tableDamage) Unwrap() error { return e.err }

// damageIn returns err as a *tableDamage of table when it is damage the direct reader
// found, else nil.
func damageIn(table string, err error) error {
	if err == nil || !sqlitefile.IsDamaged(err) {
		return nil
	}
	var td *tableDamage
	if errors.As(err, &td) {
		return err
	}
	return &tableDamage{table, err}
}

// confirmDamage asks SQLite's quick_check of the damaged table whether it finds the
// damage too: then the read fails with a *DamageError; else it returns the warning of the
// table read through SQLite.
func confirmDamage(ctx context.Context, src *source, td *tableDamage) (warning error, err error) {
	path := src.path
	db, err := src.db(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	check, qerr := quickCheck(ctx, db, td.table)
	if qerr != nil {
		check = qerr.Error() // quick_check could not even run
	}
	if check != "" {
		return nil, &Error{path, &DamageError{Table: td.table, Why: td.err.Error(), Check: check}}
	}
	return fmt.Errorf("%s: the direct reader found damage (%s) but %s: the table is read through SQLite, as SQLite reads it; check its numbers",
		td.table, td.err, DamageFallbackText), nil
}

// testDamage, set by tests only, is damage to report in the B-tree of a table the direct
// reader plans to read (nil: none): the damage SQLite's quick_check does not confirm,
// which no real damage tried here gives.
var testDamage func(table string) error
