package breakdown

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"

	"github.com/stepstat/stepstat/breakdown/kernelclass"
)

// Summarize runs the pipeline of the package doc on a trace: it classifies the trace's
// kernels (each distinct name once), finds steps on each device, and accounts every step's
// wall time to categories.
func Summarize(t *nsys.Trace, opt Options) (*Report, error) {
	return SummarizeContext(context.Background(), t, opt)
}

// SummarizeContext is Summarize, stopped by ctx: it checks ctx between stages, per device
// and within every pass over a device's activities (every 16,384 of them, so per range of
// steps), and once ctx is done returns ctx.Err() and no report.
func SummarizeContext(ctx context.Context, t *nsys.Trace, opt Options) (*Report, error) {
	rep, err := summarize1(ctx, t, opt)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return rep, err
}

// ContextKernelStats returns the whole-trace kernel table of SummarizeContext's report
// (Report.Kernels: each kernel's category by name and by its place in its step), the same
// rows, without the rest of the report: the steps are found and their kernels classified
// in context, but not accounted or summarised (classify).
func ContextKernelStats(ctx context.Context, t *nsys.Trace, opt Options) ([]KernelStat, error) {
	if t.Run == nil { // several files: their clocks first, with the whole pipeline (run.go)
		opt.kernelsOnly = true
	}
	rep, err := SummarizeContext(ctx, t, opt)
	if err != nil {
		return nil, err
	}
	return rep.Kernels, nil
}

func summarize1(ctx context.Context, t *nsys.Trace, opt Options) (*Report, error) {
	if t.Run != nil && !opt.clockPass {
		return summarizeRun(t, opt) // several files: their clocks first (run.go)
	}
	if !t.HasGPUActivity() {
		return nil, &nsys.Error{Path: t.Path, Err: nsys.ErrNoGPUActivity}
	}
	cls := opt.Classifier
	if cls == nil {
		cls = kernelclass.DefaultClassifier()
	}
	if err := opt.Steps.Check(); err != nil {
		return nil, err
	}
	method := opt.Steps.Method
	if err := CheckSOL(opt); err != nil {
		return nil, err
	}
	rep := &Report{Path: t.Path, Meta: t.Meta, Config: t.Config, Capture: t.Capture, Origin: t.Origin}
	rep.Start, rep.End, _ = t.Span()
	rep.Warnings = append(rep.Warnings, t.Warnings...)

	cats, rules := classifyNames(t, cls)
	h := steps.NewHostIndex(t)
	over := nvtxOverrides(t, opt.NVTXCategories)
	// The whole-trace kernel table is independent of the steps: build it on the other core.
	kernelsDone := make(chan []KernelStat, 1)
	go func() { kernelsDone <- kernelStats(t, cats, rules, over) }()
	defer func() {
		if rep.Kernels == nil {
			<-kernelsDone // on an early error return, do not leave the goroutine behind
		}
	}()

	devs, err := selectDevices(t, opt.Device)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	cc, tls := timelines(ctx, t, h, devs, cats, over, opt.NoContext)
	nvtx, err := steps.MatchNVTX(t, h, tls, method, opt.Steps.NVTX)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if rep.Devices, err = deviceReports(ctx, t, h, cc, tls, nvtx, method, opt); err != nil {
		return nil, err
	}
	if err := forcedFoundNone(t, rep.Devices, method); err != nil {
		return nil, err
	}
	if opt.kernelsOnly {
		rep.Kernels = contextKernelStats(t, <-kernelsDone, cc)
		return rep, nil
	}
	rep.addKernelTables(t, <-kernelsDone, cc)
	for _, d := range rep.Devices {
		rep.Warnings = append(rep.Warnings, d.Warnings...)
	}
	rep.Warnings = append(rep.Warnings, rankChecks(rep.Devices)...)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if rep.Ranks = rankReport(t, tls, over, rep, opt); rep.Ranks != nil {
		rep.Warnings = append(rep.Warnings, rep.Ranks.Warnings...)
	}
	rep.Timelines = stepTimelines(t, tls, rep, opt)
	return rep, nil
}

// addKernelTables sets the report's whole-trace kernel table (kernels, with the moves of
// the context pass) and its step kernels (the devices' summed), and warns of the kernel
// time left unclassified.
func (rep *Report) addKernelTables(t *nsys.Trace, kernels []KernelStat, cc *contextCats) {
	rep.Kernels = contextKernelStats(t, kernels, cc)
	tabs := make([][]KernelStat, len(rep.Devices))
	for i := range rep.Devices {
		tabs[i] = rep.Devices[i].StepKernels
	}
	rep.StepKernels = mergeKernelStats(tabs...)
	if w := unclassifiedWarning(rep.Kernels); w != nil {
		rep.Warnings = append(rep.Warnings, w)
	}
}

