package render

import (
	"io"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// CSV writes one row per step and category with raw nanoseconds.
func CSV(w io.Writer, r *breakdown.Report) error {
	ew := &errWriter{w: w}
	ew.printf("device,step,phase,start_ns,end_ns,category,exclusive_ns,busy_ns,kernels,launches\n")
	for _, d := range r.Devices {
		for i := range d.Steps {
			s := &d.Steps[i]
			for _, c := range kernelclass.Order {
				ew.printf("%d,%d,%s,%d,%d,%s,%d,%d,%d,%d\n", d.Device, s.Index, s.Phase, s.Start, s.End, c,
					int64(s.Exclusive[c]), int64(s.Busy[c]), s.Kernels[c], s.Launches)
			}
		}
	}
	return ew.err
}
