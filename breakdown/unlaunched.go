package breakdown

import (
	"fmt"
	"sync"

	"github.com/stepstat/stepstat/breakdown/steps"
	"github.com/stepstat/stepstat/nsys"
)

// Lost launch rows: nsys drops API records under load (CUPTI's buffers full), and then a
// kernel or copy has no runtime row with its correlation id in its process. Step cuts (a
// synchronize after a launch, graph launches), launches per step, eager-or-replay and the
// phases read those rows, so a capture that lost a material share of them gets a
// self-check warning. Complete captures link every kernel: the kernels of a CUDA graph
// share their graph launch's correlation id, and a graph's work traced at graph level
// its launch's.

// unlaunchedMinShare and unlaunchedMin: the check warns when at least this share (percent)
// of a timeline's launches of kernels and copies, and at least this many, have no launch
// row. A capture
// window may cut a few launches off at its start (work launched before the window opened).
const (
	unlaunchedMinShare = 1
	unlaunchedMin      = 20
)

// launchRows says, per process, which correlation ids have a CUDA API row: a bitmap over
// the process's range of ids where the ids are dense (CUPTI numbers every call of a
// process), a set otherwise. Built once per trace, on first use.
type launchRows struct {
	once  sync.Once
	t     *nsys.Trace
	procs map[nsys.ProcID]*procCorrs
}

type procCorrs struct {
	lo, hi uint32
	n      int // API rows of the process
	bits   []uint64
	set    map[uint32]bool // when the ids are too sparse for a bitmap
}

func (p *procCorrs) has(c uint32) bool {
	if p.set != nil {
		return p.set[c]
	}
	if c < p.lo || c > p.hi {
		return false
	}
	i := c - p.lo
	return p.bits[i/64]&(1<<(i%64)) != 0
}

func (l *launchRows) build() {
	t := l.t
	l.procs = map[nsys.ProcID]*procCorrs{}
	// Per caller (a few thousand) rather than per call (tens of millions): the calls'
	// loops below look up no map.
	byCaller := make([]*procCorrs, len(t.Callers))
	for i := range t.Callers {
		p := t.Callers[i].Proc
		if l.procs[p] == nil {
			l.procs[p] = &procCorrs{lo: 1<<32 - 1}
		}
		byCaller[i] = l.procs[p]
	}
	for _, c := range t.APICalls {
		pc := byCaller[c.Caller]
		pc.lo, pc.hi = min(pc.lo, c.Correlation), max(pc.hi, c.Correlation)
		pc.n++
	}
	for p, pc := range l.procs {
		switch span := uint64(pc.hi-pc.lo) + 1; {
		case pc.n == 0:
			delete(l.procs, p) // a process whose threads made no call
		case span <= 64*uint64(pc.n)+4096:
			pc.bits = make([]uint64, (span+63)/64)
		default:
			pc.set = make(map[uint32]bool, pc.n)
		}
	}
	for _, c := range t.APICalls {
		pc := byCaller[c.Caller]
		if pc.set != nil {
			pc.set[c.Correlation] = true
			continue
		}
		i := c.Correlation - pc.lo
		pc.bits[i/64] |= 1 << (i % 64)
	}
}

// unlaunchedCheck counts the launches of tl (kernels, copies, memsets and graph executions;
// the kernels of one graph launch, which share its correlation id, once) whose process has
// CUDA API rows but none with their correlation id, and warns when they are a material
// share. A process without any API row (a trace without the runtime table) is
// not counted: nothing was lost there, the trace has no host side.
func unlaunchedCheck(tl *steps.Timeline, lr *launchRows) error {
	lr.once.Do(lr.build)
	if len(lr.procs) == 0 {
		return nil
	}
	var all, lost int
	lastKey, lastOK := uint64(1<<64-1), false
	tl.Each(func(a *steps.Activity) bool {
		k := a.Key()
		if k == lastKey {
			return true // a graph's kernels share their launch's id: one launch
		}
		pc := lr.procs[nsys.ProcID(k>>32)]
		if pc == nil {
			return true
		}
		all++
		lastKey, lastOK = k, pc.has(uint32(k))
		if !lastOK {
			lost++
		}
		return true
	})
	if lost < unlaunchedMin || 100*lost < unlaunchedMinShare*all {
		return nil
	}
	return &SelfCheckWarning{fmt.Sprintf("device %d: self-check: %d of %d launches of kernels and copies (%.1f%%) have no launch call (no CUDA API row with their correlation id in their process: nsys likely dropped API records); step cuts, launches per step and phases read the launch calls, so steps and phases may be wrong",
		tl.Dev, lost, all, 100*float64(lost)/float64(all))}
}
