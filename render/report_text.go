package render

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// TextOptions control the text report.
type TextOptions struct {
	Top        int // number of kernel rows
	TopKernels TopKernels
	// Width is the width the report is wrapped to, the answer and the details: the
	// terminal's; 0 means DefaultTextWidth. Table rows keep their columns.
	Width int
}

// Text writes the report as text: header, per-device decode table, idle line, canonical
// sentences, top kernels and warnings.
func Text(w io.Writer, r *findings.Report, opt TextOptions) error {
	var answer, details strings.Builder
	hw := &errWriter{w: &answer}
	textHeadline(hw, r)
	ew := &errWriter{w: &details}
	ew.printf("\n")
	ver := TerminalSafe(orNA(r.Meta.NsysVersion))
	ew.printf("Trace: %s  (nsys %s, %s)\n", TerminalSafe(r.Path), ver, devicesWords(r.Report))
	textRun(ew, r.Report)
	if s := configLine(r.Config); s != "" {
		ew.printf("%s\n", TerminalSafe(s))
	}
	if s := ncclProtoNote(r.Config, reportProtos(r.Report)); s != "" {
		ew.printf("NCCL protocol: %s\n", TerminalSafe(s))
	}
	for i := range r.Devices {
		ew.printf("\n")
		textDevice(ew, r, i)
	}
	textRanks(ew, r.Report)
	if ks, caption := topKernels(r.Report, opt.TopKernels); opt.Top > 0 && len(ks) > 0 {
		var total int64
		for _, k := range ks {
			total += int64(k.Total)
		}
		ew.printf("\nTop kernels (%s):\n", caption)
		ew.printf(tableRow+"%10s %7s %7s %10s  %-14s %s\n", "total", "share", "count", "avg", "category", "name")
		ks = ks[:min(opt.Top, len(ks))]
		names := make([]string, len(ks))
		for i, k := range ks {
			names[i] = TerminalSafe(k.Name)
		}
		names = elideNames(names, MaxTextLine-topKernelsPrefix) // the rows' names told apart
		for i, k := range ks {
			ew.printf(tableRow+"%10s %7s %7d %10s  %-14s %s\n", breakdown.FormatDuration(int64(k.Total)), breakdown.FormatPercent(frac(int64(k.Total), total)), k.Count,
				breakdown.FormatDuration(int64(k.Total)/int64(max(k.Count, 1))), k.Category, names[i])
		}
	}
	reportWarnings(ew, r)
	if err := errors.Join(hw.err, ew.err); err != nil {
		return err
	}
	_, err := io.WriteString(w, wrapText(answer.String(), textWidth(opt.Width))+wrapText(details.String(), textWidth(opt.Width)))
	return err
}

// topKernelsPrefix is the width of a top-kernels row before the name.
const topKernelsPrefix = 10 + 1 + 7 + 1 + 7 + 1 + 10 + 2 + 14 + 1

