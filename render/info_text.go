package render

import (
	"io"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/render/schema"
)

// InfoText writes the info model as text.
// Lines longer than MaxTextLine (a warning, a long path or GPU name) are wrapped.
func InfoText(w io.Writer, in *schema.Info) error {
	var buf strings.Builder
	tw := &errWriter{w: &buf}
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
	if tw.err != nil {
		return tw.err
	}
	_, err := io.WriteString(w, wrapText(buf.String(), MaxTextLine))
	return err
}
