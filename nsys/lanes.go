package nsys

import (
	"cmp"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/stepstat/stepstat/nsys/sqlitefile"
)

// A job reads one table: its tasks run concurrently with other jobs' tasks, each on a
// lane's own connection, then finish (if any) puts the results together.
type job struct {
	tasks  []func(*reader) error
	finish func(*reader) error
	first  bool // a long task: start it before the others
}

// runJobs plans the jobs in order, runs all their tasks on one lane per core (GOMAXPROCS,
// each with its own connection), then the finishes concurrently. Warnings are kept
// in job order whichever lane produced them: a job's plan, tasks, then finish.
func (r *reader) runJobs(plans []func(*reader) (*job, error)) error {
	jobs, queue, err := r.planJobs(plans)
	if err != nil {
		return err
	}
	r.runTasks(jobs, queue)
	// A table the direct reader stopped on comes first: the read is done again through
	// SQLite (Open), which then gives whatever error the others had.
	var first error
	for _, p := range jobs {
		for _, err := range p.errs {
			if err != nil && sqlitefile.IsUnhandled(err) {
				return err
			}
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return first
	}
	ferrs := make([]error, len(jobs))
	var fg errgroup.Group
	for i, p := range jobs {
		if p.job.finish != nil {
			fg.Go(func() error {
				ferrs[i] = p.job.finish(&p.r)
				return nil
			})
		}
	}
	fg.Wait()
	for _, err := range ferrs {
		if err != nil {
			return err
		}
	}
	for _, p := range jobs {
		r.t.Warnings = append(r.t.Warnings, p.r.warns[:p.nplan]...)
		for _, w := range p.warns {
			r.t.Warnings = append(r.t.Warnings, w...)
		}
		r.t.Warnings = append(r.t.Warnings, p.r.warns[p.nplan:]...)
	}
	return nil
}

// A plannedJob is a job of runJobs with what its plan and tasks gave.
type plannedJob struct {
	r     reader // the job's own reader: its warnings
	job   *job
	warns [][]error // by task
	errs  []error   // by task
	nplan int       // warnings from the plan
}

// A taskRef names task t of job j.
type taskRef struct{ j, t int }

// planJobs runs the plans in order and returns their jobs, and the queue of their tasks:
// the long tasks first, else in job order.
func (r *reader) planJobs(plans []func(*reader) (*job, error)) ([]*plannedJob, []taskRef, error) {
	jobs := make([]*plannedJob, len(plans))
	var queue []taskRef
	for i, plan := range plans {
		p := &plannedJob{r: *r}
		p.r.warns = nil
		j, err := plan(&p.r)
		if err != nil {
			return nil, nil, err
		}
		if j == nil {
			j = &job{}
		}
		p.job, p.warns, p.errs, p.nplan = j, make([][]error, len(j.tasks)), make([]error, len(j.tasks)), len(p.r.warns)
		jobs[i] = p
		for t := range j.tasks {
			queue = append(queue, taskRef{i, t})
		}
	}
	slices.SortStableFunc(queue, func(a, b taskRef) int {
		return -cmp.Compare(b2i(jobs[a.j].job.first), b2i(jobs[b.j].job.first))
	})
	return jobs, queue, nil
}

// runTasks runs the queued tasks, each on a lane, keeping each one's error and warnings
// in its job.
func (r *reader) runTasks(jobs []*plannedJob, queue []taskRef) {
	// Each task borrows a lane; the group runs at most as many tasks as there are lanes,
	// starting them in queue order. A lane per core Go may use (GOMAXPROCS), no fixed
	// count: SQLite steps a lane's rows in C, outside Go's count of running goroutines, so
	// more lanes than GOMAXPROCS would use cores the user did not give.
	nl := max(1, runtime.GOMAXPROCS(0))
	lanes := make(chan reader, nl)
	for i := 0; i < nl; i++ {
		lanes <- *r
	}
	var g errgroup.Group
	g.SetLimit(nl)
	for _, tr := range queue {
		g.Go(func() error {
			l := <-lanes
			defer func() { lanes <- l }()
			// Every task runs, even after another failed, so that the error returned is
			// the same whichever lane got there first: the first in job order.
			p := jobs[tr.j]
			if p.errs[tr.t] = l.ctx.Err(); p.errs[tr.t] != nil {
				return nil
			}
			t := l
			t.warns, t.cache = nil, procCache{}
			p.errs[tr.t] = p.job.tasks[tr.t](&t)
			p.warns[tr.t] = t.warns
			return nil
		})
	}
	g.Wait()
}

// procTable numbers processes (globalPid) as the lanes meet them; renumberProcs makes the
// numbering independent of that order.
type procTable struct {
	mu  sync.Mutex
	ids map[int64]ProcID
	pid []int64
}

// procCache remembers the last few processes looked up: rows of a table come from a
// handful of processes, interleaved (one per rank), and the shared table takes a lock.
type procCache struct {
	global [4]int64
	id     [4]ProcID
	n      int // entries in use
	next   int // the entry to replace next
}

// proc returns the ProcID of a globalPid (or globalTid: the thread bits are cleared).
func (r *reader) proc(global int64) ProcID {
	global &^= 0xFFFFFF
	c := &r.cache
	for i := 0; i < c.n; i++ {
		if c.global[i] == global {
			return c.id[i]
		}
	}
	pt := r.shared.procs
	pt.mu.Lock()
	p, ok := pt.ids[global]
	if !ok {
		p = ProcID(len(pt.pid))
		pt.ids[global] = p
		pt.pid = append(pt.pid, global)
	}
	pt.mu.Unlock()
	c.global[c.next], c.id[c.next] = global, p
	c.next = (c.next + 1) % len(c.global)
	if c.n < len(c.global) {
		c.n++
	}
	return p
}

// renumberProcs orders Trace.Procs by globalPid and rewrites every ProcID to match.
func (r *reader) renumberProcs() {
	pids := slices.Clone(r.shared.procs.pid)
	slices.Sort(pids)
	r.t.Procs = pids
	remap := make([]ProcID, len(pids))
	sorted := true
	for old, g := range r.shared.procs.pid {
		n, _ := slices.BinarySearch(pids, g)
		remap[old] = ProcID(n)
		sorted = sorted && old == n
	}
	if sorted {
		return
	}
	for i := range r.t.Sites {
		r.t.Sites[i].Proc = remap[r.t.Sites[i].Proc]
	}
	for i := range r.t.Memops {
		r.t.Memops[i].Proc = remap[r.t.Memops[i].Proc]
	}
	for i := range r.t.Graphs {
		r.t.Graphs[i].Proc = remap[r.t.Graphs[i].Proc]
	}
	for i := range r.t.Callers {
		r.t.Callers[i].Proc = remap[r.t.Callers[i].Proc]
	}
	for i := range r.t.Ranges {
		r.t.Ranges[i].Proc = remap[r.t.Ranges[i].Proc]
	}
	// Orders that broke ties by Proc may change: restore them.
	sortKernels(r.t.Kernels, r.t.Sites)
	sortUnlessSorted(r.t.Memops, memopOrder)
}
