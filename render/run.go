package render

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/stepstat/stepstat/breakdown"
)

// This file holds the words of how a run given as several files was put on one clock
// (breakdown.RunClock): each file's devices, offset and its uncertainty; run_text.go,
// run_json.go (schema.RunJSON) and run_html.go write them.

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
