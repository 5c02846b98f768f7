package render

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/nsys"
)

// This file holds the words every format of render uses (text, HTML, JSON's warnings):
// counts and plurals, the phase a summary covers, the summary's lines and rows, the
// top-kernels views, warnings. A format's own file calls these; it never calls into another
// format's file.

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

// topKernelsNames names the top-kernels views for --top-kernels.
var topKernelsNames = [...]string{TopSteps: "steps", TopWhole: "whole"}

// ParseTopKernels reads a --top-kernels value: "steps" or "whole".
func ParseTopKernels(s string) (TopKernels, error) {
	for v, name := range topKernelsNames {
		if s == name {
			return TopKernels(v), nil
		}
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

// devicesWords counts a report's devices: "2 devices", or, where processes share a
// device, "1 device, 2 processes on device 0: one loop each".
func devicesWords(r *breakdown.Report) string {
	ids := map[nsys.DeviceID]int{}
	var order []nsys.DeviceID
	for i := range r.Devices {
		d := r.Devices[i].Device
		if ids[d] == 0 {
			order = append(order, d)
		}
		ids[d]++
	}
	out := fmt.Sprintf("%d device%s", len(order), plural(len(order)))
	for _, d := range order {
		if ids[d] > 1 {
			out += fmt.Sprintf(", %d processes on device %d: one loop each", ids[d], d)
		}
	}
	return out
}

// lifetimeLine names what lies outside the served loop of a whole-process capture: "Whole
// process: before serving: load 2.20s (2.37 GB host to device), warm-up 1.02s (5
// iterations), capture 244.4ms (1 iteration); after serving: shutdown 90.1ms; the 37 steps
// are the served loop's"; "" for a capture of the loop alone.
func lifetimeLine(d *breakdown.DeviceReport) string {
	if len(d.Lifetime) == 0 {
		return ""
	}
	var before, after []string
	for _, s := range d.Lifetime {
		w := strings.ReplaceAll(s.Kind, "_", "-") + " " + breakdown.FormatDuration(int64(s.Dur()))
		switch {
		case s.Bytes > 0:
			w += fmt.Sprintf(" (%.2f GB host to device)", float64(s.Bytes)/1e9)
		case s.Iterations > 0:
			w += fmt.Sprintf(" (%d iteration%s)", s.Iterations, plural(s.Iterations))
		}
		if s.Kind == breakdown.SpanShutdown {
			after = append(after, w)
		} else {
			before = append(before, w)
		}
	}
	out := "Whole process (no capture range): before serving: " + strings.Join(before, ", ")
	if len(after) > 0 {
		out += "; after serving: " + strings.Join(after, ", ")
	}
	return out + fmt.Sprintf("; the %d step%s are the served loop's", len(d.Steps), plural(len(d.Steps)))
}

// notInference says what a report's devices are when none is an inference loop
// (breakdown.DeviceReport.Kind): "this trace holds training steps", "this trace holds
// loading, no serving loop"; "" when any device is one.
func notInference(r *findings.Report) string {
	kind := ""
	for i := range r.Devices {
		k := r.Devices[i].Kind
		if k == breakdown.KindInference {
			return ""
		}
		if kind == "" || k == breakdown.KindTraining {
			kind = k
		}
	}
	if kind == breakdown.KindLoading {
		return "this trace holds loading, no serving loop"
	}
	if kind == "" {
		return ""
	}
	return "this trace holds training steps, not inference"
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

// phaseWhat names the summarised steps: "decode step", or "step (all phases)".
func phaseWhat(sm *breakdown.Summary) string {
	if sm.Phase == breakdown.Unknown {
		return "step (all phases)"
	}
	return sm.Phase.String() + " step"
}

func orNA(s string) string { return orDefault(s, "n/a") }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// outsideText says how much activity belongs to no step (work before the first step,
// between step ranges or after the last).
func outsideText(o *breakdown.Outside) string {
	if o.Windows == 0 {
		return "none"
	}
	return fmt.Sprintf("%s in %d window%s, %d kernels", breakdown.FormatDuration(int64(o.Wall)), o.Windows, plural(o.Windows), o.TotalKernels())
}

func gpuName(s string) string {
	if s == "" {
		return "GPU n/a"
	}
	return s
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

func round6(f float64) float64 { return float64(int64(f*1e6+0.5)) / 1e6 }
