package breakdown

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/stepstat/stepstat/nsys"
)

// This file puts the files of a run given as several exports (nsys.MergeRun: one per node
// or per process) on one clock. The files are placed by their session starts; the rank view
// (ranks.go) then matches the collectives across ranks, and since a collective ends at
// nearly the same instant on every rank, the median difference of the matched calls' ends
// between a file's ranks and the reference file's is that file's clock error: the trace is
// shifted by it (nsys.Trace.ShiftFiles) and summarised again.

// minUncertainty is the least uncertainty stated for an offset refined from collectives:
// the ends of one collective are not simultaneous to better than about a microsecond. In
// the 2-GPU captures of testdata and ../shared/traces/truth (one file, one clock), the
// median difference of the matched calls' ends between the ranks is 1-271 ns, and 919 ns
// with NCCL_PROTO=Simple (tp2_eager_simple), beyond the spread of the differences (443 ns).
const minUncertainty = time.Microsecond

// maxClockPasses bounds the summaries of a run: the first on the session starts, then one
// per refinement while a correction exceeds its uncertainty (the steps' alignment by time
// can change once the clocks agree).
const maxClockPasses = 4

// A RunClock says how the files of a run were put on one clock.
type RunClock struct {
	Files []RunClockFile
	// Devices has one entry per device of the report (Report.Devices order): where it
	// comes from.
	Devices []RunClockDevice
	// Reference indexes Files: the file whose clock is the run's.
	Reference int
	// ByCollectives is true when at least one file's offset was refined from matched
	// collectives; false means the cross-rank timing is by wall clock (session starts) only.
	ByCollectives bool
	// Passes is the number of summaries made (1 when no offset was refined).
	Passes int
}

// A RunClockFile is one file of the run and its place on the run's clock.
type RunClockFile struct {
	Path   string
	Origin nsys.Origin
	// WallOffset is the file's session start minus the reference file's; Offset is what
	// was added to the file's timestamps: WallOffset plus Correction.
	WallOffset, Offset time.Duration
	// Correction is the clock error found from the collectives (Offset - WallOffset), and
	// Uncertainty the spread of the matched calls' end differences after it (half their
	// 10-90% range, with the residual not applied), at least minUncertainty; both 0 unless
	// Refined.
	Correction, Uncertainty time.Duration
	// Refined is true when the file's offset was refined from collectives; Matched is the
	// number of matched calls it was refined from (each compares every rank of the file
	// with every rank of the reference file).
	Refined bool
	Matched int
	// Drift is how much the matched calls' end differences change over Span, the time the
	// calls cover: a rate difference of the hosts' clocks, which one offset per file does
	// not take out (it is exact at mid-capture; Uncertainty holds the drift). Reported
	// when it exceeds the spread around it and minUncertainty; 0 otherwise.
	Drift, Span time.Duration
	// Devices are the report's device ids of the file's devices.
	Devices []nsys.DeviceID
}

// A RunClockDevice says where a device of the report comes from.
type RunClockDevice struct {
	Device nsys.DeviceID // the report's (merged) device id
	File   int           // index into RunClock.Files
	CUDA   nsys.DeviceID // the CUDA device ordinal in its file
	PID    int64
	Label  string // file, process, device, RANK/LOCAL_RANK: nsys.Run.Label
}

// summarizeRun summarises a merged trace, refines its files' offsets from the matched
// collectives, and summarises it again on the refined clock.
func summarizeRun(t *nsys.Trace, opt Options) (*Report, error) {
	opt.clockPass = true
	rep, err := Summarize(t, opt)
	if err != nil {
		return nil, err
	}
	if err := oneRunCheck(t.Run, rep); err != nil {
		return nil, err
	}
	passes := 1
	var est clockEstimate
	for {
		est = estimateClock(t.Run, rep)
		if !est.shift() || passes == maxClockPasses {
			break
		}
		t.ShiftFiles(est.delta)
		if rep, err = Summarize(t, opt); err != nil {
			return nil, err
		}
		passes++
	}
	if err := endsCheck(t.Run, est); err != nil {
		return nil, err
	}
	rep.Run = runClock(t.Run, rep, est, passes)
	if !rep.Run.ByCollectives {
		rep.Warnings = append(rep.Warnings, errors.New("run of several files: no collective matched across the files' ranks, so cross-rank timing is by wall clock only (the files' session starts, as exact as the hosts' clocks)"))
	}
	for i, f := range rep.Run.Files {
		if f.Drift != 0 {
			rep.Warnings = append(rep.Warnings, fmt.Errorf("%s: its clock drifts against %s's: the matched collectives' end differences change by %s over %s (%.1f ppm); one offset per file is exact at mid-capture, the stated ± %s includes the drift",
				filepath.Base(f.Path), filepath.Base(rep.Run.Files[rep.Run.Reference].Path), FormatDuration(int64(f.Drift)), FormatDuration(int64(f.Span)),
				float64(f.Drift)/float64(f.Span)*1e6, FormatDuration(int64(f.Uncertainty))))
		}
		if !f.Origin.HasStart && i != rep.Run.Reference {
			rep.Warnings = append(rep.Warnings, fmt.Errorf("%s: no session start recorded (TARGET_INFO_SESSION_START_TIME): placed at the reference file's start", filepath.Base(f.Path)))
		}
	}
	return rep, nil
}