// evidenceNumber matches the numbers in a phase evidence text, which evidenceLines groups by
// their words.
var evidenceNumber = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// evidenceLines say how a device's steps were found: how many each signal started (cut_by)
// and how many have each phase for each kind of evidence (numbers left out), most first.
func evidenceLines(steps []breakdown.Step) []string {
	if len(steps) == 0 {
		return nil
	}
	// A group is the steps of one kind: key is the text without its numbers; shown is the
	// first step's text with its own numbers (never a placeholder), naming that step when
	// the others' numbers differ.
	type group struct {
		key, shown, example string // example: shown naming its step, "mixed (e.g. step 3: ...)"
		n                   int
		alike               bool // every member's text is the shown one
	}
	count := func(text func(*breakdown.Step) (key, shown, example string)) []group {
		idx := map[string]int{}
		var gs []group
		for i := range steps {
			k, sh, ex := text(&steps[i])
			if k == "" {
				continue
			}
			if j, ok := idx[k]; ok {
				gs[j].n++
				gs[j].alike = gs[j].alike && sh == gs[j].shown
				continue
			}
			idx[k] = len(gs)
			gs = append(gs, group{k, sh, ex, 1, true})
		}
		slices.SortStableFunc(gs, func(a, b group) int { return b.n - a.n })
		return gs
	}
	list := func(gs []group, most int) string {
		var parts []string
		for i, g := range gs {
			if i == most {
				rest := 0
				for _, r := range gs[most:] {
					rest += r.n
				}
				parts = append(parts, fmt.Sprintf("and %d more %s (%d step%s)", len(gs)-most, map[bool]string{true: "kind", false: "kinds"}[len(gs)-most == 1], rest, plural(rest)))
				break
			}
			shown := g.shown
			if !g.alike { // the numbers are one step's: say whose
				shown = g.example
			}
			parts = append(parts, fmt.Sprintf("%d %s", g.n, shown))
		}
		return strings.Join(parts, "; ")
	}
	cuts := count(func(s *breakdown.Step) (string, string, string) { return s.CutBy, s.CutBy, s.CutBy })
	phases := count(func(s *breakdown.Step) (string, string, string) {
		if s.PhaseEvidence == "" {
			return "", "", ""
		}
		p := s.Phase.String()
		return p + " (" + evidenceNumber.ReplaceAllString(s.PhaseEvidence, "N") + ")", p + " (" + s.PhaseEvidence + ")",
			fmt.Sprintf("%s (e.g. step %d: %s)", p, s.Index, s.PhaseEvidence)
	})
	var out []string
	if len(cuts) > 0 {
		out = append(out, "Steps cut by: "+list(cuts, 4))
	}
	if len(phases) > 0 {
		out = append(out, "Phases by: "+list(phases, 4))
	}
	return out
}

func textDevice(ew *errWriter, r *findings.Report, di int) {
	d := &r.Devices[di]
	gpu := d.GPU
	if gpu == "" {
		gpu = "GPU n/a"
	}
	n := len(d.Steps) + d.Skipped
	ew.printf("%s (%s): %d step%s by %s (%s)", capitalize(d.Name()), TerminalSafe(gpu), n, plural(n), d.Method, TerminalSafe(d.MethodDetail))
	switch {
	case len(d.Steps) == 0 && d.Skipped > 0:
		ew.printf(", all %d skipped", d.Skipped)
	case d.Skipped > 0:
		ew.printf(": %s; %d skipped", breakdown.PhaseCounts(d.Steps), d.Skipped)
	case len(d.Steps) > 0:
		ew.printf(": %s", breakdown.PhaseCounts(d.Steps))
	}
	ew.printf("\n")
	for _, l := range evidenceLines(d.Steps) {
		ew.printf("%s\n", l)
	}
	if o := &d.Outside; o.Windows > 0 {
		ew.printf("Outside steps: %s (work before the first step, between step ranges or after the last; in no step)\n", outsideText(o))
	}
	if s := lifetimeLine(d); s != "" {
		ew.printf("%s\n", s)
	}
	sm := &d.Summary
	if sm.Steps == 0 {
		ew.printf("  no steps to summarise\n")
		return
	}
	ew.printf("%s\n", summaryLead(sm))
	if l := outlierLine(sm); l != "" {
		ew.printf("%s\n", l)
	}
	rows := summaryRows(sm)
	w := 12 // the category column: wider only when a longer id (untraced_graph) is shown
	for _, r := range rows {
		w = max(w, len(r.cat.String()))
	}
	ew.printf("%s:\n", summaryCaption(sm))
	ew.printf(tableRow+"%-*s %10s %7s %12s %12s\n", w, "category", "mean/step", "share", "kernels/step", "memops/step")
	for _, r := range rows {
		ew.printf(tableRow+"%-*s %10s %7s %12s %12s\n", w, r.cat, r.mean, r.share, r.kernels, r.memops)
	}
	ew.printf(tableRow+"%-*s %10s %7s %12.1f %12.1f\n", w, "total", breakdown.FormatDuration(int64(sm.Mean)), "100%", sm.KernelsPerStep,
		sm.Categories[kernelclass.Memory].KernelsPerStep)
	ew.printf("%s\n", idleLine(sm))
	for _, s := range deviceSentences(r.Report, d) {
		ew.printf("  %s\n", s)
	}
	if s := solLine(d); s != "" {
		ew.printf("%s\n", s)
	}
}
