package render

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stepstat/stepstat/breakdown"
	"github.com/stepstat/stepstat/breakdown/findings"
	"github.com/stepstat/stepstat/breakdown/kernelclass"
	"github.com/stepstat/stepstat/render/schema"
)

// This file writes the report's JSON contract (package schema's types): NewReportJSON builds
// it, JSON streams it.

// appendStep appends step s as encoding/json writes its schema.StepJSON (stepJSON's
// value), without building that value: the writer of a report's steps.
func appendStep(b []byte, s *breakdown.Step) []byte {
	b = appendInt(b, `{"index":`, int64(s.Index))
	b = append(b, `,"phase":`...)
	b = appendString(b, s.Phase.String())
	if s.Label != "" {
		b = append(b, `,"label":`...)
		b = appendString(b, s.Label)
	}
	b = appendNonZero(b, `,"pid":`, s.PID)
	b = appendInt(b, `,"start_ns":`, int64(s.Start))
	b = appendInt(b, `,"end_ns":`, int64(s.End))
	b = appendInt(b, `,"launches":`, int64(s.Launches))
	b = appendNonZero(b, `,"draft_forwards":`, int64(s.DraftForwards))
	b = appendNonZero(b, `,"batch":`, int64(s.Batch))
	b = append(b, `,"cut_by":`...)
	b = appendString(b, s.CutBy)
	b = append(b, `,"phase_evidence":`...)
	b = appendString(b, s.PhaseEvidence)
	b = appendNonZero(b, `,"draft_depth":`, int64(s.DraftDepth))
	b = appendNonZero(b, `,"verify_depth":`, int64(s.VerifyDepth))
	if s.GraphCapture {
		b = append(b, `,"graph_capture":true`...)
	}
	b = appendNonZero(b, `,"capture_host_ns":`, int64(s.CaptureHost))
	b = append(b, `,"categories":`...)
	b = appendStepCategories(b, s)
	b = append(b, `,"gaps":`...)
	b = appendGaps(b, &s.Gaps)
	return append(b, '}')
}

