package breakdown

import (
	"fmt"
	"github.com/stepstat/stepstat/breakdown/steps"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/nsys"
)

// This file splits a device that runs the work of several processes (two model servers
// sharing a GPU, a draft server beside its target, an embedding model beside an LLM) into
// one timeline per process: each process is its own serving loop, with its own steps, so
// that no step holds kernels of two processes. A device that one process uses (every
// rank of a tensor-parallel job has its own) keeps one timeline, as before.

// A unit is what the steps are found on: a device, or one process's work on a device
// that several processes share.
type unit struct {
	dev    nsys.DeviceID
	proc   nsys.ProcID
	shared bool // the device runs work of two or more processes: only proc's is the unit's
	// sharers counts the processes with work on the device (shared units only).
	sharers int
}

// deviceUnits returns the units of the devices, in device order and, on a shared device,
// by process (ProcID order, which is globalPid order).
func deviceUnits(t *nsys.Trace, devs []nsys.DeviceID) []unit {
	procs := map[nsys.DeviceID]map[nsys.ProcID]bool{}
	mark := func(d nsys.DeviceID, p nsys.ProcID) {
		if procs[d] == nil {
			procs[d] = map[nsys.ProcID]bool{}
		}
		procs[d][p] = true
	}
	for _, st := range t.Sites {
		mark(st.Device, st.Proc)
	}
	for i := range t.Memops {
		mark(t.Memops[i].Device, t.Memops[i].Proc)
	}
	for i := range t.Graphs {
		mark(t.Graphs[i].Device, t.Graphs[i].Proc)
	}
	var out []unit
	for _, d := range devs {
		ps := procs[d]
		if len(ps) < 2 {
			out = append(out, unit{dev: d})
			continue
		}
		keys := make([]nsys.ProcID, 0, len(ps))
		for p := range ps {
			keys = append(keys, p)
		}
		slices.Sort(keys)
		for _, p := range keys {
			out = append(out, unit{dev: d, proc: p, shared: true, sharers: len(keys)})
		}
	}
	return out
}

// PIDOf returns the operating system's process id of process p of t (from its globalPid),
// 0 when the trace does not know it.
func PIDOf(t *nsys.Trace, p nsys.ProcID) int64 {
	if int(p) >= len(t.Procs) {
		return 0
	}
	return (t.Procs[p] >> 24) & 0xFFFFFF
}

// mainProc returns the process with the most kernels on the timeline (ties: the lower id).
func mainProc(t *nsys.Trace, tl *steps.Timeline) nsys.ProcID {
	if tl.OneProc {
		return tl.Proc
	}
	n := map[nsys.ProcID]int{}
	for _, st := range t.Sites {
		if st.Device == tl.Dev {
			n[st.Proc]++ // sites, not kernels: one pass over the few sites, not the kernels
		}
	}
	best, bn := nsys.ProcID(0), -1
	for p, c := range n {
		if c > bn || (c == bn && p < best) {
			best, bn = p, c
		}
	}
	return best
}

// sharedDevices reports whether two of the reports are of one device (processes sharing
// it, deviceUnits).
func sharedDevices(drs []DeviceReport) bool {
	for i := range drs {
		if drs[i].Processes > 1 {
			return true
		}
	}
	return false
}

// Name names the device report as the outputs do: "device 0", and "device 0 pid 1234" for
// one process of a device that several share.
func (d *DeviceReport) Name() string {
	if d.Processes > 1 {
		return fmt.Sprintf("device %d pid %d", d.Device, d.PID)
	}
	return fmt.Sprintf("device %d", d.Device)
}

// processWarning is a warning of one process's loop on a shared device: its text names
// the process after the device ("device 0 pid 1234: ..."); errors.As still finds the
// warning it wraps.
type processWarning struct {
	err  error
	name string // DeviceReport.Name
	dev  string // "device N"
}

func (w *processWarning) Error() string {
	msg := w.err.Error()
	if rest, ok := strings.CutPrefix(msg, w.dev+":"); ok {
		return w.name + ":" + rest
	}
	return w.name + ": " + msg
}

func (w *processWarning) Unwrap() error { return w.err }

// nameProcess makes the device report's warnings name its process, and marks its steps
// with it (on a shared device).
func nameProcess(dr *DeviceReport) {
	if dr.Processes < 2 {
		return
	}
	for i := range dr.Steps {
		dr.Steps[i].PID = dr.PID
	}
	dev := fmt.Sprintf("device %d", dr.Device)
	for i, w := range dr.Warnings {
		dr.Warnings[i] = &processWarning{err: w, name: dr.Name(), dev: dev}
	}
}
