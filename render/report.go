package render

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// MarshalJSON writes the object; encoding/json then escapes and compacts it.
func (c StepCategoriesJSON) MarshalJSON() ([]byte, error) {
	return c.appendJSON(make([]byte, 0, 64*len(c))), nil
}

func (c *StepCategoriesJSON) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, cat := range sortedCategories {
		if i > 0 {
			b = append(b, ',')
		}
		e := &c[cat]
		b = append(b, '"')
		b = append(b, cat.String()...)
		b = append(b, `":{"ns":`...)
		b = strconv.AppendInt(b, e.NS, 10)
		b = append(b, `,"busy_ns":`...)
		b = strconv.AppendInt(b, e.BusyNS, 10)
		b = append(b, `,"kernels":`...)
		b = strconv.AppendInt(b, int64(e.Kernels), 10)
		if e.Gaps != nil {
			b = append(b, `,"gaps":`...)
			b = strconv.AppendInt(b, int64(*e.Gaps), 10)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// MarshalJSON writes the step with its own writer (appendJSON), the one JSON uses.
func (s StepJSON) MarshalJSON() ([]byte, error) { return s.appendJSON(nil), nil }

// appendJSON appends the step as encoding/json would write its fields.
func (s *StepJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(s.Index), 10)
	b = append(b, `,"phase":`...)
	b = appendString(b, s.Phase)
	if s.Label != "" {
		b = append(b, `,"label":`...)
		b = appendString(b, s.Label)
	}
	b = append(b, `,"start_ns":`...)
	b = strconv.AppendInt(b, s.StartNS, 10)
	b = append(b, `,"end_ns":`...)
	b = strconv.AppendInt(b, s.EndNS, 10)
	b = append(b, `,"launches":`...)
	b = strconv.AppendInt(b, int64(s.Launches), 10)
	b = append(b, `,"categories":`...)
	b = s.Categories.appendJSON(b)
	b = append(b, `,"gaps":`...)
	b = s.Gaps.appendJSON(b)
	return append(b, '}')
}

// MarshalJSON writes the gaps with their own writer (appendJSON), the one steps use.
func (g GapsJSON) MarshalJSON() ([]byte, error) { return g.appendJSON(nil), nil }

func (g *GapsJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"count":`...)
	b = strconv.AppendInt(b, int64(g.Count), 10)
	b = append(b, `,"total_ns":`...)
	b = strconv.AppendInt(b, g.TotalNS, 10)
	b = append(b, `,"sizes":`...)
	b = appendSorted(b, gapSizeKeys, g.Sizes[:])
	b = append(b, `,"size_ns":`...)
	b = appendSorted(b, gapSizeKeys, g.SizeNS[:])
	b = append(b, `,"host_ns":`...)
	b = appendSorted(b, hostKeys, g.HostNS[:])
	return append(b, '}')
}

// sortedCategories lists the categories by id, the key order of a JSON object from a map.
var sortedCategories = func() []kernelclass.Category {
	cs := make([]kernelclass.Category, 0, kernelclass.NumCategories)
	for c := kernelclass.Category(0); c < kernelclass.NumCategories; c++ {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b kernelclass.Category) int { return strings.Compare(a.String(), b.String()) })
	return cs
}()

func (g GapSizesJSON) MarshalJSON() ([]byte, error) { return sortedObject(gapSizeKeys, g[:]), nil }
func (h HostJSON) MarshalJSON() ([]byte, error)     { return sortedObject(hostKeys, h[:]), nil }

// A keyOrder lists the keys of an object in sorted order, with the index of each value
// and the key as a JSON string (HTML characters escaped, as encoding/json does).
type keyOrder []keyIdx

type keyIdx struct {
	key, quoted string
	idx         int
}

func newKeyOrder(names []string) keyOrder {
	k := make(keyOrder, len(names))
	for i, n := range names {
		k[i] = keyIdx{n, string(appendString(nil, n)), i}
	}
	slices.SortFunc(k, func(a, b keyIdx) int { return strings.Compare(a.key, b.key) })
	return k
}

var (
	gapSizeKeys = newKeyOrder(breakdown.GapSizeNames[:])
	hostKeys    = newKeyOrder([]string{breakdown.HostSync: "sync", breakdown.HostCopy: "copy",
		breakdown.HostLaunch: "launch", breakdown.HostNone: "none"})
)

// sortedObject writes {"key":value,...} in the key order; encoding/json escapes the result.
func sortedObject(keys keyOrder, vals []int64) []byte {
	return appendSorted(make([]byte, 0, 24*len(keys)), keys, vals)
}

func appendSorted(b []byte, keys keyOrder, vals []int64) []byte {
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, k.quoted...)
		b = append(b, ':')
		b = strconv.AppendInt(b, vals[k.idx], 10)
	}
	return append(b, '}')
}

func gapsJSON(g *breakdown.Gaps) GapsJSON {
	out := GapsJSON{Count: g.Count, TotalNS: int64(g.Total)}
	for i := range breakdown.GapSizeNames {
		out.Sizes[i] = int64(g.Sizes[i])
		out.SizeNS[i] = int64(g.SizeNS[i])
	}
	for i := range g.Host {
		out.HostNS[i] = int64(g.Host[i])
	}
	return out
}

// set makes sj the JSON contract of step s (idle's gap count points into sj.Gaps).
func (sj *StepJSON) set(s *breakdown.Step) {
	*sj = StepJSON{Index: s.Index, Phase: s.Phase.String(), Label: s.Label, StartNS: int64(s.Start), EndNS: int64(s.End),
		Launches: s.Launches, Gaps: gapsJSON(&s.Gaps)}
	for _, c := range kernelclass.Order {
		sj.Categories[c] = StepCatJSON{NS: int64(s.Exclusive[c]), BusyNS: int64(s.Busy[c]), Kernels: s.Kernels[c]}
	}
	sj.Categories[kernelclass.Idle].Gaps = &sj.Gaps.Count
}

// NewReportJSON builds the JSON contract from a report.
func NewReportJSON(r *findings.Report) *ReportJSON {
	out := &ReportJSON{Schema: ReportSchema,
		Source: SourceJSON{Path: r.Path, NsysVersion: r.Meta.NsysVersion, ExportSchema: r.Meta.SchemaVersion},
		Config: configJSON(r.Config), Devices: []DeviceJSON{}, Kernels: []KernelJSON{}, Warnings: []string{}}
	for di, d := range r.Devices {
		dj := DeviceJSON{Device: int(d.Device), GPU: d.GPU, StepMethod: d.Method.String(), MethodDetail: d.MethodDetail,
			Skipped: d.Skipped, Steps: make([]StepJSON, len(d.Steps))}
		for i := range d.Steps {
			dj.Steps[i].set(&d.Steps[i])
		}
		sm := &d.Summary
		dj.Decode = SummaryJSON{Phase: sm.Phase.String(), Steps: sm.Steps, MedianNS: int64(sm.Median), P10NS: int64(sm.P10),
			P90NS: int64(sm.P90), MeanNS: int64(sm.Mean), LaunchesPerStep: round3(sm.LaunchesPerStp), KernelsPerStep: round3(sm.KernelsPerStep),
			GapsPerStep: round3(sm.GapsPerStep), Categories: map[string]SummaryCatJSON{}, Gaps: gapsJSON(&sm.Gaps)}
		for _, c := range kernelclass.Order {
			cs := sm.Categories[c]
			dj.Decode.Categories[c.String()] = SummaryCatJSON{MedianNS: int64(cs.Median), P90NS: int64(cs.P90), MeanNS: int64(cs.Mean),
				Share: round6(cs.Share), KernelsPerStep: round3(cs.KernelsPerStep), CallsMedian: cs.CallsMedian,
				BusyPerCallNS: int64(cs.BusyPerCall)}
		}
		dj.Outside = outsideJSON(&d.Outside)
		dj.SOL = solJSON(d.SOL)
		dj.Findings = findingsJSON(r.Findings[di])
		out.Devices = append(out.Devices, dj)
	}
	for _, k := range r.Kernels {
		kj := KernelJSON{Name: k.Name, Category: k.Category.String(), Rule: k.Rule, Count: k.Count, TotalNS: int64(k.Total)}
		if k.NCCL != nil {
			kj.NCCL = &NCCLJSON{Op: k.NCCL.Op, RedOp: k.NCCL.RedOp, Algo: k.NCCL.Algo, Proto: k.NCCL.Proto, DType: k.NCCL.DType,
				ProtoSet: protoSet(r.Config)}
		}
		out.Kernels = append(out.Kernels, kj)
	}
	for _, w := range r.Warnings {
		out.Warnings = append(out.Warnings, WarningText(w))
	}
	out.Ranks = ranksJSON(r.Ranks)
	return out
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
func round6(f float64) float64 { return float64(int64(f*1e6+0.5)) / 1e6 }

// JSON writes the report as JSON contract v1, compact (reports of long traces are large;
// pipe through jq for reading). The bytes are those of encoding/json on NewReportJSON's
// value, and the layout is that value's: jsonStream walks NewReportJSON's value of the
// report without its steps field by field, and writes each device's steps, most of a long
// trace's report, one at a time by their own writer (StepJSON.appendJSON) instead of
// building them all and reflecting over them: 12x faster and 1,000x less memory on 200,000
// steps (BenchmarkJSON).
func JSON(w io.Writer, r *findings.Report) error {
	head := NewReportJSON(&findings.Report{Report: stepless(r.Report), Findings: r.Findings})
	s := &jsonStream{bw: bufio.NewWriterSize(w, 256<<10)}
	s.object(reflect.ValueOf(head).Elem(), func(name string) bool {
		if name != "devices" {
			return false
		}
		s.b = append(s.b, '[')
		for i := range head.Devices {
			if i > 0 {
				s.b = append(s.b, ',')
			}
			s.object(reflect.ValueOf(&head.Devices[i]).Elem(), func(name string) bool {
				if name != "steps" {
					return false
				}
				s.steps(r.Devices[i].Steps)
				return true
			})
		}
		s.b = append(s.b, ']')
		return true
	})
	s.b = append(s.b, '\n')
	s.flush()
	if s.err != nil {
		return s.err
	}
	return s.bw.Flush()
}

// jsonStream writes a JSON document in pieces, as encoding/json would write it whole.
type jsonStream struct {
	bw  *bufio.Writer
	b   []byte
	err error
}

// value appends v through encoding/json.
func (s *jsonStream) value(v any) {
	if s.err != nil {
		return
	}
	j, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	s.b = append(s.b, j...)
}

func (s *jsonStream) flush() {
	if s.err == nil {
		_, s.err = s.bw.Write(s.b)
	}
	s.b = s.b[:0]
}

// object appends struct v as encoding/json would: its fields in order under their json
// names, omitempty ones left out when empty. own(name) writes a field's value itself and
// returns true, or returns false to have it written through encoding/json.
func (s *jsonStream) object(v reflect.Value, own func(name string) bool) {
	s.b = append(s.b, '{')
	n := 0
	for i := 0; i < v.NumField(); i++ {
		name, opts, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		f := v.Field(i)
		if opts == "omitempty" && emptyJSON(f) {
			continue
		}
		if n > 0 {
			s.b = append(s.b, ',')
		}
		n++
		s.b = appendString(s.b, name)
		s.b = append(s.b, ':')
		if !own(name) {
			s.value(f.Interface())
		}
	}
	s.b = append(s.b, '}')
}

// emptyJSON reports whether encoding/json's omitempty leaves v out.
func emptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return v.IsZero()
}

// steps appends a device's steps as a JSON array, one StepJSON at a time.
func (s *jsonStream) steps(steps []breakdown.Step) {
	s.b = append(s.b, '[')
	var sj StepJSON // one for every step: its writer needs no allocation per step
	for k := range steps {
		if k > 0 {
			s.b = append(s.b, ',')
		}
		sj.set(&steps[k])
		s.b = sj.appendJSON(s.b)
		if len(s.b) >= 128<<10 {
			s.flush()
		}
	}
	s.b = append(s.b, ']')
}

// outsideJSON converts the activity outside steps; nil when there is none.
func outsideJSON(o *breakdown.Outside) *OutsideJSON {
	if o.Windows == 0 {
		return nil
	}
	out := &OutsideJSON{Windows: o.Windows, NS: int64(o.Wall), Kernels: o.TotalKernels(), Categories: map[string]OutsideCatJSON{}}
	for _, c := range kernelclass.Order {
		out.Categories[c.String()] = OutsideCatJSON{NS: int64(o.Exclusive[c]), BusyNS: int64(o.Busy[c]), Kernels: o.Kernels[c]}
	}
	return out
}

// stepless returns a copy of r whose devices have no steps.
func stepless(r *breakdown.Report) *breakdown.Report {
	out := *r
	out.Devices = slices.Clone(r.Devices)
	for i := range out.Devices {
		out.Devices[i].Steps = nil
	}
	return &out
}

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
	Top int // number of kernel rows
}

// Text writes the report as text: header, per-device decode table, idle line, canonical
// sentences, top kernels and warnings.
func Text(w io.Writer, r *findings.Report, opt TextOptions) error {
	ew := &errWriter{w: w}
	textHeadline(ew, r)
	ew.printf("\n")
	ver := TerminalSafe(orNA(r.Meta.NsysVersion))
	ew.printf("Trace: %s  (nsys %s, %d device%s)\n", TerminalSafe(r.Path), ver, len(r.Devices), plural(len(r.Devices)))
	if s := ConfigLine(r.Config); s != "" {
		ew.printf("%s\n", TerminalSafe(s))
	}
	if s := NCCLProtoNote(r.Config, reportProtos(r.Report)); s != "" {
		ew.printf("NCCL protocol: %s\n", TerminalSafe(s))
	}
	for i := range r.Devices {
		ew.printf("\n")
		textDevice(ew, r, i)
	}
	textRanks(ew, r.Report)
	if opt.Top > 0 && len(r.Kernels) > 0 {
		var total int64
		for _, k := range r.Kernels {
			total += int64(k.Total)
		}
		ew.printf("\nTop kernels (whole trace, all devices):\n")
		ew.printf("%10s %7s %7s %10s  %-12s %s\n", "total", "share", "count", "avg", "category", "name")
		for i, k := range r.Kernels {
			if i == opt.Top {
				break
			}
			ew.printf("%10s %7s %7d %10s  %-12s %s\n", breakdown.FormatDuration(int64(k.Total)), breakdown.FormatPercent(frac(int64(k.Total), total)), k.Count,
				breakdown.FormatDuration(int64(k.Total)/int64(max(k.Count, 1))), k.Category, ShortName(TerminalSafe(k.Name)))
		}
	}
	if len(r.Warnings) > 0 {
		ew.printf("\nWarnings:\n")
		for i, wn := range r.Warnings {
			ew.printf("  %d. %s\n", i+1, TerminalSafe(WarningText(wn)))
		}
	}
	return ew.err
}

// MaxNameText is the longest kernel name the text report prints whole; longer names
// (templated kernels run to thousands of characters) keep their head and tail. JSON and
// HTML keep every name whole.
const MaxNameText = 160

// ShortName shortens a name longer than MaxNameText to its first 120 and last 36
// characters around " … ".
func ShortName(s string) string {
	r := []rune(s)
	if len(r) <= MaxNameText {
		return s
	}
	return string(r[:120]) + " … " + string(r[len(r)-36:])
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

// PhaseCounts returns the number of steps per phase, as text like "1 prefill, 12 decode".
func PhaseCounts(steps []breakdown.Step) string {
	var n [3]int
	for _, s := range steps {
		n[s.Phase]++
	}
	var parts []string
	for _, p := range []breakdown.Phase{breakdown.Prefill, breakdown.Decode, breakdown.Unknown} {
		if n[p] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[p], p))
		}
	}
	return strings.Join(parts, ", ")
}

func textDevice(ew *errWriter, r *findings.Report, di int) {
	d := &r.Devices[di]
	gpu := d.GPU
	if gpu == "" {
		gpu = "GPU n/a"
	}
	n := len(d.Steps) + d.Skipped
	ew.printf("Device %d (%s): %d step%s by %s (%s): %s", d.Device, TerminalSafe(gpu), n, plural(n), d.Method, TerminalSafe(d.MethodDetail), PhaseCounts(d.Steps))
	if d.Skipped > 0 {
		ew.printf("; %d skipped", d.Skipped)
	}
	ew.printf("\n")
	if o := &d.Outside; o.Windows > 0 {
		ew.printf("Outside steps: %s (work before the first step, between step ranges or after the last; in no step)\n", outsideText(o))
	}
	sm := &d.Summary
	if sm.Steps == 0 {
		ew.printf("  no steps to summarise\n")
		return
	}
	ew.printf("%s\n", SummaryLead(sm))
	rows := summaryRows(sm)
	w := 12 // the category column: wider only when a longer id (untraced_graph) is shown
	for _, r := range rows {
		w = max(w, len(r.cat.String()))
	}
	ew.printf("%s:\n", SummaryCaption(sm))
	ew.printf("%-*s %10s %7s %12s\n", w, "category", "mean/step", "share", "kernels/step")
	for _, r := range rows {
		ew.printf("%-*s %10s %7s %12s\n", w, r.cat, r.mean, r.share, r.kernels)
	}
	ew.printf("%-*s %10s %7s %12.1f\n", w, "total", breakdown.FormatDuration(int64(sm.Mean)), "100%", sm.KernelsPerStep)
	ew.printf("%s\n", IdleLine(sm))
	for _, s := range DeviceSentences(r.Report, d) {
		ew.printf("  %s\n", s)
	}
	if s := SOLLine(d); s != "" {
		ew.printf("%s\n", s)
	}
}

// SummaryLead is the line over the decode table: the distribution of the whole step
// (median, p10, p90, mean), the steps and the launches and kernels per step.
func SummaryLead(sm *breakdown.Summary) string {
	return fmt.Sprintf("%s: median %s  p10 %s  p90 %s  mean %s  (%d step%s; %.1f host launches/step, %.1f kernels/step)",
		capitalize(phaseWhat(sm)), breakdown.FormatDuration(int64(sm.Median)), breakdown.FormatDuration(int64(sm.P10)), breakdown.FormatDuration(int64(sm.P90)),
		breakdown.FormatDuration(int64(sm.Mean)), sm.Steps, plural(sm.Steps), sm.LaunchesPerStp, sm.KernelsPerStep)
}

// SummaryCaption names the decode table's statistic: means per step, which add up to the
// mean step (medians of categories do not add up to the median step).
func SummaryCaption(sm *breakdown.Summary) string {
	return fmt.Sprintf("By category, mean per %s (the rows add up to the mean step, %s; share = mean/step over the mean step)",
		phaseWhat(sm), breakdown.FormatDuration(int64(sm.Mean)))
}

// GapSizeLabels are the gap-size classes as text and charts write them (the JSON keys are
// breakdown.GapSizeNames, which the contract fixes).
var GapSizeLabels = [breakdown.NumGapSizes]string{"<10µs", "10-100µs", "100µs-1ms", ">1ms"}

// IdleLine describes the idle gaps of a summary in one line: per step, the gaps and the
// idle time of each gap size, and what the host did meanwhile.
func IdleLine(sm *breakdown.Summary) string {
	g := &sm.Gaps
	n := float64(max(sm.Steps, 1))
	var sizes []string
	for i, name := range GapSizeLabels {
		if g.Sizes[i] > 0 {
			sizes = append(sizes, fmt.Sprintf("%s %.1f gaps = %s", name, float64(g.Sizes[i])/n, breakdown.FormatDurationF(float64(g.SizeNS[i])/n)))
		}
	}
	var host []string
	for i, name := range breakdown.HostActivityNames {
		if g.Host[i] > 0 {
			host = append(host, fmt.Sprintf("%s %s", name, breakdown.FormatPercent(frac(int64(g.Host[i]), int64(g.Total)))))
		}
	}
	if g.Count == 0 {
		return "Idle: no gaps"
	}
	return fmt.Sprintf("Idle: %.1f gaps/step, %s/step (per step by gap size: %s); host meanwhile: %s",
		sm.GapsPerStep, breakdown.FormatDuration(int64(g.Total)/int64(n)), strings.Join(sizes, ", "), strings.Join(host, ", "))
}

// Sentences returns the canonical sentences of a summary, one per category holding at
// least 1% of the step, largest first, in the decode table's statistic (means per step), e.g.
// "gemm: 104.7µs/step = 4.76% of the mean decode step; 21.0 calls/step x 4.994µs busy each"
// (busy time can exceed the exclusive time when streams overlap).
func Sentences(sm *breakdown.Summary) []string {
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

// TerminalSafe replaces control characters (escape sequences included) in untrusted text,
// such as kernel names and NVTX text, so that it cannot drive the terminal.
func TerminalSafe(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x100 && unsafeRune(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		case unsafeRune(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unsafeRune reports control characters (C0, DEL, C1) and the bidirectional controls
// and separators that reorder or break what a terminal shows (U+202E, right-to-left
// override, makes "gemm_kernel" display backwards and hides text).
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// summaryRow is one category line of the summary table, formatted: the display model that
// the text and HTML reports share.
type summaryRow struct {
	cat                  kernelclass.Category
	mean, share, kernels string
}

// summaryRows lists the categories present in the summary (idle always), in Order.
func summaryRows(sm *breakdown.Summary) []summaryRow {
	var rows []summaryRow
	for _, c := range kernelclass.Order {
		cs := sm.Categories[c]
		if cs.Share == 0 && cs.KernelsPerStep == 0 && c != kernelclass.Idle {
			continue
		}
		kps := fmt.Sprintf("%.1f", cs.KernelsPerStep)
		if c == kernelclass.Idle {
			kps = "-"
		}
		rows = append(rows, summaryRow{c, breakdown.FormatDuration(int64(cs.Mean)), breakdown.FormatPercent(cs.Share), kps})
	}
	return rows
}

// WarningText is the text of a report warning; a warning about an option names the flag
// that sets it.
func WarningText(w error) string {
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