// timelines returns each device's timeline, whose kernels have the categories of their
// names, of the NVTX category rules (over) and, unless noContext, of their place in their
// step (the contextCats returned, which the context pass fills; nil with noContext).
func timelines(ctx context.Context, t *nsys.Trace, h *steps.HostIndex, devs []nsys.DeviceID, cats []kernelclass.Category, over steps.KernelCats, noContext bool) (*contextCats, []*steps.Timeline) {
	var cc *contextCats
	kcats := over
	if !noContext {
		cc = newContextCats(t, h, cats, over)
		kcats = cc.cat
	}
	var tls []*steps.Timeline // one per device, or per process on a device several share (procs.go)
	for _, u := range deviceUnits(t, devs) {
		tls = append(tls, &steps.Timeline{Trace: t, Dev: u.dev, OneProc: u.shared, Proc: u.proc, Sharers: u.sharers, Cats: cats, Kernel: kcats, Done: ctx.Done()})
	}
	steps.IndexRows(tls)
	return cc, tls
}

// forcedFoundNone fails a step method asked for (graph, sync, periodic) that found no
// steps on any device, as a forced NVTX method fails without a matching range: the whole trace as
// one step is not what was asked for. A device where it found none while another found
// some keeps the whole trace as its step, with a NoStepsWarning (as nvtx does).
func forcedFoundNone(t *nsys.Trace, drs []DeviceReport, method Method) error {
	none := method.NoneFound()
	if none == "" {
		return nil
	}
	for i := range drs {
		if drs[i].Method != MethodWhole {
			return nil
		}
	}
	return &nsys.Error{Path: t.Path, Err: &NoStepsError{Method: method, What: none}}
}

// A NoStepsError says that the step method asked for (graph, sync or periodic) found no
// steps on any device.
type NoStepsError struct {
	Method Method
	What   string // why, e.g. "no CUDA graph launch cuts the GPU work into repeating steps"
}

func (e *NoStepsError) Error() string {
	return fmt.Sprintf("step method %s found no steps: %s", e.Method, e.What)
}

// selectDevices returns the devices the report covers: every device with activity, or the
// one asked for.
func selectDevices(t *nsys.Trace, want *nsys.DeviceID) ([]nsys.DeviceID, error) {
	devs := make([]nsys.DeviceID, 0, len(t.Devices))
	for _, d := range t.Devices {
		if want == nil || *want == d.ID {
			devs = append(devs, d.ID)
		}
	}
	if len(devs) == 0 {
		var have []string
		for _, d := range t.Devices {
			have = append(have, fmt.Sprint(d.ID))
		}
		return nil, &nsys.Error{Path: t.Path, Err: fmt.Errorf("no activity on device %d (devices with activity: %s)", *want, strings.Join(have, ", "))}
	}
	return devs, nil
}

// deviceReports runs each device's pipeline (device.report); devices are independent
// once NVTX ranges are matched: one goroutine each, GOMAXPROCS of them running at a time.
func deviceReports(ctx context.Context, t *nsys.Trace, h *steps.HostIndex, cc *contextCats, tls []*steps.Timeline, nvtx []*steps.Detection, method Method, opt Options) ([]DeviceReport, error) {
	drs := make([]DeviceReport, len(tls))
	errs := make([]error, len(tls))
	var wg sync.WaitGroup
	// At most GOMAXPROCS devices at a time: hundreds of runnable goroutines kept the
	// signal handler's goroutine waiting for seconds (192 devices: SIGINT took 7 s).
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	lr := &launchRows{t: t} // built once, by the first device that asks
	for i, tl := range tls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			d := &device{t: t, h: h, ctx: cc, tl: tl, method: method, opt: opt, launches: lr}
			var det *steps.Detection
			if nvtx != nil {
				det = nvtx[i]
			}
			drs[i], errs[i] = d.report(det)
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
			}
		}()
	}
	wg.Wait()
	var out []DeviceReport
	for i := range tls {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out = append(out, drs[i])
	}
	return out, nil
}

// A device is the pipeline of one device: the trace, the index of its host calls, the
// device's timeline and the options, and what each stage leaves for the next. The stages
// are its methods, run in order by report.
type device struct {
	t      *nsys.Trace
	h      *steps.HostIndex
	ctx    *contextCats // nil without the context pass (Options.NoContext)
	tl     *steps.Timeline
	method Method
	opt    Options
	// copies: what the copies say of each step (phases), nil without steps of a loop.
	copies []iterCopies
	// launches says which correlation ids have a launch row (unlaunchedCheck).
	launches *launchRows

	dr     DeviceReport
	det    *steps.Detection // the steps found (detect)
	steps  []Step           // accounted, outside windows taken out, warm-up skipped (account, skip)
	shapes []stepShape      // one per step of steps
	starts []bool           // per step: it starts a request (account)
	fwds   []nsys.Time      // the model's forwards (account)
	// trailing: the window outside steps at the end was made a step, a partial iteration the
	// capture's end cut (openTrailingEdge, account).
	trailing bool
}

