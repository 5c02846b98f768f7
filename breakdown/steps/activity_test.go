package steps

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestIndexRows (issue 41, item 8): timelines of a trace of two GPUs indexed by device
// (IndexRows: each device's passes walk its own rows, not every device's) give every pass
// the activities the unindexed walk gives, in the same order, from any start.
func TestIndexRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tp2.sqlite")
	nsystest.Gunzip(t, filepath.Join("..", "..", "testdata", "traces", "tp2-moe-eager.sqlite.gz"), path)
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	if len(tr.Devices) < 2 {
		t.Fatalf("%d devices, want 2", len(tr.Devices))
	}
	cats := make([]kernelclass.Category, len(tr.Names))
	var tls []*Timeline
	for _, d := range tr.Devices {
		tls = append(tls, &Timeline{Trace: tr, Dev: d.ID, Cats: cats})
	}
	walk := func(tl *Timeline, from nsys.Time) []Activity {
		var out []Activity
		tl.EachFrom(from, func(a *Activity) bool { out = append(out, *a); return true })
		return out
	}
	start, end, _ := tr.Span()
	froms := []nsys.Time{-1 << 62, start, start + (end-start)/3, end}
	want := map[int][][]Activity{}
	for id, tl := range tls {
		for _, f := range froms {
			want[id] = append(want[id], walk(tl, f))
		}
	}
	IndexRows(tls)
	for id, tl := range tls {
		if tl.rows == nil {
			t.Fatalf("device %d not indexed", id)
		}
		for i, f := range froms {
			got := walk(tl, f)
			if len(got) != len(want[id][i]) || len(got) == 0 && i < 2 {
				t.Fatalf("device %d from %d: %d activities indexed, %d walking every row", id, f, len(got), len(want[id][i]))
			}
			for k := range got {
				if got[k] != want[id][i][k] {
					t.Fatalf("device %d from %d: activity %d indexed %+v, walking every row %+v", id, f, k, got[k], want[id][i][k])
				}
			}
		}
	}
}
