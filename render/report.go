package render

import (
	"encoding/json"
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

// appendString appends s as a JSON string: plain ASCII directly, anything else through
// encoding/json, whose escaping (HTML characters, invalid UTF-8, U+2028) it keeps.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always marshals
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// CSV writes one row per step and category with raw nanoseconds.
func CSV(w io.Writer, r *breakdown.Report) error {
	ew := &errWriter{w: w}
	ew.printf("device,step,phase,start_ns,end_ns,category,exclusive_ns,busy_ns,kernels,launches\n")
	for _, d := range r.Devices {
		for i := range d.Steps {
			s := &d.Steps[i]
			for _, c := range kernelclass.Order {
				ew.printf("%d,%d,%s,%d,%d,%s,%d,%d,%d,%d\n", d.Device, s.Index, s.Phase, s.Start, s.End, c,
					int64(s.Exclusive[c]), int64(s.Busy[c]), s.Kernels[c], s.Launches)
			}
		}
	}
	return ew.err
}

// TextOptions control the text report.
type TextOptions struct {
	Top        int // number of kernel rows
	TopKernels TopKernels
	// Width is the width the answer (the lines before the trace's details) is wrapped
	// to: the terminal's; 0 means DefaultTextWidth. The rest wraps at MaxTextLine.
	Width int
}

// TopKernels chooses what the top-kernels table covers.
type TopKernels uint8

// Top-kernels views.
const (
	// TopSteps: the summarised steps of every device (the steps the decode table covers,
	// outliers left out), graph replays traced at graph level and memory operations as rows.
	TopSteps TopKernels = iota
	// TopWhole: every kernel of the whole trace (the JSON "kernels" list).
	TopWhole
)

// ParseTopKernels reads a --top-kernels value: "steps" or "whole".
func ParseTopKernels(s string) (TopKernels, error) {
	switch s {
	case "steps":
		return TopSteps, nil
	case "whole":
		return TopWhole, nil
	}
	return 0, fmt.Errorf("unknown --top-kernels %q (want steps or whole)", s)
}

// topKernels returns the rows of the top-kernels table and what they cover. The steps view
// falls back to the whole trace when no device has summarised steps.
func topKernels(r *breakdown.Report, v TopKernels) ([]breakdown.KernelStat, string) {
	if v == TopSteps && len(r.StepKernels) > 0 {
		n, out := 0, 0
		for i := range r.Devices {
			n += r.Devices[i].Summary.Steps
			out += len(r.Devices[i].Summary.Outliers.Steps)
		}
		o := ""
		if out > 0 {
			o = fmt.Sprintf("; %d outlier step%s left out", out, plural(out))
		}
		return r.StepKernels, fmt.Sprintf("the %d summarised step%s of the tables above, all devices%s; --top-kernels whole for the whole trace", n, plural(n), o)
	}
	return r.Kernels, "whole trace, all devices"
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
	ew.printf("Trace: %s  (nsys %s, %d device%s)\n", TerminalSafe(r.Path), ver, len(r.Devices), plural(len(r.Devices)))
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
		ew.printf("%10s %7s %7s %10s  %-14s %s\n", "total", "share", "count", "avg", "category", "name")
		ks = ks[:min(opt.Top, len(ks))]
		names := make([]string, len(ks))
		for i, k := range ks {
			names[i] = TerminalSafe(k.Name)
		}
		names = elideNames(names, MaxTextLine-topKernelsPrefix) // the rows' names told apart
		for i, k := range ks {
			ew.printf("%10s %7s %7d %10s  %-14s %s\n", breakdown.FormatDuration(int64(k.Total)), breakdown.FormatPercent(frac(int64(k.Total), total)), k.Count,
				breakdown.FormatDuration(int64(k.Total)/int64(max(k.Count, 1))), k.Category, names[i])
		}
	}
	if len(r.Warnings) > 0 {
		ew.printf("\nWarnings:\n")
		for i, wn := range r.Warnings {
			ew.printf("  %d. %s\n", i+1, TerminalSafe(warningText(wn)))
		}
	}
	if err := errors.Join(hw.err, ew.err); err != nil {
		return err
	}
	_, err := io.WriteString(w, wrapText(answer.String(), textWidth(opt.Width))+wrapText(details.String(), MaxTextLine))
	return err
}

