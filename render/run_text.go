package render

import (
	"github.com/stepstat/stepstat/breakdown"
)

// textRun writes runLines; nothing for one file.
func textRun(ew *errWriter, r *breakdown.Report) {
	for _, l := range runLines(r.Run) {
		ew.printf("%s\n", TerminalSafe(l))
	}
}
