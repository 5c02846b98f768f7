package main

import (
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestGraphLevelSteps: captures traced with --cuda-graph-trace=graph (one opaque replay an
// iteration). Every replay lies in a step (the last one was left outside when the eager
// work that follows each replay was missing after it), and no step is a sliver of setup
// work before the first replay (cs336a2-zx3xyy's 0.31 ms first step made the mean 703 ms
// against 781 ms for each of its 10 replays).
func TestGraphLevelSteps(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, n := range []string{"engine-graph-level", "engine-graph-level-decode", "hf-qwen3moe-compile-graphlevel"} {
		files = append(files, nsystest.GunzipInto(t, nsystest.CapturePath(n), dir))
	}
	if _, err := nsystest.CorpusDir(); err == nil {
		files = append(files, nsystest.PublicTrace(t, "cs336a2-zx3xyy__result_2_7B_compile_ro.sqlite"),
			nsystest.TruthCapture(t, "hf_graph_default", dir))
	} else {
		t.Logf("corpus captures left out: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			db, err := sql.Open("sqlite3", "file:"+f+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			rows, err := db.Query(`SELECT start FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE ORDER BY start`)
			if err != nil {
				t.Fatal(err)
			}
			var replays []int64
			for rows.Next() {
				var s int64
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				replays = append(replays, s)
			}
			rows.Close()
			db.Close()
			if len(replays) == 0 {
				t.Fatal("no graph-level replays")
			}
			rep := reportOf(t, f)
			d := rep.Devices[0]
			in := 0
			var walls []int64
			for _, s := range d.Steps {
				walls = append(walls, s.EndNS-s.StartNS)
				for _, r := range replays {
					if r >= s.StartNS && r < s.EndNS {
						in++
					}
				}
			}
			if in != len(replays) {
				t.Errorf("%d of %d graph replays in steps", in, len(replays))
			}
			med := slices.Sorted(slices.Values(walls))[len(walls)/2]
			for i, w := range walls {
				if 10*w < med {
					t.Errorf("step %d lasts %d ns, under a tenth of the median step %d ns: a sliver, not an iteration", i, w, med)
				}
			}
		})
	}
}
