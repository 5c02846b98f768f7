package nsys

import (
	"cmp"
	"slices"
	"strings"
)

func (r *reader) readMemops() error {
	for _, tb := range []string{"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} {
		if !r.has(tb) {
			continue
		}
		if err := r.require(tb, "start", "end", "deviceId", "streamId"); err != nil {
			return err
		}
		kind := optCol("copyKind", 0)
		if tb == "CUPTI_ACTIVITY_KIND_MEMSET" {
			kind = constCol(int64(Memset))
		}
		q := &tableQuery{table: tb, cols: []tableCol{needCol("start"), needCol("end"), needCol("deviceId"),
			needCol("streamId"), optCol("correlationId", 0), optCol("bytes", 0), kind, optCol("globalPid", 0)}}
		var drop dropCounter
		before := len(r.t.Memops)
		r.t.Memops = slices.Grow(r.t.Memops, r.maxRowid(tb))
		err := r.scanTable(q, func(v []int64) {
			if !drop.keep(v[0], v[1], v[8]) || !drop.keepDevice(v[2], v[8]) {
				return
			}
			r.t.Memops = append(r.t.Memops, Memop{Start: Time(v[0]), End: Time(v[1]), Device: DeviceID(v[2]),
				Stream: StreamID(v[3]), Correlation: uint32(v[4]), Bytes: v[5], Kind: MemKind(v[6]), Proc: r.proc(v[7])})
		})
		if err != nil {
			return err
		}
		drop.warn(r, strings.ToLower(strings.TrimPrefix(tb, "CUPTI_ACTIVITY_KIND_")), tb, len(r.t.Memops)-before)
	}
	sortUnlessSorted(r.t.Memops, memopLess)
	return nil
}

const graphTable = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"

func (r *reader) readGraphs() error {
	if !r.has(graphTable) {
		return nil
	}
	if err := r.require(graphTable, "start", "end", "deviceId", "streamId"); err != nil {
		return err
	}
	q := &tableQuery{table: graphTable, cols: []tableCol{needCol("start"), needCol("end"), needCol("deviceId"),
		needCol("streamId"), optCol("correlationId", 0), optCol("globalPid", 0)}}
	var drop dropCounter
	err := r.scanTable(q, func(v []int64) {
		if !drop.keep(v[0], v[1], v[6]) || !drop.keepDevice(v[2], v[6]) {
			return
		}
		r.t.Graphs = append(r.t.Graphs, GraphExec{Start: Time(v[0]), End: Time(v[1]), Device: DeviceID(v[2]),
			Stream: StreamID(v[3]), Correlation: uint32(v[4]), Proc: r.proc(v[5])})
	})
	if err != nil {
		return err
	}
	drop.warn(r, "graph trace", graphTable, len(r.t.Graphs))
	slices.SortStableFunc(r.t.Graphs, func(a, b GraphExec) int { return cmp.Compare(a.Start, b.Start) })
	if len(r.t.Graphs) > 0 {
		r.warnf("%d CUDA graph executions were traced at graph level (nsys' default --cuda-graph-trace=graph): the kernels inside them have no rows of their own, so their time is one opaque block per replay (untraced_graph); re-capture with nsys profile --cuda-graph-trace=node to see the kernels", len(r.t.Graphs))
	}
	return nil
}

// memopLess and apiLess are total orders (start first), so unstable sorts are deterministic.
func memopLess(a, b Memop) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Device, b.Device); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Stream, b.Stream); c != 0 {
		return c
	}
	if c := cmp.Compare(a.End, b.End); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Proc, b.Proc); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Correlation, b.Correlation); c != 0 {
		return c
	}
	return cmp.Compare(a.Kind, b.Kind)
}