// report finds the steps of the device (nvtx: its NVTX detection, if any), accounts them,
// infers their phases, and summarises them; once the summary's context is done it stops
// after the stage that saw it, with context.Canceled.
func (d *device) report(nvtx *steps.Detection) (DeviceReport, error) {
	for _, stage := range []func() error{func() error { return d.detect(nvtx) }, d.account, d.phases} {
		if err := stage(); err != nil {
			return d.dr, err
		}
		if d.opt.kernelsOnly {
			return d.dr, nil // detect ran the context pass: the kernels' categories are known
		}
	}
	d.dr.Kind, d.dr.KindWhy = traceKind(d.t, d.tl, d.steps, len(d.fwds)) // training, loading: no inference phases (kind.go)
	markKind(d.steps, d.dr.Kind, d.dr.KindWhy)
	d.skip()
	err := d.summarise()
	nameProcess(&d.dr)
	return d.dr, err
}

// cancelled is context.Canceled once the summary's context is done (timeline.cancelled),
// nil before: the stages that sweep the device's activities check it after the sweep.
func (d *device) cancelled() error {
	if d.tl.Cancelled() {
		return context.Canceled
	}
	return nil
}

// detect finds the steps, with the method that found them.
func (d *device) detect(nvtx *steps.Detection) error {
	det, warn := steps.Detect(d.t, d.h, d.tl, nvtx, d.method)
	d.det = det
	d.dr = DeviceReport{Device: d.tl.Dev, Processes: 1}
	if d.tl.OneProc {
		d.dr.PID = PIDOf(d.t, d.tl.Proc)
		d.dr.Processes = d.tl.Sharers
	} else {
		d.dr.PID = PIDOf(d.t, mainProc(d.t, d.tl))
	}
	if g, ok := d.t.Device(d.tl.Dev); ok {
		d.dr.GPU = g.Name
	}
	if warn != nil {
		d.dr.Warnings = append(d.dr.Warnings, warn)
	}
	d.dr.Method, d.dr.MethodDetail = det.Method, det.Detail
	if d.ctx != nil && det.Method != MethodWhole {
		classifyContext(d.tl, det, d.ctx, d.opt.split) // the whole trace as one step has no place in a step
	}
	return d.cancelled()
}

// account gives each step its time, counts and gaps, marks the steps that capture a CUDA
// graph, and takes the windows outside steps out.
func (d *device) account() error {
	var calls []graphHostCall
	if d.det.Method != MethodWhole {
		calls = graphCalls(d.t, d.tl)
	}
	d.fwds = d.det.Forwards
	if d.fwds == nil && d.det.Method != MethodWhole {
		d.fwds = steps.Forwards(d.t, d.h, d.tl)
	}
	if err := d.cancelled(); err != nil {
		return err
	}
	if len(d.fwds) >= 2 { // a model's loop: a whole process holds more than its served loop (lifetime.go)
		d.dr.Lifetime = lifetimeSpans(d.t, d.tl, d.det, calls)
	}
	ss, shapes := account(d.t, d.h, d.tl, d.det, d.opt.split)
	if err := d.cancelled(); err != nil {
		return err // the sweep stopped part-way
	}
	if d.det.Method != MethodWhole && d.det.Method != MethodNVTX && len(d.fwds) >= 2 {
		d.trailing = openTrailingEdge(d.det, ss, shapes, d.fwds) >= 0
	}
	d.starts = requestStarts(d.det)
	if d.det.Method != MethodWhole {
		markCaptures(ss, d.det.Bounds, calls)
	}
	d.steps, d.shapes, d.dr.Outside = splitOutside(ss, shapes, d.det)
	if d.dr.Lifetime != nil {
		if s, ok := shutdownSpan(d.t, d.tl, d.steps); ok {
			d.dr.Lifetime = append(d.dr.Lifetime, s)
		}
	}
	return nil
}