// clockEstimate is one refinement of the files' offsets.
type clockEstimate struct {
	delta   []time.Duration // per file, to add to its offset
	spread  []time.Duration // per file, half the 10-90% range of the end differences
	matched []int           // per file, matched calls compared
	// detrended is spread around the line of the differences over time (a drift of the
	// hosts' clock rates taken out); drift is that line's change over span, the time the
	// matched calls cover.
	detrended, drift, span []time.Duration
}

// shift reports whether a correction is worth applying: larger than its uncertainty (and
// than a nanosecond).
func (e *clockEstimate) shift() bool {
	for i, d := range e.delta {
		if e.matched[i] > 0 && d != 0 && (d.Abs() > e.spread[i] || d.Abs() > time.Microsecond) {
			return true
		}
	}
	return false
}

// estimateClock compares the ends of the matched collectives of each file's ranks with those
// of the reference file's: the median difference is the file's correction.
func estimateClock(run *nsys.Run, rep *Report) clockEstimate {
	n := len(run.Files)
	est := clockEstimate{delta: make([]time.Duration, n), spread: make([]time.Duration, n), matched: make([]int, n),
		detrended: make([]time.Duration, n), drift: make([]time.Duration, n), span: make([]time.Duration, n)}
	rr := rep.Ranks
	if rr == nil || len(rr.Calls) == 0 {
		return est
	}
	fileOf := make([]int, len(rr.Devices))
	for d := range rr.Devices {
		fileOf[d] = run.Devices[rr.Devices[d].Device].File
	}
	diffs := make([][]float64, n)
	at := make([][]float64, n) // the reference rank's end of each difference
	for _, c := range rr.Calls {
		for d, a := range c.Arrivals {
			f := fileOf[d]
			if f == run.Reference {
				continue
			}
			for r, b := range c.Arrivals {
				if fileOf[r] == run.Reference {
					diffs[f] = append(diffs[f], float64(b.End-a.End))
					at[f] = append(at[f], float64(b.End))
				}
			}
		}
	}
	for f := range diffs {
		if len(diffs[f]) == 0 {
			continue
		}
		med := QuantileF(diffs[f], 0.5)
		est.delta[f] = time.Duration(math.Round(med))
		est.spread[f] = time.Duration(math.Round(halfRange(diffs[f])))
		est.matched[f] = len(rr.Calls)
		// A rate difference of the hosts' clocks (drift) makes the differences a line in
		// time rather than a constant: its slope (Theil-Sen), the change over the matched
		// calls' span, and the spread around it.
		slope := theilSen(at[f], diffs[f])
		lo, hi := slices.Min(at[f]), slices.Max(at[f])
		mid := (lo + hi) / 2
		res := make([]float64, len(diffs[f]))
		for i := range res {
			res[i] = diffs[f][i] - slope*(at[f][i]-mid)
		}
		est.detrended[f] = time.Duration(math.Round(halfRange(res)))
		est.drift[f] = time.Duration(math.Round(slope * (hi - lo)))
		est.span[f] = time.Duration(hi - lo)
	}
	return est
}

// halfRange is half the 10-90% range of xs.
func halfRange(xs []float64) float64 { return (QuantileF(xs, 0.9) - QuantileF(xs, 0.1)) / 2 }

