package nsys

import "fmt"

// CheckValid checks the invariants Open promises, like pprof's Profile.CheckValid: every
// kernel, memory operation, graph execution and API call ends at or after its start;
// each list is sorted by start (kernels then by device and stream); name, text and process
// indices are in range; and Devices, sorted by ID without duplicates, lists every device
// that has activity and no other. NVTX ranges may be open (End < Start). It returns the first problem
// found.
func (t *Trace) CheckValid() error {
	c := &validity{t: t, devs: make(map[DeviceID]bool, len(t.Devices))}
	for i, d := range t.Devices {
		if i > 0 && t.Devices[i-1].ID >= d.ID {
			return fmt.Errorf("device %d: ids not sorted and unique (%d after %d)", i, d.ID, t.Devices[i-1].ID)
		}
		c.devs[d.ID] = false
	}
	for _, check := range []func() error{c.sites, c.kernels,
		func() error {
			return checkOnDevices(c, "memop", t.Memops, func(m *Memop) (Time, Time, DeviceID, ProcID) { return m.Start, m.End, m.Device, m.Proc })
		},
		func() error {
			return checkOnDevices(c, "graph execution", t.Graphs, func(g *GraphExec) (Time, Time, DeviceID, ProcID) {
				return g.Start, g.End, g.Device, g.Proc
			})
		},
		c.active, c.apiCalls, c.callers, c.ranges} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validity is CheckValid's state: the trace, and which devices have activity so far.
type validity struct {
	t    *Trace
	devs map[DeviceID]bool // true once the device has activity
}

func (c *validity) device(what string, i int, d DeviceID) error {
	if _, ok := c.devs[d]; !ok {
		return fmt.Errorf("%s %d: device %d not in Devices", what, i, d)
	}
	c.devs[d] = true
	return nil
}

func (c *validity) proc(what string, i int, p ProcID) error {
	if int(p) >= len(c.t.Procs) {
		return fmt.Errorf("%s %d: proc %d out of range (%d procs)", what, i, p, len(c.t.Procs))
	}
	return nil
}

func span(what string, i int, s, e Time) error {
	if e < s {
		return fmt.Errorf("%s %d: end %d before start %d", what, i, e, s)
	}
	return nil
}

func (c *validity) sites() error {
	for i, st := range c.t.Sites {
		if int(st.Name) >= len(c.t.Names) {
			return fmt.Errorf("site %d: name %d out of range (%d names)", i, st.Name, len(c.t.Names))
		}
		if err := c.device("site", i, st.Device); err != nil {
			return err
		}
		if err := c.proc("site", i, st.Proc); err != nil {
			return err
		}
	}
	return nil
}

func (c *validity) kernels() error {
	t := c.t
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
	return nil
}

// checkOnDevices checks a list of activities on devices (what: memop, graph execution):
// spans, start order, devices and processes.
func checkOnDevices[T any](c *validity, what string, xs []T, get func(*T) (start, end Time, dev DeviceID, proc ProcID)) error {
	var last Time
	for i := range xs {
		s, e, d, p := get(&xs[i])
		if err := span(what, i, s, e); err != nil {
			return err
		}
		if i > 0 && last > s {
			return fmt.Errorf("%s %d: not sorted by start", what, i)
		}
		last = s
		if err := c.device(what, i, d); err != nil {
			return err
		}
		if err := c.proc(what, i, p); err != nil {
			return err
		}
	}
	return nil
}

// active checks that every device listed has activity.
func (c *validity) active() error {
	for _, d := range c.t.Devices {
		if !c.devs[d.ID] {
			return fmt.Errorf("device %d has no activity", d.ID)
		}
	}
	return nil
}

func (c *validity) apiCalls() error {
	t := c.t
	for i, a := range t.APICalls {
		if err := span("API call", i, a.Start, a.End); err != nil {
			return err
		}
		if i > 0 && t.APICalls[i-1].Start > a.Start {
			return fmt.Errorf("API call %d: not sorted by start", i)
		}
		if int(a.Caller) >= len(t.Callers) {
			return fmt.Errorf("API call %d: caller %d out of range (%d callers)", i, a.Caller, len(t.Callers))
		}
	}
	return nil
}

func (c *validity) callers() error {
	for i, w := range c.t.Callers {
		if int(w.Name) >= len(c.t.APINames) {
			return fmt.Errorf("caller %d: name %d out of range (%d names)", i, w.Name, len(c.t.APINames))
		}
		if w.Kind == APIOther {
			return fmt.Errorf("caller %d: kind %v is not kept", i, w.Kind)
		}
		if err := c.proc("caller", i, w.Proc); err != nil {
			return err
		}
	}
	return nil
}

func (c *validity) ranges() error {
	t := c.t
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
		if err := c.proc("range", i, r.Proc); err != nil {
			return err
		}
	}
	return nil
}
