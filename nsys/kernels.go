package nsys

import (
	"cmp"
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
	q := &tableQuery{table: kernelTable, cols: []tableCol{needCol("start"), needCol("end"), needCol("deviceId"),
		needCol("streamId"), optCol("correlationId", 0), needCol(nameCol), optCol("globalPid", 0)}}
	// Kernel.Site indexes the part's own sites until finishKernels numbers them.
	scan := func(_ *reader, d *kernelPart) func(v []int64) {
		return func(v []int64) {
			if !d.drop.keep(v[0], v[1], v[7]) || !d.drop.keepDevice(v[2], v[7]) {
				return
			}
			site := d.site(rawSite{sid: v[5], stream: StreamID(v[3]), device: DeviceID(v[2]), pid: v[6]})
			d.rows = append(d.rows, Kernel{Start: Time(v[0]), End: Time(v[1]), Correlation: uint32(v[4]), Site: site})
		}
	}
	return readParts(r, q, "kernel", scan, finishKernels), nil
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

// kernelOrder orders kernels by start, then device, stream, end, process, correlation
// and name: a total order, so the unstable sort gives the same result every time.
func kernelOrder(sites []Site) func(a, b Kernel) int {
	return func(a, b Kernel) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		sa, sb := &sites[a.Site], &sites[b.Site]
		if c := cmp.Compare(sa.Device, sb.Device); c != 0 {
			return c
		}
		if c := cmp.Compare(sa.Stream, sb.Stream); c != 0 {
			return c
		}
		if c := cmp.Compare(a.End, b.End); c != 0 {
			return c
		}
		if c := cmp.Compare(sa.Proc, sb.Proc); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Correlation, b.Correlation); c != 0 {
			return c
		}
		return cmp.Compare(sa.Name, sb.Name)
	}
}

func sortKernels(ks []Kernel, sites []Site) { sortUnlessSorted(ks, kernelOrder(sites)) }

// SortKernels puts t.Kernels in the order Open gives them (start, then device, stream,
// end, process, correlation and name), for traces built by hand with AddKernel.
func (t *Trace) SortKernels() { sortKernels(t.Kernels, t.Sites) }
