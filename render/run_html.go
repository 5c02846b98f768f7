package render

import (
	"path/filepath"
	"strconv"
	"time"

	"github.com/stepstat/stepstat/breakdown"
)

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
