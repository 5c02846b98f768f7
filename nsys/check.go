package nsys

import "fmt"

// CheckValid checks the invariants Open promises, like pprof's Profile.CheckValid: every
// kernel, memory operation, graph execution and API call ends at or after its start;
// each list is sorted by start (kernels then by device and stream); name, text and process
// indices are in range; and Devices, sorted by ID without duplicates, lists every device
// that has activity and no other. NVTX ranges may be open (End < Start). It returns the first problem
// found.
func (t *Trace) CheckValid() error {
	devs := make(map[DeviceID]bool, len(t.Devices)) // true once the device has activity
	for i, d := range t.Devices {
		if i > 0 && t.Devices[i-1].ID >= d.ID {
			return fmt.Errorf("device %d: ids not sorted and unique (%d after %d)", i, d.ID, t.Devices[i-1].ID)
		}
		devs[d.ID] = false
	}
	device := func(what string, i int, d DeviceID) error {
		if _, ok := devs[d]; !ok {
			return fmt.Errorf("%s %d: device %d not in Devices", what, i, d)
		}
		devs[d] = true
		return nil
	}
	proc := func(what string, i int, p ProcID) error {
		if int(p) >= len(t.Procs) {
			return fmt.Errorf("%s %d: proc %d out of range (%d procs)", what, i, p, len(t.Procs))
		}
		return nil
	}
	span := func(what string, i int, s, e Time) error {
		if e < s {
			return fmt.Errorf("%s %d: end %d before start %d", what, i, e, s)
		}
		return nil
	}
	for i, st := range t.Sites {
		if int(st.Name) >= len(t.Names) {
			return fmt.Errorf("site %d: name %d out of range (%d names)", i, st.Name, len(t.Names))
		}
		if err := device("site", i, st.Device); err != nil {
			return err
		}
		if err := proc("site", i, st.Proc); err != nil {
			return err
		}
	}
	for i, k := range t.Kernels {
		if err := span("kernel", i, k.Start, k.End); err != nil {
			return err
		}
		if int(k.Site) >= len(t.Sites) {
			return fmt.Errorf("kernel %d: site %d out of range (%d sites)", i, k.Site, len(t.Sites))
		}
		if i > 0 && kernelOrder(t.Sites)(t.Kernels[i-1], k) > 0 {
			return fmt.Errorf("kernel %d: not sorted by start, device, stream", i)
		}
	}
	for i, m := range t.Memops {
		if err := span("memop", i, m.Start, m.End); err != nil {
			return err
		}
		if i > 0 && t.Memops[i-1].Start > m.Start {
			return fmt.Errorf("memop %d: not sorted by start", i)
		}
		if err := device("memop", i, m.Device); err != nil {
			return err
		}
		if err := proc("memop", i, m.Proc); err != nil {
			return err
		}
	}
	for i, g := range t.Graphs {
		if err := span("graph execution", i, g.Start, g.End); err != nil {
			return err
		}
		if i > 0 && t.Graphs[i-1].Start > g.Start {
			return fmt.Errorf("graph execution %d: not sorted by start", i)
		}
		if err := device("graph execution", i, g.Device); err != nil {
			return err
		}
		if err := proc("graph execution", i, g.Proc); err != nil {
			return err
		}
	}
	for _, d := range t.Devices {
		if !devs[d.ID] {
			return fmt.Errorf("device %d has no activity", d.ID)
		}
	}
	for i, c := range t.APICalls {
		if err := span("API call", i, c.Start, c.End); err != nil {
			return err
		}
		if i > 0 && t.APICalls[i-1].Start > c.Start {
			return fmt.Errorf("API call %d: not sorted by start", i)
		}
		if int(c.Caller) >= len(t.Callers) {
			return fmt.Errorf("API call %d: caller %d out of range (%d callers)", i, c.Caller, len(t.Callers))
		}
	}
	for i, w := range t.Callers {
		if int(w.Name) >= len(t.APINames) {
			return fmt.Errorf("caller %d: name %d out of range (%d names)", i, w.Name, len(t.APINames))
		}
		if w.Kind == APIOther {
			return fmt.Errorf("caller %d: kind %v is not kept", i, w.Kind)
		}
		if err := proc("caller", i, w.Proc); err != nil {
			return err
		}
	}
	for i, r := range t.Ranges {
		if i > 0 && t.Ranges[i-1].Start > r.Start {
			return fmt.Errorf("range %d: not sorted by start", i)
		}
		if int(r.Text) >= len(t.RangeTexts) {
			return fmt.Errorf("range %d: text %d out of range (%d texts)", i, r.Text, len(t.RangeTexts))
		}
		if r.Depth < 0 {
			return fmt.Errorf("range %d: negative depth %d", i, r.Depth)
		}
		if err := proc("range", i, r.Proc); err != nil {
			return err
		}
	}
	return nil
}
