package breakdown_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/nsys/nsystest"
)

// TestWholeProcessLifetime: engine-lifetime is a whole process profiled without a capture
// range (start-up and 2.37 GB of weights loaded, 5 eager warm-up iterations, graph capture
// of 4 buckets, 37 served iterations, shutdown). The steps are the served loop's 37 alone
// (TestTruthCaptures checks their phases), the first served iteration its own step (it was
// swallowed by a 449 ms capture step), and the spans before and after the loop are named
// with the times the workload recorded (its phases' trace_ns, within 10 ms: the workload
// stamps its phases on the host, the spans start at the GPU's first work).
func TestWholeProcessLifetime(t *testing.T) {
	truthPath := filepath.Join("..", "testdata", "traces", "engine-lifetime.truth.json")
	data, err := os.ReadFile(truthPath)
	if err != nil {
		t.Fatal(err)
	}
	var truth struct {
		Phases []struct {
			Phase   string   `json:"phase"`
			TraceNS [2]int64 `json:"trace_ns"`
			Buckets []int    `json:"buckets"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(data, &truth); err != nil {
		t.Fatal(err)
	}
	path := nsystest.GunzipInto(t, nsystest.CapturePath("engine-lifetime"), t.TempDir())
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(markerDelete)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := nsys.Open(context.Background(), path, nsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := breakdown.Summarize(tr, breakdown.Options{Phase: breakdown.AllSteps})
	if err != nil {
		t.Fatal(err)
	}
	d := &rep.Devices[0]
	if len(d.Steps) != 37 {
		t.Errorf("%d steps, want the 37 served iterations", len(d.Steps))
	}
	for _, s := range d.Steps {
		if s.GraphCapture {
			t.Errorf("step %d captures graphs: graph capture before serving is no step of the loop", s.Index)
		}
	}
	serve := map[string][2]int64{}
	for _, p := range truth.Phases {
		serve[p.Phase] = p.TraceNS
	}
	if len(d.Steps) > 0 {
		if first := int64(d.Steps[0].Start); first < serve["serve"][0] || first > serve["serve"][0]+int64(10*time.Millisecond) {
			t.Errorf("first step starts at %d ns, want the served loop's start %d", first, serve["serve"][0])
		}
	}
	want := []struct {
		kind, truth string
		iterations  int
	}{{breakdown.SpanLoad, "load", 0}, {breakdown.SpanWarmUp, "warm-up", 5}, {breakdown.SpanCapture, "graph-capture", 1}, {breakdown.SpanShutdown, "shutdown", 0}}
	if len(d.Lifetime) != len(want) {
		t.Fatalf("spans outside the loop %+v, want load, warm_up, capture, shutdown", d.Lifetime)
	}
	near := func(a nsys.Time, b int64) bool {
		x := int64(a) - b
		return x < int64(10*time.Millisecond) && x > -int64(10*time.Millisecond)
	}
	for i, w := range want {
		s := d.Lifetime[i]
		tn := serve[w.truth]
		if s.Kind != w.kind || !near(s.Start, tn[0]) || !near(s.End, tn[1]) || s.Iterations != w.iterations {
			t.Errorf("span %d: %s [%d, %d) %d iterations, want %s [%d, %d) %d", i, s.Kind, s.Start, s.End, s.Iterations, w.kind, tn[0], tn[1], w.iterations)
		}
	}
	if b := d.Lifetime[0].Bytes; b < 2_300_000_000 || b > 2_400_000_000 {
		t.Errorf("load copied %d bytes, want the 2.37 GB of weights and shards", b)
	}
}
