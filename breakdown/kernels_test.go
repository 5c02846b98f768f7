package breakdown

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestKernelStatsMatchSQL checks the per-name totals over a whole trace against SQLite's
// own count(*) and sum(end-start) grouped by demangled name, on every public trace with
// kernels and every project capture: the numbers nsys stats prints, to the nanosecond;
// both the name-only table and the report's (context rows summed per name).
// Rows the reader drops (zero or reversed timestamps) are left out on both sides.
func TestKernelStatsMatchSQL(t *testing.T) {
	var paths []string
	caps, _ := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.sqlite.gz"))
	for _, gz := range caps {
		path := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(gz), ".gz"))
		nsystest.Gunzip(t, gz, path)
		paths = append(paths, path)
	}
	paths = append(paths, nsystest.PublicTracesIfPresent(t)...)
	checked := 0
	for _, path := range paths {
		want, ok := sqlKernelTotals(t, path)
		if !ok {
			continue
		}
		tr, err := nsys.Open(context.Background(), path, nsys.Options{})
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		// By name (classify --by-name), and the report's table, where context
		// classification gives a name a row per category it decided: summed per name,
		// the same totals.
		rep, err := Summarize(tr, Options{})
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		for what, ks := range map[string][]KernelStat{"by name": KernelStats(tr, Options{}), "report": rep.Kernels} {
			got := map[string]total{}
			for _, k := range ks {
				g := got[k.Name]
				g.n += int64(k.Count)
				g.ns += int64(k.Total)
				got[k.Name] = g
			}
			if len(got) != len(want) {
				t.Errorf("%s (%s): %d distinct names, SQL has %d", filepath.Base(path), what, len(got), len(want))
			}
			for name, w := range want {
				if g := got[name]; g != w {
					t.Errorf("%s (%s): %.60q: count %d total %v, SQL %d %v", filepath.Base(path), what, name, g.n, time.Duration(g.ns), w.n, time.Duration(w.ns))
				}
			}
		}
		checked++
	}
	if checked < len(caps) {
		t.Errorf("checked %d traces, want at least the %d captures", checked, len(caps))
	}
}

type total struct{ n, ns int64 }

func sqlKernelTotals(t *testing.T, path string) (map[string]total, bool) {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT s.value, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
		JOIN StringIds s ON s.id = k.demangledName
		WHERE NOT (k.start = 0 AND k.end = 0) AND k.end >= k.start GROUP BY s.value`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil, false
		}
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]total{}
	for rows.Next() {
		var name string
		var x total
		if err := rows.Scan(&name, &x.n, &x.ns); err != nil {
			t.Fatal(err)
		}
		out[name] = x
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, true
}
