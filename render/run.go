package render

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/stepstat/stepstat/breakdown"
)

// This file renders how a run given as several files was put on one clock
// (breakdown.RunClock): each file's devices, offset and its uncertainty, in text, JSON and
// HTML.

// RunJSON is the top-level "run" of a report of several files (one per node or process);
// absent for one file.
type RunJSON struct {
	// Clock is "collectives" when at least one file's offset was refined from collectives
	// matched across ranks, "wall_clock" when the files are placed by their session starts
	// only (cross-rank timing as exact as the hosts' clocks).
	Clock     string        `json:"clock"`
	Reference int           `json:"reference"` // index into files: the file whose clock is the run's
	Passes    int           `json:"passes"`    // summaries made (1 + refinements)
	Files     []RunFileJSON `json:"files"`
}

// RunFileJSON is one file of the run. Its timestamps plus offset_ns are on the run's
// clock: offset_ns = wall_offset_ns (the session starts' difference) + correction_ns (from
// the collectives, ± uncertainty_ns, when refined).
type RunFileJSON struct {
	Path string `json:"path"`
	// SessionStartNS is the UTC time of the file's timestamp 0 in ns since the Unix epoch
	// (TARGET_INFO_SESSION_START_TIME); 0 when the export has none.
	SessionStartNS int64  `json:"session_start_utc_ns"`
	Program        string `json:"program,omitempty"`
	// Rank and LocalRank are RANK and LOCAL_RANK of the recorded environment, when set.
	Rank          *int  `json:"rank,omitempty"`
	LocalRank     *int  `json:"local_rank,omitempty"`
	Devices       []int `json:"devices"` // the report's device ids
	WallOffsetNS  int64 `json:"wall_offset_ns"`
	OffsetNS      int64 `json:"offset_ns"`
	CorrectionNS  int64 `json:"correction_ns"`
	UncertaintyNS int64 `json:"uncertainty_ns"`
	Refined       bool  `json:"refined"`
	MatchedCalls  int   `json:"matched_calls"`
	// DriftNS is how much the matched calls' end differences change over DriftSpanNS (a
	// rate difference of the hosts' clocks; one offset is exact at mid-capture); 0 when not
	// above the spread around it and 1 µs.
	DriftNS     int64 `json:"drift_ns"`
	DriftSpanNS int64 `json:"drift_span_ns"`
}

// DeviceSourceJSON says where a device of a run of several files comes from (per device
// "source"; absent for one file).
type DeviceSourceJSON struct {
	File       int    `json:"file"` // index into run.files
	Path       string `json:"path"`
	PID        int64  `json:"pid"`
	CUDADevice int    `json:"cuda_device"` // the CUDA device ordinal in its file
	Label      string `json:"label"`       // file, pid, device and RANK/LOCAL_RANK
}

func runJSON(rc *breakdown.RunClock) *RunJSON {
	if rc == nil {
		return nil
	}
	out := &RunJSON{Clock: "wall_clock", Reference: rc.Reference, Passes: rc.Passes, Files: []RunFileJSON{}}
	if rc.ByCollectives {
		out.Clock = "collectives"
	}
	for _, f := range rc.Files {
		fj := RunFileJSON{Path: f.Path, Program: f.Origin.Program, Devices: []int{}, WallOffsetNS: int64(f.WallOffset),
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
func deviceSource(rc *breakdown.RunClock, d int) *DeviceSourceJSON {
	if rc == nil {
		return nil
	}
	for _, rd := range rc.Devices {
		if int(rd.Device) == d {
			return &DeviceSourceJSON{File: rd.File, Path: rc.Files[rd.File].Path, PID: rd.PID, CUDADevice: int(rd.CUDA), Label: rd.Label}
		}
	}
	return nil
}

// runLines are the lines that say how the files were put on one clock: a head line, then
// one per file.
func runLines(rc *breakdown.RunClock) []string {
	if rc == nil {
		return nil
	}
	head := fmt.Sprintf("Run: %d files on one clock, %s's (the earliest session start): ", len(rc.Files), filepath.Base(rc.Files[rc.Reference].Path))
	if rc.ByCollectives {
		head += "placed by their session starts, each offset refined from the collectives matched across ranks (a collective ends at nearly the same instant on every rank; ± half the 10-90% range of the ends' differences, at least 1µs)"
	} else {
		head += "placed by their session starts only; no collective matched across the files, so cross-rank timing is by wall clock only (as exact as the hosts' clocks)"
	}
	out := []string{head}
	for i, f := range rc.Files {
		var devs string
		for _, d := range rc.Devices {
			if d.File != i {
				continue
			}
			if devs != "" {
				devs += ", "
			}
			devs += fmt.Sprintf("device %d = %s", d.Device, d.Label)
		}
		if devs == "" {
			devs = "no device in the report"
		}
		var where string
		switch {
		case i == rc.Reference:
			where = "the reference clock (offset 0)"
		case f.Refined:
			where = fmt.Sprintf("offset %s ± %s (session starts %s, collectives %s, from %d matched calls)", signedOffset(f.Offset),
				breakdown.FormatDuration(int64(f.Uncertainty)), signedOffset(f.WallOffset), signedOffset(f.Correction), f.Matched)
		case f.Origin.HasStart:
			where = fmt.Sprintf("offset %s by the session starts only", signedOffset(f.Offset))
		default:
			where = "no session start recorded: offset 0"
		}
		out = append(out, fmt.Sprintf("  %s: %s; %s", filepath.Base(f.Path), devs, where))
	}
	return out
}

// signedOffset formats d with its sign: +1.500s, -3.700ms, 0s.
func signedOffset(d time.Duration) string {
	switch {
	case d > 0:
		return "+" + breakdown.FormatDuration(int64(d))
	case d < 0:
		return "-" + breakdown.FormatDuration(int64(-d))
	}
	return "0s"
}

// textRun writes runLines; nothing for one file.
func textRun(ew *errWriter, r *breakdown.Report) {
	for _, l := range runLines(r.Run) {
		ew.printf("%s\n", TerminalSafe(l))
	}
}

// runTable is the HTML table of the run's files; nil for one file.
func runTable(rc *breakdown.RunClock) *htmlTable {
	if rc == nil {
		return nil
	}
	t := &htmlTable{ID: "run", Caption: "Files of the run, on one clock",
		Head: []htmlCell{cellText("file"), cellText("devices"), cellText("session start (UTC)"), cellNum("offset"),
			cellNum("session starts"), cellNum("from collectives"), cellNum("±"), cellNum("matched calls")}}
	for i, f := range rc.Files {
		var devs string
		for _, d := range rc.Devices {
			if d.File == i {
				if devs != "" {
					devs += "; "
				}
				devs += strconv.Itoa(int(d.Device)) + " = " + d.Label
			}
		}
		start := "not recorded"
		if f.Origin.HasStart {
			start = time.Unix(0, f.Origin.SessionStart).UTC().Format("2006-01-02 15:04:05.000000")
		}
		corr, unc, calls := "-", "-", "-"
		if f.Refined {
			corr, unc, calls = signedOffset(f.Correction), breakdown.FormatDuration(int64(f.Uncertainty)), strconv.Itoa(f.Matched)
		}
		name := filepath.Base(f.Path)
		if i == rc.Reference {
			name += " (reference)"
		}
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{cellName(name), cellName(devs), cellText(start), cellNum(signedOffset(f.Offset)),
			cellNum(signedOffset(f.WallOffset)), cellNum(corr), cellNum(unc), cellNum(calls)}})
	}
	lines := runLines(rc)
	t.Note = lines[0][len("Run: "):]
	return t
}
