package nsys

import (
	"fmt"
)

const kernelTable = "CUPTI_ACTIVITY_KIND_KERNEL"

// planKernels plans the kernel table's read: one task per part of the table (readParts),
// then finishKernels.
func (r *reader) planKernels() (*job, error) {
	if !r.has(kernelTable) {
		r.warnf("no %s table: the capture has no CUDA kernels (profile with -t cuda)", kernelTable)
		return nil, nil
	}
	r.t.HasKernelTable = true
	if err := r.require(kernelTable, "start", "end", "deviceId", "streamId"); err != nil {
		return nil, err
	}
	nameCol := "demangledName"
	if !r.hasCol(kernelTable, nameCol) {
		if !r.hasCol(kernelTable, "shortName") {
			return nil, fmt.Errorf("table %s has neither demangledName nor shortName", kernelTable)
		}
		nameCol = "shortName"
		r.warnf("%s has no demangledName column; classifying short names", kernelTable)
	}
	// Kernel.Site indexes the part's own sites until finishKernels numbers them.
	scan := func(_ *reader, d *kernelPart) func(v []int64) {
		return func(v []int64) {
			bad := v[kernelCols]
			if !d.drop.keep(v[kernelStart], v[kernelEnd], bad) || !d.drop.keepDevice(v[kernelDevice], bad) {
				return
			}
			site := d.site(rawSite{sid: v[kernelName], stream: StreamID(v[kernelStream]),
				device: DeviceID(v[kernelDevice]), pid: v[kernelPID]})
			d.rows = append(d.rows, Kernel{Start: Time(v[kernelStart]), End: Time(v[kernelEnd]),
				Correlation: uint32(v[kernelCorrelation]), Site: site})
		}
	}
	return readParts(r, kernelQuery(nameCol), "kernel", scan, finishKernels), nil
}

// The kernel table's columns, by their place in a row of kernelQuery; kernelCols, their
// number, is the place of the row's mask.
const (
	kernelStart  = colStart
	kernelEnd    = colEnd
	kernelDevice = colDevice
	kernelStream = iota
	kernelCorrelation
	kernelName // the string id of the name column: demangledName, else shortName
	kernelPID
	kernelCols
)

// kernelQuery is the read of the kernel table, its names from nameCol.
func kernelQuery(nameCol string) *tableQuery {
	cols := [kernelCols]tableCol{
		kernelStart:       needCol("start"),
		kernelEnd:         needCol("end"),
		kernelDevice:      needCol("deviceId"),
		kernelStream:      needCol("streamId"),
		kernelCorrelation: optCol("correlationId", 0),
		kernelName:        needCol(nameCol),
		kernelPID:         optCol("globalPid", 0),
	}
	return &tableQuery{table: kernelTable, cols: cols[:]}
}

// finishKernels numbers the names and the sites of the parts' kernels, names the kernels
// and sorts them.
func finishKernels(r *reader, ks []Kernel, kp []kernelPart) error {
	// Number the names and the sites in order of first appearance, whichever part read
	// them. String ids are small, dense integers: a slice indexed by id (0 = not seen yet)
	// is several times faster than a map; a map takes the rare big ids.
	var dense []NameID
	sparse := map[int64]NameID{}
	var order []int64
	nameOf := func(sid int64) NameID {
		var id NameID
		if sid >= 0 && sid < 1<<22 {
			if sid >= int64(len(dense)) {
				dense = append(dense, make([]NameID, int(sid)+1-len(dense)+len(dense)/2)...)
			}
			if id = dense[sid]; id == 0 {
				order = append(order, sid)
				id = NameID(len(order))
				dense[sid] = id
			}
			return id - 1
		}
		var ok bool
		if id, ok = sparse[sid]; !ok {
			id = NameID(len(order))
			sparse[sid] = id
			order = append(order, sid)
		}
		return id
	}
	sites := newInterner[Site, SiteID](&r.t.Sites)
	renumber(ks, kp, func(k *Kernel) *SiteID { return &k.Site },
		func(d *kernelPart) int { return len(d.sites) },
		func(d *kernelPart, local SiteID) SiteID {
			rs := &d.sites[local]
			return sites.id(Site{Name: nameOf(rs.sid), Stream: rs.stream, Device: rs.device, Proc: r.proc(rs.pid)})
		})
	strs, err := r.loadStrings(kernelTable, order)
	if err != nil {
		return err
	}
	r.t.Names = make([]string, len(order))
	for i, id := range order {
		r.t.Names[i] = strs[id]
	}
	sortKernels(ks, r.t.Sites)
	r.t.Kernels = ks
	return nil
}

// A kernelPart is the rows of one part of the kernel table, with the sites they name.
type kernelPart struct {
	partOut[Kernel]
	sites []rawSite // Kernel.Site indexes this until finish
	// head holds, by string id, 1 + the first site of that name (0: none yet); rawSite.next
	// chains the others. A name runs at one to a few sites, so this is a short walk.
	head []int32
	wide map[rawSite]SiteID // sites of string ids too big for head, or past a chain of maxChain
}

// A rawSite is a site as the table gives it: string id and globalPid not numbered yet.
type rawSite struct {
	sid    int64
	pid    int64
	stream StreamID
	device DeviceID
	next   int32 // 1 + the next site of the same name, 0 = none
}

// site returns the part's index of s, adding it when new.
func (d *kernelPart) site(s rawSite) SiteID {
	if s.sid >= 0 && s.sid < 1<<22 {
		if s.sid >= int64(len(d.head)) {
			d.head = append(d.head, make([]int32, int(s.sid)+1-len(d.head)+len(d.head)/2)...)
		}
		p := &d.head[s.sid]
		n := 0
		for i := *p; i != 0; i = d.sites[i-1].next {
			x := &d.sites[i-1]
			if x.stream == s.stream && x.device == s.device && x.pid == s.pid {
				return SiteID(i - 1)
			}
			p = &x.next
			n++
		}
		if n < maxChain {
			d.sites = append(d.sites, s)
			*p = int32(len(d.sites))
			return SiteID(len(d.sites) - 1)
		}
		// A name at more sites than a short walk covers (not seen in real traces, but a
		// file could hold one): the rest go through the map, so the read stays linear.
	}
	if d.wide == nil {
		d.wide = map[rawSite]SiteID{}
	}
	id, ok := d.wide[s]
	if !ok {
		id = SiteID(len(d.sites))
		d.wide[s] = id
		d.sites = append(d.sites, s)
	}
	return id
}

// maxChain is the longest walk of a chain of sites or callers before a map takes over.
const maxChain = 8