// phases counts each step's forwards and infers the phases detection gave no phase.
func (d *device) phases() error {
	countStepForwards(d.steps, d.fwds)
	if d.det.Method == MethodWhole {
		for i := range d.steps {
			if d.steps[i].PhaseEvidence == "" {
				d.steps[i].PhaseEvidence = EvidenceWhole
			}
		}
	}
	if d.det.Method != MethodWhole {
		for i := range d.steps {
			if i > 0 && d.steps[i].GraphCapture {
				d.starts[i] = false // the pause before it was the capture, not a new request
			}
		}
		stream, _ := loopStream(d.tl)
		hs := stepHoldings(d.tl, d.steps, stream)
		if err := d.cancelled(); err != nil {
			return err // the sweep stopped part-way
		}
		copies, ok := readBackStream(d.tl, d.fwds)
		if !ok {
			copies = stream
		}
		d.copies = stepCopies(d.tl, copies, d.steps, d.fwds)
		inferPhases(d.steps, hs, d.starts, len(d.fwds) >= 2, d.copies)
		if d.det.Method != MethodNVTX && len(d.fwds) >= 2 {
			if w := markEdges(d.tl.Dev, d.steps, d.shapes, d.trailing, inputCopies(d.tl, d.steps)); w != nil {
				d.dr.Warnings = append(d.dr.Warnings, w)
			}
		}
	}
	return nil
}

// skip drops the warm-up steps and checks the steps left.
func (d *device) skip() {
	if d.opt.Skip > 0 {
		d.dr.Skipped = min(d.opt.Skip, len(d.steps))
		d.steps = d.steps[d.dr.Skipped:]
	}
	d.dr.Steps = d.steps
	d.dr.Warnings = append(d.dr.Warnings, stepChecks(d.tl.Dev, d.steps, len(d.fwds) >= 2)...)

	if d.det.Method != MethodWhole && len(d.fwds) >= 2 { // a language model's forwards
		if w := longMixCheck(d.tl.Dev, d.steps, d.shapes[d.dr.Skipped:]); w != nil {
			d.dr.Warnings = append(d.dr.Warnings, w)
		}
	}
	if d.det.Method != MethodWhole {
		var cp []iterCopies
		if d.copies != nil {
			cp = d.copies[d.dr.Skipped:]
		}
		if w := mixChangeCheck(d.tl.Dev, d.steps, d.shapes[d.dr.Skipped:], cp); w != nil {
			d.dr.Warnings = append(d.dr.Warnings, w)
		}
	}
	if d.det.Method != MethodWhole && d.launches != nil {
		if w := unlaunchedCheck(d.tl, d.launches); w != nil {
			d.dr.Warnings = append(d.dr.Warnings, w)
		}
	}
	if len(d.fwds) < 2 && d.det.Method != MethodWhole {
		if w := foldedPatternCheck(d.tl, d.steps, d.shapes[d.dr.Skipped:]); w != nil {
			d.dr.Warnings = append(d.dr.Warnings, w)
		}
	}
}

// summarise summarises the selected steps, their kernels and the speed-of-light view.
func (d *device) summarise() error {
	dr := &d.dr
	var err error
	dr.Summary, err = summarize(d.steps, d.opt)
	if err != nil {
		dr.Warnings = append(dr.Warnings, fmt.Errorf("device %d: %w", dr.Device, err))
	}
	dr.StepKernels = stepKernels(d.t, d.tl, summarisedWindows(d.steps, &dr.Summary), d.opt.split)
	if k := dr.Summary.Stall.Kernel; k != NoKernel && int(k) < len(d.t.Names) {
		dr.Summary.Stall.Name = d.t.Names[k]
	}
	dr.SOL, err = deviceSOL(dr, d.opt)
	return err
}

// splitOutside takes the windows that belong to no step out of the accounted steps, sums
// them, and numbers the remaining steps in order.
func splitOutside(steps []Step, shapes []stepShape, det *steps.Detection) ([]Step, []stepShape, Outside) {
	var out Outside
	n := 0
	for i := range steps {
		if !det.Bounds[i].Outside {
			steps[n], shapes[n] = steps[i], shapes[i]
			steps[n].Index = n
			n++
			continue
		}
		s := &steps[i]
		out.Windows++
		out.Spans = append(out.Spans, Span{s.Start, s.End})
		out.Wall += s.Wall()
		for c := range s.Exclusive {
			out.Exclusive[c] += s.Exclusive[c]
			out.Busy[c] += s.Busy[c]
			out.Kernels[c] += s.Kernels[c]
		}
	}
	return steps[:n], shapes[:n], out
}

// requestStarts says, for each step of det (in order, outside windows left out), whether it
// starts a request: the first step, and each step right after a window outside steps.
func requestStarts(det *steps.Detection) []bool {
	var out []bool
	after := true
	for _, b := range det.Bounds {
		if b.Outside {
			after = true
			continue
		}
		out = append(out, after)
		after = false
	}
	return out
}

// countStepForwards sets each step's forwards: the forward ends (sorted) in its window.
func countStepForwards(steps []Step, ends []nsys.Time) {
	j := 0
	for i := range steps {
		s := &steps[i]
		for j < len(ends) && ends[j] < s.Start {
			j++
		}
		for j < len(ends) && ends[j] < s.End {
			s.forwards++
			j++
		}
	}
}
