package nsys

import (
	"slices"
	"strings"
)

// CaptureOptions are the META_DATA_CAPTURE entries that say how nsys recorded a capture and
// change what it costs the program (its own overhead on the step): the traces collected,
// CPU sampling, backtraces, thread-state and context-switch tracing, GPU memory and page
// fault tracing, how CUDA graphs are traced, and whether forked children are traced.
// Trace.Capture keeps these only; CAPTURE_EVENT_TYPE (one row per trace) is one entry, its
// values sorted and joined by ",".
var CaptureOptions = []string{
	"CAPTURE_EVENT_TYPE",
	"RATE_HZ",
	"SAMPLE_ALL_TASKS",
	"SHOW_BACKTRACE",
	"OS_RUNTIME_OPTIONS:COLLECT_BACKTRACES",
	"OS_RUNTIME_OPTIONS:BACKTRACES_THRESHOLD_NS",
	"COLLECT_THREAD_STATE_TRACE",
	"COLLECT_GPU_CTX_SW_TRACE",
	"TRACE_AFTER_FORK_BEFORE_EXEC",
	"PROCESS_0:CUDA_GRAPH_TRACE_OPTIONS:MODE",
	"PROCESS_0:COLLECT_GPU_MEMORY_USAGE",
	"PROCESS_0:COLLECT_UVM_CPU_PAGE_FAULTS",
	"PROCESS_0:COLLECT_UVM_GPU_PAGE_FAULTS",
}

// readCapture fills Trace.Capture from META_DATA_CAPTURE (CaptureOptions, by name). An
// export without the table, or one whose query fails, has no capture options: not an
// error (older exports record fewer).
func (r *reader) readCapture() {
	if !r.has(captureTable) || !r.hasCol(captureTable, "name") || !r.hasCol(captureTable, "value") {
		return
	}
	q := `SELECT name, COALESCE(value, '') FROM ` + captureTable + ` WHERE name IN ('` + strings.Join(CaptureOptions, "','") + `') ORDER BY rowid`
	rows, err := r.db.QueryContext(r.ctx, q)
	if err != nil {
		return
	}
	defer rows.Close()
	vals := map[string][]string{}
	for rows.Next() {
		var k, v string
		if rows.Scan(&k, &v) != nil {
			return
		}
		if !slices.Contains(vals[k], v) {
			vals[k] = append(vals[k], v)
		}
	}
	if rows.Err() != nil {
		return
	}
	for _, k := range CaptureOptions {
		if vs, ok := vals[k]; ok {
			slices.Sort(vs)
			r.t.Capture = append(r.t.Capture, EnvVar{Name: k, Value: strings.Join(vs, ",")})
		}
	}
}