// appendStepCategories appends the step's categories as encoding/json writes its
// schema.StepCategoriesJSON: keyed by category id in sorted order, idle with its gap count.
func appendStepCategories(b []byte, s *breakdown.Step) []byte {
	b = append(b, '{')
	for i, cat := range sortedCategories {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, cat.String()...)
		b = appendInt(b, `":{"ns":`, int64(s.Exclusive[cat]))
		b = appendInt(b, `,"busy_ns":`, int64(s.Busy[cat]))
		b = appendInt(b, `,"kernels":`, int64(s.Kernels[cat]))
		if cat == kernelclass.Idle {
			b = appendInt(b, `,"gaps":`, int64(s.Gaps.Count))
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendGaps appends the gaps as encoding/json writes their schema.GapsJSON (gapsJSON's).
func appendGaps(b []byte, g *breakdown.Gaps) []byte {
	b = appendInt(b, `{"count":`, int64(g.Count))
	b = appendInt(b, `,"total_ns":`, int64(g.Total))
	b = append(b, `,"sizes":`...)
	b = appendSorted(b, gapSizeKeys, g.Sizes[:])
	b = append(b, `,"size_ns":`...)
	b = appendSorted(b, gapSizeKeys, g.SizeNS[:])
	b = append(b, `,"host_ns":`...)
	b = appendSorted(b, hostKeys, g.Host[:])
	b = append(b, `,"api_ns":`...)
	b = appendSorted(b, apiKeys, g.API[:])
	return append(b, '}')
}

// appendInt appends the field's key (with its comma, as in `,"batch":`) and v.
func appendInt(b []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(b, key...), v, 10)
}

// appendNonZero appends the field as appendInt does unless v is 0: an omitempty field.
func appendNonZero(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return appendInt(b, key, v)
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

// keyed returns vals as an object keyed by names (vals[i] under names[i]).
func keyed[T ~int | ~int64](names []string, vals []T) map[string]int64 {
	out := make(map[string]int64, len(names))
	for i, n := range names {
		out[n] = int64(vals[i])
	}
	return out
}

func apiJSON(a *[breakdown.NumAPIGroups]time.Duration) schema.APIJSON {
	return keyed(breakdown.APIGroupKeys[:], a[:])
}

func outliersJSON(o *breakdown.Outliers) *schema.OutliersJSON {
	if len(o.Steps) == 0 {
		return nil
	}
	lg := apiJSON(&o.LongGap.API)
	return &schema.OutliersJSON{Steps: o.Steps, Factor: breakdown.OutlierFactor, MedianNS: int64(o.Median), WallNS: int64(o.Wall),
		IdleNS: int64(o.Idle), LongestGapNS: int64(o.LongGap.Dur()), LongestGap: lg}
}

func stallJSON(s *breakdown.Stall) *schema.StallJSON {
	if s.Steps == 0 {
		return nil
	}
	return &schema.StallJSON{Kernel: s.Name, Steps: s.Steps, TotalNS: int64(s.Total), APINS: apiJSON(&s.API)}
}

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

// hostNames are the keys of the host activities (breakdown.HostSync...).
var hostNames = []string{breakdown.HostSync: "sync", breakdown.HostCopy: "copy",
	breakdown.HostLaunch: "launch", breakdown.HostNone: "none"}

var (
	gapSizeKeys = newKeyOrder(breakdown.GapSizeNames[:])
	hostKeys    = newKeyOrder(hostNames)
	apiKeys     = newKeyOrder(breakdown.APIGroupKeys[:])
)

// appendSorted appends {"key":value,...} in the key order, as encoding/json writes a map.
func appendSorted[T ~int | ~int64](b []byte, keys keyOrder, vals []T) []byte {
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, k.quoted...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(vals[k.idx]), 10)
	}
	return append(b, '}')
}

func gapsJSON(g *breakdown.Gaps) schema.GapsJSON {
	return schema.GapsJSON{Count: g.Count, TotalNS: int64(g.Total), Sizes: keyed(breakdown.GapSizeNames[:], g.Sizes[:]),
		SizeNS: keyed(breakdown.GapSizeNames[:], g.SizeNS[:]), HostNS: keyed(hostNames, g.Host[:]), APINS: apiJSON(&g.API)}
}

// stepJSON is the JSON contract of step s (appendStep writes its bytes).
func stepJSON(s *breakdown.Step) schema.StepJSON {
	sj := schema.StepJSON{Index: s.Index, Phase: s.Phase.String(), Label: s.Label, PID: s.PID, StartNS: int64(s.Start), EndNS: int64(s.End),
		Launches: s.Launches, Gaps: gapsJSON(&s.Gaps), DraftForwards: s.DraftForwards, Batch: s.Batch,
		CutBy: s.CutBy, PhaseEvidence: s.PhaseEvidence, DraftDepth: s.DraftDepth, VerifyDepth: s.VerifyDepth,
		GraphCapture: s.GraphCapture, CaptureHostNS: int64(s.CaptureHost),
		Categories: make(schema.StepCategoriesJSON, kernelclass.NumCategories)}
	for _, c := range kernelclass.Order {
		cj := schema.StepCatJSON{NS: int64(s.Exclusive[c]), BusyNS: int64(s.Busy[c]), Kernels: s.Kernels[c]}
		if c == kernelclass.Idle {
			n := s.Gaps.Count
			cj.Gaps = &n
		}
		sj.Categories[c.String()] = cj
	}
	return sj
}

// NewReportJSON builds the JSON contract from a report.
func NewReportJSON(r *findings.Report) *schema.ReportJSON {
	out := &schema.ReportJSON{Schema: schema.ReportSchema,
		Source: schema.SourceJSON{Path: r.Path, NsysVersion: r.Meta.NsysVersion, ExportSchema: r.Meta.SchemaVersion},
		Config: configJSON(r.Config), Devices: []schema.DeviceJSON{}, Kernels: []schema.KernelJSON{}, Warnings: []string{}}
	for di, d := range r.Devices {
		dj := schema.DeviceJSON{Device: int(d.Device), TraceKind: cmp.Or(d.Kind, "inference"), KindEvidence: d.KindWhy, PID: d.PID, Processes: d.Processes, GPU: d.GPU, StepMethod: d.Method.String(), MethodDetail: d.MethodDetail,
			Skipped: d.Skipped, Steps: make([]schema.StepJSON, len(d.Steps))}
		for i := range d.Steps {
			dj.Steps[i] = stepJSON(&d.Steps[i])
		}
		sm := &d.Summary
		dj.Decode = schema.SummaryJSON{Phase: sm.Phase.String(), Steps: sm.Steps, MedianNS: int64(sm.Median), P10NS: int64(sm.P10),
			P90NS: int64(sm.P90), MeanNS: int64(sm.Mean), LaunchesPerStep: round3(sm.LaunchesPerStp), KernelsPerStep: round3(sm.KernelsPerStep),
			GapsPerStep: round3(sm.GapsPerStep), Categories: map[string]schema.SummaryCatJSON{}, Gaps: gapsJSON(&sm.Gaps),
			Outliers: outliersJSON(&sm.Outliers), Stall: stallJSON(&sm.Stall)}
		for _, c := range kernelclass.Order {
			cs := sm.Categories[c]
			dj.Decode.Categories[c.String()] = schema.SummaryCatJSON{MedianNS: int64(cs.Median), P90NS: int64(cs.P90), MeanNS: int64(cs.Mean),
				Share: round6(cs.Share), KernelsPerStep: round3(cs.KernelsPerStep), CallsMedian: cs.CallsMedian,
				BusyPerCallNS: int64(cs.BusyPerCall)}
		}
		dj.Outside = outsideJSON(&d.Outside)
		for _, s := range d.Lifetime {
			dj.OutsideLoop = append(dj.OutsideLoop, schema.LoopSpanJSON{Kind: s.Kind, StartNS: int64(s.Start), EndNS: int64(s.End),
				NS: int64(s.Dur()), Iterations: s.Iterations, Bytes: s.Bytes})
		}
		dj.SOL = solJSON(d.SOL)
		dj.Findings = findingsJSON(r.Findings[di])
		dj.Source = deviceSource(r.Run, int(d.Device))
		dj.Rounds = roundsJSON(r, di)
		out.Devices = append(out.Devices, dj)
	}
	for _, k := range r.Kernels {
		kj := schema.KernelJSON{Name: k.Name, Category: k.Category.String(), Rule: k.Rule, Count: k.Count, TotalNS: int64(k.Total)}
		if k.NCCL != nil {
			kj.NCCL = &schema.NCCLJSON{Op: k.NCCL.Op, RedOp: k.NCCL.RedOp, Algo: k.NCCL.Algo, Proto: k.NCCL.Proto, DType: k.NCCL.DType,
				ProtoSet: protoSet(r.Config)}
		}
		out.Kernels = append(out.Kernels, kj)
	}
	for _, w := range r.Warnings {
		out.Warnings = append(out.Warnings, warningText(w))
	}
	out.Ranks = ranksJSON(r.Ranks)
	out.Run = runJSON(r.Run)
	out.Plan = planJSON(r)
	return out
}

// JSON writes the report as JSON contract v1, compact (reports of long traces are large;
// pipe through jq for reading). The bytes are those of encoding/json on NewReportJSON's
// value, and the layout is that value's: jsonStream walks NewReportJSON's value of the
// report without its steps field by field, and writes each device's steps, most of a long
// trace's report, one at a time by their own writer (appendStep) instead of
// building them all and reflecting over them: 12x faster and 1,000x less memory on 200,000
// steps (BenchmarkJSON).
func JSON(w io.Writer, r *findings.Report) error {
	cp := *r
	cp.Report = stepless(r.Report)
	head := NewReportJSON(&cp)
	for di := range head.Devices { // the rounds are counted over the steps
		head.Devices[di].Rounds = roundsJSON(r, di)
	}
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

// steps appends a device's steps as a JSON array, one at a time (appendStep).
func (s *jsonStream) steps(steps []breakdown.Step) {
	s.b = append(s.b, '[')
	for k := range steps {
		if k > 0 {
			s.b = append(s.b, ',')
		}
		s.b = appendStep(s.b, &steps[k])
		if len(s.b) >= 128<<10 {
			s.flush()
		}
	}
	s.b = append(s.b, ']')
}

// outsideJSON converts the activity outside steps; nil when there is none.
func outsideJSON(o *breakdown.Outside) *schema.OutsideJSON {
	if o.Windows == 0 {
		return nil
	}
	out := &schema.OutsideJSON{Windows: o.Windows, NS: int64(o.Wall), Kernels: o.TotalKernels(), Categories: map[string]schema.OutsideCatJSON{}}
	for _, c := range kernelclass.Order {
		out.Categories[c.String()] = schema.OutsideCatJSON{NS: int64(o.Exclusive[c]), BusyNS: int64(o.Busy[c]), Kernels: o.Kernels[c]}
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

// roundsJSON is device d's rounds; nil when it has neither rounds nor tokens.
func roundsJSON(r *findings.Report, d int) *schema.RoundsJSON {
	rd := findings.RoundsOf(r, d)
	if rd.Rounds == 0 && rd.Tokens == 0 {
		return nil
	}
	return &schema.RoundsJSON{Steps: rd.Steps, Rounds: rd.Rounds, DraftForwards: round3(rd.DraftForwards), Speculative: rd.Speculative,
		Tokens: rd.Tokens, TokensFrom: rd.TokensFrom, PerTokenNS: int64(rd.PerToken), TokensPerStep: round3(rd.TokensPerStep)}
}
