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
		var drop dropCounter
		before := len(r.t.Memops)
		r.t.Memops = slices.Grow(r.t.Memops, r.maxRowid(tb))
		err := r.scanTable(memopQuery(tb), func(v []int64) {
			bad := v[memopCols]
			if !drop.keep(v[memopStart], v[memopEnd], bad) || !drop.keepDevice(v[memopDevice], bad) {
				return
			}
			r.t.Memops = append(r.t.Memops, Memop{Start: Time(v[memopStart]), End: Time(v[memopEnd]),
				Device: DeviceID(v[memopDevice]), Stream: StreamID(v[memopStream]), Correlation: uint32(v[memopCorrelation]),
				Bytes: v[memopBytes], Kind: MemKind(v[memopKind]), Proc: r.proc(v[memopPID])})
		})
		if err != nil {
			return err
		}
		drop.warn(r, strings.ToLower(strings.TrimPrefix(tb, "CUPTI_ACTIVITY_KIND_")), tb, len(r.t.Memops)-before)
	}
	sortUnlessSorted(r.t.Memops, memopOrder)
	return nil
}

// The memcpy and memset tables' columns, by their place in a row of memopQuery;
// memopCols, their number, is the place of the row's mask.
const (
	memopStart  = colStart
	memopEnd    = colEnd
	memopDevice = colDevice
	memopStream = iota
	memopCorrelation
	memopBytes
	memopKind // copyKind; for memsets, the constant Memset
	memopPID
	memopCols
)

// memopQuery is the read of table tb, the memcpy or the memset table.
func memopQuery(tb string) *tableQuery {
	kind := optCol("copyKind", 0)
	if tb == "CUPTI_ACTIVITY_KIND_MEMSET" {
		kind = constCol(int64(Memset))
	}
	cols := [memopCols]tableCol{
		memopStart:       needCol("start"),
		memopEnd:         needCol("end"),
		memopDevice:      needCol("deviceId"),
		memopStream:      needCol("streamId"),
		memopCorrelation: optCol("correlationId", 0),
		memopBytes:       optCol("bytes", 0),
		memopKind:        kind,
		memopPID:         optCol("globalPid", 0),
	}
	return &tableQuery{table: tb, cols: cols[:]}
}

const graphTable = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"

// The graph trace table's columns, by their place in a row of graphQuery; graphCols,
// their number, is the place of the row's mask.
const (
	graphStart  = colStart
	graphEnd    = colEnd
	graphDevice = colDevice
	graphStream = iota
	graphCorrelation
	graphPID
	graphCols
)

// graphQuery is the read of the graph trace table.
func graphQuery() *tableQuery {
	cols := [graphCols]tableCol{
		graphStart:       needCol("start"),
		graphEnd:         needCol("end"),
		graphDevice:      needCol("deviceId"),
		graphStream:      needCol("streamId"),
		graphCorrelation: optCol("correlationId", 0),
		graphPID:         optCol("globalPid", 0),
	}
	return &tableQuery{table: graphTable, cols: cols[:]}
}

func (r *reader) readGraphs() error {
	if !r.has(graphTable) {
		return nil
	}
	if err := r.require(graphTable, "start", "end", "deviceId", "streamId"); err != nil {
		return err
	}
	var drop dropCounter
	err := r.scanTable(graphQuery(), func(v []int64) {
		bad := v[graphCols]
		if !drop.keep(v[graphStart], v[graphEnd], bad) || !drop.keepDevice(v[graphDevice], bad) {
			return
		}
		r.t.Graphs = append(r.t.Graphs, GraphExec{Start: Time(v[graphStart]), End: Time(v[graphEnd]),
			Device: DeviceID(v[graphDevice]), Stream: StreamID(v[graphStream]), Correlation: uint32(v[graphCorrelation]),
			Proc: r.proc(v[graphPID])})
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