// topKernelsPrefix is the width of a top-kernels row before the name.
const topKernelsPrefix = 10 + 1 + 7 + 1 + 7 + 1 + 10 + 2 + 14 + 1

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func frac(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// evidenceNumber matches the numbers in a phase evidence text, which evidenceLines groups by
// their words.
var evidenceNumber = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// evidenceLines say how a device's steps were found: how many each signal started (cut_by)
// and how many have each phase for each kind of evidence (numbers left out), most first.
func evidenceLines(steps []breakdown.Step) []string {
	if len(steps) == 0 {
		return nil
	}
	type group struct {
		key string
		n   int
	}
	count := func(key func(*breakdown.Step) string) []group {
		idx := map[string]int{}
		var gs []group
		for i := range steps {
			k := key(&steps[i])
			if k == "" {
				continue
			}
			if j, ok := idx[k]; ok {
				gs[j].n++
				continue
			}
			idx[k] = len(gs)
			gs = append(gs, group{k, 1})
		}
		slices.SortStableFunc(gs, func(a, b group) int { return b.n - a.n })
		return gs
	}
	list := func(gs []group, most int) string {
		var parts []string
		for i, g := range gs {
			if i == most {
				parts = append(parts, fmt.Sprintf("%d more kinds", len(gs)-most))
				break
			}
			parts = append(parts, fmt.Sprintf("%d %s", g.n, g.key))
		}
		return strings.Join(parts, "; ")
	}
	cuts := count(func(s *breakdown.Step) string { return s.CutBy })
	phases := count(func(s *breakdown.Step) string {
		if s.PhaseEvidence == "" {
			return ""
		}
		return s.Phase.String() + " (" + evidenceNumber.ReplaceAllString(s.PhaseEvidence, "N") + ")"
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
	ew.printf("Device %d (%s): %d step%s by %s (%s)", d.Device, TerminalSafe(gpu), n, plural(n), d.Method, TerminalSafe(d.MethodDetail))
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
	ew.printf("%-*s %10s %7s %12s %12s\n", w, "category", "mean/step", "share", "kernels/step", "memops/step")
	for _, r := range rows {
		ew.printf("%-*s %10s %7s %12s %12s\n", w, r.cat, r.mean, r.share, r.kernels, r.memops)
	}
	ew.printf("%-*s %10s %7s %12.1f %12.1f\n", w, "total", breakdown.FormatDuration(int64(sm.Mean)), "100%", sm.KernelsPerStep,
		sm.Categories[kernelclass.Memory].KernelsPerStep)
	ew.printf("%s\n", idleLine(sm))
	for _, s := range deviceSentences(r.Report, d) {
		ew.printf("  %s\n", s)
	}
	if s := solLine(d); s != "" {
		ew.printf("%s\n", s)
	}
}

// summaryLead is the line over the decode table: the distribution of the whole step
// (median, p10, p90, mean), the steps and the launches and kernels per step.
func summaryLead(sm *breakdown.Summary) string {
	return fmt.Sprintf("%s: median %s  p10 %s  p90 %s  mean %s  (%d step%s; %.1f host launches/step, %.1f kernels/step)",
		capitalize(phaseWhat(sm)), breakdown.FormatDuration(int64(sm.Median)), breakdown.FormatDuration(int64(sm.P10)), breakdown.FormatDuration(int64(sm.P90)),
		breakdown.FormatDuration(int64(sm.Mean)), sm.Steps, plural(sm.Steps), sm.LaunchesPerStp, sm.KernelsPerStep)
}

// outlierLine says which steps of the phase the summary left out (over
// breakdown.OutlierFactor times the median step of their phase); "" when none.
func outlierLine(sm *breakdown.Summary) string {
	o := &sm.Outliers
	n := len(o.Steps)
	if n == 0 {
		return ""
	}
	idx := make([]string, 0, min(n, 8))
	for i, s := range o.Steps {
		if i == 8 {
			idx = append(idx, fmt.Sprintf("… (%d in all)", n))
			break
		}
		idx = append(idx, fmt.Sprint(s))
	}
	what := sm.Phase.String() + " "
	if sm.Phase == breakdown.Unknown {
		what = ""
	}
	return fmt.Sprintf("Outliers: %d %sstep%s over %dx the median step (%s) left out of this summary and the findings: step%s %s, %s in all",
		n, what, plural(n), breakdown.OutlierFactor, breakdown.FormatDuration(int64(o.Median)), plural(n), strings.Join(idx, ", "),
		breakdown.FormatDuration(int64(o.Wall)))
}

// summaryCaption names the decode table's statistic: means per step, which add up to the
// mean step (medians of categories do not add up to the median step).
func summaryCaption(sm *breakdown.Summary) string {
	return fmt.Sprintf("By category, mean per %s (the rows add up to the mean step, %s; share = mean/step over the mean step)",
		phaseWhat(sm), breakdown.FormatDuration(int64(sm.Mean)))
}

// gapSizeLabels are the gap-size classes as text and charts write them (the JSON keys are
// breakdown.GapSizeNames, which the contract fixes).
var gapSizeLabels = [breakdown.NumGapSizes]string{"<10µs", "10-100µs", "100µs-1ms", ">1ms"}

// idleLine describes the idle gaps of a summary in one line: per step, the gaps and the
// idle time of each gap size, and what the host did meanwhile.
func idleLine(sm *breakdown.Summary) string {
	g := &sm.Gaps
	n := float64(max(sm.Steps, 1))
	var sizes []string
	for i, name := range gapSizeLabels {
		if g.Sizes[i] > 0 {
			sizes = append(sizes, fmt.Sprintf("%s %.1f gaps = %s", name, float64(g.Sizes[i])/n, breakdown.FormatDurationF(float64(g.SizeNS[i])/n)))
		}
	}
	var host []string
	for _, a := range breakdown.APIGroupOrder {
		if g.API[a] > 0 {
			host = append(host, fmt.Sprintf("%s %s", breakdown.APIGroupNames[a], breakdown.FormatPercent(frac(int64(g.API[a]), int64(g.Total)))))
		}
	}
	if g.Count == 0 {
		return "Idle: no gaps"
	}
	return fmt.Sprintf("Idle: %.1f gaps/step, %s/step (per step by gap size: %s); the launching threads meanwhile: %s",
		sm.GapsPerStep, breakdown.FormatDuration(int64(g.Total)/int64(n)), strings.Join(sizes, ", "), strings.Join(host, ", "))
}

// summarySentences returns the canonical sentences of a summary, one per category holding at
// least 1% of the step, largest first, in the decode table's statistic (means per step), e.g.
// "gemm: 104.7µs/step = 4.76% of the mean decode step; 21.0 calls/step x 4.994µs busy each"
// (busy time can exceed the exclusive time when streams overlap).
func summarySentences(sm *breakdown.Summary) []string {
	what := "the mean " + sm.Phase.String() + " step"
	if sm.Phase == breakdown.Unknown {
		what = "the mean step"
	}
	type item struct {
		c kernelclass.Category
		s float64
	}
	var items []item
	for _, c := range kernelclass.Order {
		if sm.Categories[c].Share >= 0.01 {
			items = append(items, item{c, sm.Categories[c].Share})
		}
	}
	for i := 1; i < len(items); i++ {
		for j := i; j > 0 && items[j].s > items[j-1].s; j-- {
			items[j], items[j-1] = items[j-1], items[j]
		}
	}
	var out []string
	for _, it := range items {
		cs := sm.Categories[it.c]
		if it.c == kernelclass.Idle {
			out = append(out, fmt.Sprintf("idle: %s/step = %s of %s, in %.1f gaps/step", breakdown.FormatDuration(int64(cs.Mean)),
				breakdown.FormatPercent(cs.Share), what, sm.GapsPerStep))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s/step = %s of %s; %.1f calls/step x %s busy each", it.c, breakdown.FormatDuration(int64(cs.Mean)),
			breakdown.FormatPercent(cs.Share), what, cs.KernelsPerStep, breakdown.FormatDuration(int64(cs.BusyPerCall))))
	}
	return out
}

func fmtCalls(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprintf("%.1f", f)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// summaryRow is one category line of the summary table, formatted: the display model that
// the text and HTML reports share.
type summaryRow struct {
	cat                          kernelclass.Category
	mean, share, kernels, memops string
}

// summaryRows lists the categories present in the summary (idle always), in Order.
func summaryRows(sm *breakdown.Summary) []summaryRow {
	var rows []summaryRow
	for _, c := range kernelclass.Order {
		cs := sm.Categories[c]
		if cs.Share == 0 && cs.KernelsPerStep == 0 && c != kernelclass.Idle {
			continue
		}
		// Kernels and memory operations (memcpy, memset) have columns of their own, so that
		// each adds up to the total row (Summary.KernelsPerStep counts kernels only).
		kps, mops := fmt.Sprintf("%.1f", cs.KernelsPerStep), "-"
		switch c {
		case kernelclass.Idle:
			kps = "-"
		case kernelclass.Memory:
			kps, mops = "-", fmt.Sprintf("%.1f", cs.KernelsPerStep)
		}
		rows = append(rows, summaryRow{c, breakdown.FormatDuration(int64(cs.Mean)), breakdown.FormatPercent(cs.Share), kps, mops})
	}
	return rows
}

// warningText is the text of a report warning; a warning about an option names the flag
// that sets it.
func warningText(w error) string {
	var ns *breakdown.NoStepsWarning
	if errors.As(w, &ns) {
		return fmt.Sprintf("device %d: --steps %s found no steps; the whole trace is one step", ns.Device, ns.Method)
	}
	var sc *breakdown.SelfCheckWarning
	if errors.As(w, &sc) {
		return sc.Text + " (choose the method with --steps)"
	}
	return w.Error()
}