// theilSen returns the Theil-Sen slope of ys over xs: the median of the pairwise slopes, of
// at most 256 points evenly spread over the samples (robust to the few calls matched
// wrongly); 0 with fewer than 2 points of distinct x.
func theilSen(xs, ys []float64) float64 {
	const most = 256
	idx := make([]int, 0, most)
	for i := 0; i < most && i < len(xs); i++ {
		idx = append(idx, i*len(xs)/min(most, len(xs)))
	}
	var slopes []float64
	for a := range idx {
		for b := a + 1; b < len(idx); b++ {
			i, j := idx[a], idx[b]
			if dx := xs[j] - xs[i]; dx != 0 {
				slopes = append(slopes, (ys[j]-ys[i])/dx)
			}
		}
	}
	return QuantileF(slopes, 0.5)
}

// oneRunCheck refuses files whose ranks run a different number of collective kernels per
// aligned step than the reference file's: not the ranks of one run.
func oneRunCheck(run *nsys.Run, rep *Report) error {
	rr := rep.Ranks
	if rr == nil || len(rr.Steps) == 0 {
		return nil
	}
	per := make([]float64, len(run.Files))
	has := make([]bool, len(run.Files))
	count := make([]int, len(run.Files))
	for _, d := range rr.Devices {
		f := run.Devices[d.Device].File
		per[f] += float64(d.Kernels) / float64(len(rr.Steps))
		count[f]++
		has[f] = true
	}
	ref := run.Reference
	if !has[ref] {
		return nil
	}
	want := math.Round(per[ref] / float64(count[ref]))
	for f := range run.Files {
		if !has[f] || f == ref {
			continue
		}
		got := math.Round(per[f] / float64(count[f]))
		if got != want {
			return &nsys.NotOneRunError{Path: run.Files[f].Path, Other: run.Files[ref].Path,
				Why: fmt.Sprintf("its GPUs run %.0f collective kernels per aligned step, %s's %.0f", got, filepath.Base(run.Files[ref].Path), want)}
		}
	}
	return nil
}

// maxEndSpread is the largest spread of the matched calls' end differences (half their
// 10-90% range) of ranks of one run: the ends of one collective agree to a microsecond on
// NVLink (minUncertainty); ranks of different runs matched by position end milliseconds apart.
const maxEndSpread = 50 * time.Microsecond

// endsCheck refuses a file whose matched collectives do not end together with the
// reference file's on the refined clock: not ranks of one run.
func endsCheck(run *nsys.Run, est clockEstimate) error {
	for f := range run.Files {
		if est.matched[f] > 0 && est.detrended[f] > maxEndSpread {
			ref := run.Files[run.Reference].Path
			return &nsys.NotOneRunError{Path: run.Files[f].Path, Other: ref, Why: fmt.Sprintf(
				"the %d collectives matched with %s's do not end together (their ends differ by ±%s at the best offset and clock drift; ranks of one run: about a microsecond)",
				est.matched[f], filepath.Base(ref), FormatDuration(int64(est.detrended[f])))}
		}
	}
	return nil
}

// runClock builds the report's RunClock from the run and the last estimate (the residual
// spread after the corrections applied).
func runClock(run *nsys.Run, rep *Report, est clockEstimate, passes int) *RunClock {
	rc := &RunClock{Reference: run.Reference, Passes: passes}
	for i, f := range run.Files {
		cf := RunClockFile{Path: f.Path, Origin: f.Origin, WallOffset: f.WallOffset, Offset: f.Offset,
			Correction: f.Offset - f.WallOffset, Devices: slices.Clone(f.Devices)}
		if f.Refined && est.matched[i] == 0 { // placed by the ends at merge, no call matched by steps
			cf.Refined, cf.Uncertainty = true, 2*minUncertainty // the width of the ends' pile
			rc.ByCollectives = true
		}
		if est.matched[i] > 0 {
			cf.Refined, cf.Matched = true, est.matched[i]
			cf.Uncertainty = max(est.spread[i], est.delta[i].Abs(), minUncertainty)
			rc.ByCollectives = true
			if d := est.drift[i].Abs(); d > 2*est.detrended[i] && d > minUncertainty {
				cf.Drift, cf.Span = est.drift[i], est.span[i]
			}
		}
		rc.Files = append(rc.Files, cf)
	}
	for _, d := range rep.Devices {
		if int(d.Device) >= len(run.Devices) {
			continue
		}
		rd := run.Devices[d.Device]
		rc.Devices = append(rc.Devices, RunClockDevice{Device: d.Device, File: rd.File, CUDA: rd.Device, PID: rd.PID, Label: run.Label(d.Device)})
	}
	return rc
}
