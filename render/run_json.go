package render

import (
	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/render/schema"
)

// runJSON is the top-level "run" of a report of several files; nil for one file.
func runJSON(rc *breakdown.RunClock) *schema.RunJSON {
	if rc == nil {
		return nil
	}
	out := &schema.RunJSON{Clock: "wall_clock", Reference: rc.Reference, Passes: rc.Passes, Files: []schema.RunFileJSON{}}
	if rc.ByCollectives {
		out.Clock = "collectives"
	}
	for _, f := range rc.Files {
		fj := schema.RunFileJSON{Path: f.Path, Program: f.Origin.Program, Devices: []int{}, WallOffsetNS: int64(f.WallOffset),
			OffsetNS: int64(f.Offset), CorrectionNS: int64(f.Correction), UncertaintyNS: int64(f.Uncertainty),
			Refined: f.Refined, MatchedCalls: f.Matched, DriftNS: int64(f.Drift), DriftSpanNS: int64(f.Span)}
		if f.Origin.HasStart {
			fj.SessionStartNS = f.Origin.SessionStart
		}
		if f.Origin.Rank >= 0 {
			fj.Rank = &f.Origin.Rank
		}
		if f.Origin.LocalRank >= 0 {
			fj.LocalRank = &f.Origin.LocalRank
		}
		for _, d := range f.Devices {
			fj.Devices = append(fj.Devices, int(d))
		}
		out.Files = append(out.Files, fj)
	}
	return out
}

// deviceSource returns the "source" of device d of a run's report; nil for one file.
func deviceSource(rc *breakdown.RunClock, d int) *schema.DeviceSourceJSON {
	if rc == nil {
		return nil
	}
	for _, rd := range rc.Devices {
		if int(rd.Device) == d {
			return &schema.DeviceSourceJSON{File: rd.File, Path: rc.Files[rd.File].Path, PID: rd.PID, CUDADevice: int(rd.CUDA), Label: rd.Label}
		}
	}
	return nil
}
