package render

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/nsys"
)

// NewInfo builds the info model of t. It also adds the warnings that matter for analysis.
func NewInfo(t *nsys.Trace) *Info {
	in := &Info{Schema: InfoSchema, Path: t.Path, NsysVersion: t.Meta.NsysVersion,
		ExportSchema: t.Meta.SchemaVersion, MetaTable: t.Meta.MetaTable,
		Devices: []InfoDevice{}, Tables: []InfoTable{}, Warnings: []string{}}
	if s, e, ok := t.Span(); ok {
		in.StartNS, in.EndNS, in.DurationNS = int64(s), int64(e), int64(e-s)
	}
	byDev := map[nsys.DeviceID]*InfoDevice{}
	for _, d := range t.Devices {
		in.Devices = append(in.Devices, InfoDevice{Device: int(d.ID), GPU: d.Name})
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
		in.Tables = append(in.Tables, InfoTable{tb.Name, tb.Rows})
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
	in.Reads = []InfoRead{}
	for _, rd := range t.Reads {
		in.Reads = append(in.Reads, InfoRead{Table: rd.Table, Direct: rd.Direct, Why: rd.Why})
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

// InfoText writes the info model as text.
func InfoText(w io.Writer, in *Info) error {
	tw := &errWriter{w: w}
	tw.printf("Trace:    %s\n", TerminalSafe(in.Path))
	tw.printf("Nsight:   %s (export schema %s, %s)\n", TerminalSafe(orNA(in.NsysVersion)), TerminalSafe(orNA(in.ExportSchema)), orDefault(in.MetaTable, "no metadata table"))
	if in.DurationNS > 0 {
		tw.printf("GPU span: %s (%d .. %d ns)\n", breakdown.FormatDuration(in.DurationNS), in.StartNS, in.EndNS)
	}
	tw.printf("NVTX:     %d ranges\nCUDA API: %d launch/sync/copy calls, %d graph launches\n", in.NVTXRanges, in.APICalls, in.GraphLaunches)
	var direct []string
	for _, rd := range in.Reads {
		if rd.Direct {
			direct = append(direct, strings.TrimPrefix(rd.Table, "CUPTI_ACTIVITY_KIND_"))
		}
	}
	if len(direct) > 0 {
		tw.printf("Reader:   %s decoded from the file directly\n", strings.Join(direct, ", "))
	}
	for _, rd := range in.Reads {
		if !rd.Direct {
			tw.printf("Reader:   %s through SQLite: %s\n", rd.Table, TerminalSafe(rd.Why))
		}
	}
	// "GPU time" is kernel time plus the time of graph executions traced at graph level,
	// whose kernels have no rows: a CUDA-graph capture's work is mostly the latter.
	tw.printf("\n%6s  %8s  %11s  %9s  %6s  %6s  %s\n", "device", "kernels", "graph execs", "GPU time", "memcpy", "memset", "gpu")
	for _, d := range in.Devices {
		tw.printf("%6d  %8d  %11d  %9s  %6d  %6d  %s\n", d.Device, d.Kernels, d.GraphExecs, breakdown.FormatDuration(d.KernelNS+d.GraphNS), d.Memcpy, d.Memset, TerminalSafe(orNA(d.GPU)))
	}
	tw.printf("%6s  GPU time = kernel time + graph replays traced at graph level (whose kernels have no rows)\n", "")
	if len(in.Devices) == 0 {
		tw.printf("%6s  (no GPU activity)\n", "-")
	}
	tw.printf("\n%10s  %s\n", "rows", "table")
	// The export's constant tables (ENUM_*) take one line, where the first of them sorts.
	enums, enumRows := 0, int64(0)
	for _, tb := range in.Tables {
		if strings.HasPrefix(tb.Name, "ENUM_") {
			enums++
			enumRows += max(tb.Rows, 0)
		}
	}
	shown := false
	for _, tb := range in.Tables {
		if strings.HasPrefix(tb.Name, "ENUM_") {
			if !shown {
				tw.printf("%10d  ENUM_* (%d tables of the export's constants; --format json lists each)\n", enumRows, enums)
				shown = true
			}
			continue
		}
		tw.printf("%10d  %s\n", tb.Rows, TerminalSafe(tb.Name))
	}
	for i, wn := range in.Warnings {
		if i == 0 {
			tw.printf("\nWarnings:\n")
		}
		tw.printf("  %d. %s\n", i+1, TerminalSafe(wn))
	}
	return tw.err
}

// InfoJSON writes the info model as indented JSON.
func InfoJSON(w io.Writer, in *Info) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(in)
}

// errWriter is the writer of every text output; it keeps the first error.
type errWriter struct {
	w   io.Writer
	err error
}

// printf writes format (trusted, this package's own) with its string and error arguments
// passed through TerminalSafe: the one escaping path of untrusted text into text output.
func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	var safe []any // a copy, made only when an argument needs escaping
	for i, a := range args {
		var s string
		switch v := a.(type) {
		case string:
			s = v
		case error:
			s = v.Error()
		default:
			continue
		}
		if _, isErr := a.(error); !isErr && terminalClean(s) {
			continue
		}
		if safe == nil {
			safe = append([]any(nil), args...)
		}
		safe[i] = TerminalSafe(s)
	}
	if safe != nil {
		args = safe
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}

func orNA(s string) string { return orDefault(s, "n/a") }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
