package render

import (
	"sort"

	"github.com/stepstat/stepstat/nsys"
	"github.com/stepstat/stepstat/render/schema"
)

// NewInfo builds the info model of t. It also adds the warnings that matter for analysis.
func NewInfo(t *nsys.Trace) *schema.Info {
	in := &schema.Info{Schema: schema.InfoSchema, Path: t.Path, NsysVersion: t.Meta.NsysVersion,
		ExportSchema: t.Meta.SchemaVersion, MetaTable: t.Meta.MetaTable,
		Devices: []schema.InfoDevice{}, Tables: []schema.InfoTable{}, Warnings: []string{}}
	if s, e, ok := t.Span(); ok {
		in.StartNS, in.EndNS, in.DurationNS = int64(s), int64(e), int64(e-s)
	}
	byDev := map[nsys.DeviceID]*schema.InfoDevice{}
	for _, d := range t.Devices {
		in.Devices = append(in.Devices, schema.InfoDevice{Device: int(d.ID), GPU: d.Name})
	}
	for i := range in.Devices {
		byDev[nsys.DeviceID(in.Devices[i].Device)] = &in.Devices[i]
	}
	for _, k := range t.Kernels {
		d := byDev[t.Sites[k.Site].Device]
		d.Kernels++
		d.KernelNS += int64(k.End - k.Start)
	}
	for _, m := range t.Memops {
		if m.Kind == nsys.Memset {
			byDev[m.Device].Memset++
		} else {
			byDev[m.Device].Memcpy++
		}
	}
	for _, g := range t.Graphs {
		byDev[g.Device].GraphExecs++
		byDev[g.Device].GraphNS += int64(g.End - g.Start)
	}
	for _, tb := range t.Tables {
		in.Tables = append(in.Tables, schema.InfoTable{Name: tb.Name, Rows: tb.Rows})
	}
	sort.Slice(in.Tables, func(i, j int) bool { return in.Tables[i].Name < in.Tables[j].Name })
	in.NVTXRanges = len(t.Ranges)
	for _, c := range t.APICalls {
		switch t.CallerOf(c).Kind {
		case nsys.APIGraphLaunch:
			in.GraphLaunches++
			in.APICalls++
		case nsys.APILaunch, nsys.APISync, nsys.APIMemcpy, nsys.APIMemset:
			in.APICalls++ // the module, memory-management and other calls kept for idle attribution are not counted
		}
	}
	in.Reads = []schema.InfoRead{}
	for _, rd := range t.Reads {
		in.Reads = append(in.Reads, schema.InfoRead{Table: rd.Table, Direct: rd.Direct, Why: rd.Why})
	}
	for _, w := range t.Warnings {
		in.Warnings = append(in.Warnings, w.Error())
	}
	if !t.HasGPUActivity() {
		in.Warnings = append(in.Warnings, nsys.ErrNoGPUActivity.Error())
	}
	if len(t.Ranges) == 0 {
		in.Warnings = append(in.Warnings, "no NVTX ranges: steps will be found from graph launches, synchronisation or periodicity")
	}
	return in
}
