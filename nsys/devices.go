package nsys

import (
	"fmt"
	"math"
)

// readDevices lists the devices with GPU activity and names them from the GPU tables.
func (r *reader) readDevices() error {
	// Device ids are 0..MaxInt16 (the reader drops other rows): a flag per id is cheaper
	// than a map lookup per kernel.
	seen := make([]bool, math.MaxInt16+1)
	for _, st := range r.t.Sites {
		seen[st.Device] = true
	}
	for _, m := range r.t.Memops {
		seen[m.Device] = true
	}
	for _, g := range r.t.Graphs {
		seen[g.Device] = true
	}
	info := map[DeviceID]Device{}
	var q string
	switch {
	case r.has("TARGET_INFO_CUDA_GPU") && r.hasCol("TARGET_INFO_CUDA_GPU", "deviceId"):
		q = `SELECT deviceId, COALESCE(name, ''), ` + r.colOr("TARGET_INFO_CUDA_GPU", "globalMemorySize", "0") + `, ` +
			r.colOr("TARGET_INFO_CUDA_GPU", "numMultiprocessors", "0") + `, ` +
			r.colOr("TARGET_INFO_CUDA_GPU", "globalMemoryBandwidth", "0") + ` FROM TARGET_INFO_CUDA_GPU`
	case r.has("TARGET_INFO_GPU") && r.hasCol("TARGET_INFO_GPU", "cuDevice"):
		q = `SELECT cuDevice, COALESCE(name, ''), ` + r.colOr("TARGET_INFO_GPU", "totalMemory", "0") + `, ` +
			r.colOr("TARGET_INFO_GPU", "smCount", "0") + `, ` + r.colOr("TARGET_INFO_GPU", "memoryBandwidth", "0") +
			` FROM TARGET_INFO_GPU WHERE cuDevice IS NOT NULL ORDER BY COALESCE(smCount, 0)`
	case r.has("TARGET_INFO_GPU") && r.hasCol("TARGET_INFO_GPU", "deviceId"):
		q = `SELECT deviceId, COALESCE(name, ''), 0, 0, 0 FROM TARGET_INFO_GPU`
	}
	if q != "" {
		rows, err := r.db.QueryContext(r.ctx, q)
		if err != nil {
			return fmt.Errorf("reading GPU info: %w", err)
		}
		for rows.Next() {
			var d Device
			var id int64
			if err := rows.Scan(&id, &d.Name, &d.Memory, &d.SMs, &d.Bandwidth); err != nil {
				rows.Close()
				return fmt.Errorf("reading GPU info: %w", err)
			}
			d.ID = DeviceID(id)
			// Several adapters can share a cuDevice number (Windows lists integrated GPUs
			// too); rows are ordered by SM count, so the CUDA GPU with most SMs wins.
			info[d.ID] = d
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reading GPU info: %w", err)
		}
	}
	if n, lo, hi := countSeen(seen); n > MaxDevices {
		return fmt.Errorf("GPU activity on %d devices (ids %d to %d), more than the %d stepstat analyses", n, lo, hi, MaxDevices)
	}
	for id, ok := range seen {
		if ok {
			d := info[DeviceID(id)]
			d.ID = DeviceID(id)
			r.t.Devices = append(r.t.Devices, d)
		}
	}
	return nil
}

// MaxDevices is the most devices with GPU activity a trace may have: the cross-rank
// analysis keeps, per device, a wait split by every other device (devices² numbers), so a
// file of a few MB naming 10,000 device ids took gigabytes. 1024 is far past any single
// capture (an NVL72 rack has 72 GPUs). Past it Open fails with one line.
const MaxDevices = 1024

// countSeen returns how many flags are set, and the first and last set index.
func countSeen(seen []bool) (n, lo, hi int) {
	lo = -1
	for i, ok := range seen {
		if ok {
			if lo < 0 {
				lo = i
			}
			hi = i
			n++
		}
	}
	return n, lo, hi
}
