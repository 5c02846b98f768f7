package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// TestTimelineLanesCapped (issue 34, item 8): one lane per thread and stream made 30,000
// streams a chart of 40,000 rows, 1.12 M px tall (browsers stop near 32 k). The busiest
// 32 streams and 8 host threads are drawn, the others folded into one row each and said;
// every activity and call is still drawn (on its row or the folded one).
func TestTimelineLanesCapped(t *testing.T) {
	const streams, threads = 30_000, 100
	l := breakdown.DeviceTimeline{Device: 0, Step: 3, Start: 0, End: 1_000_000}
	for i := range streams {
		d := nsys.Time(10)
		if i%1000 == 7 { // 30 busy streams, 7, 1007, ...
			d = 50_000
		}
		l.Activities = append(l.Activities, breakdown.TimelineActivity{Start: nsys.Time(i * 20), End: nsys.Time(i*20) + d,
			Stream: nsys.StreamID(i), Category: kernelclass.GEMM, Kind: breakdown.ActivityKernel, Name: "k"})
	}
	for i := range threads {
		l.Calls = append(l.Calls, breakdown.TimelineCall{Start: nsys.Time(i), End: nsys.Time(i + 10 + 1000*(i%10)), Thread: int64(i), Kind: nsys.APILaunch, Name: "cudaLaunchKernel"})
	}
	r := &breakdown.Report{Devices: []breakdown.DeviceReport{{Device: 0}}}
	st := breakdown.StepTimeline{Which: "median", Aligned: -1, Lanes: []breakdown.DeviceTimeline{l}}
	b, err := timelineChart(r, &st, 0)
	if err != nil {
		t.Fatal(err)
	}
	var opt struct {
		Title  struct{ Subtext string }  `json:"title"`
		YAxis  []struct{ Data []string } `json:"yAxis"`
		Series []struct {
			Data []struct{ Value []float64 }
		}
	}
	if err := json.Unmarshal([]byte(b.Option), &opt); err != nil {
		t.Fatal(err)
	}
	labels := opt.YAxis[0].Data
	if len(labels) != 8+1+32+1 {
		t.Fatalf("%d rows, want 8 host threads, their folded row, 32 streams and their folded row:\n%v", len(labels), labels[:min(50, len(labels))])
	}
	if b.Height > 150+28*42 {
		t.Errorf("chart height %d px", b.Height)
	}
	want := []string{"dev 0 host: 92 other threads", "dev 0: 29968 other streams"}
	for _, w := range want {
		if !slicesContains(labels, w) {
			t.Errorf("no row %q in %v", w, labels)
		}
	}
	// The 30 busy streams are drawn, and then 2 of the others (the lowest ids).
	for _, sid := range []string{"dev 0 stream 0", "dev 0 stream 7", "dev 0 stream 29007"} {
		if !slicesContains(labels, sid) {
			t.Errorf("no row %q", sid)
		}
	}
	sub := opt.Title.Subtext
	if !strings.Contains(sub, "29968 streams and 92 host threads folded into one row (the busiest 32 streams and 8 host threads drawn)") {
		t.Errorf("the subtitle does not say what was folded: %q", sub)
	}
	items := 0
	for _, s := range opt.Series {
		for _, d := range s.Data {
			if int(d.Value[0]) >= len(labels) {
				t.Fatalf("an item on row %v of %d", d.Value[0], len(labels))
			}
		}
		items += len(s.Data)
	}
	if items < streams+threads {
		t.Errorf("%d items drawn, want every activity and call (%d)", items, streams+threads)
	}
}

func slicesContains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
