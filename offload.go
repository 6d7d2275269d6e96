package weft

// Off-loop work. Offload runs a function on a pool of goroutines that
// belongs to the Run, and suspends the task until it returns. The pool
// starts workers on demand, up to its bound, and keeps idle ones until Run
// ends, when it stops them all and waits for them: no goroutine outlives
// Run. Jobs beyond the bound wait in FIFO order.
//
// While a job is in flight the loop counts it as external work: Run does
// not end, and the loop sleeps in the kernel instead of reporting a
// deadlock. The job's result comes back through the inbox.

import (
	"io/fs"
	"os"
	"runtime"
	"sync"
)

type offloadPool struct {
	yield   bool // immutable: workers yield to the loops (see reserveProc)
	mu      sync.Mutex
	cond    sync.Cond
	jobs    queue[func()] // guarded by mu
	idle    int           // guarded by mu: workers waiting for a job
	workers int           // guarded by mu: started and not exited
	max     int           // immutable
	closed  bool          // guarded by mu
	claimed bool          // guarded by mu: the pool's spare Ps are reserved
	procs   int           // guarded by mu: how many reserveProcs gave (at most max)
	wg      sync.WaitGroup
}

func newOffloadPool(max int, yield bool) *offloadPool {
	p := &offloadPool{max: max, yield: yield}
	p.cond.L = &p.mu
	return p
}

// defaultOffloadWorkers is the pool bound when WithOffloadWorkers is not
// given: enough for the program's processors (GOMAXPROCS without what
// weft reserved: procs.go), and at least 4 so that a few blocking calls
// (files, DNS) do not queue behind one another on small machines.
func defaultOffloadWorkers() int {
	return max(4, procsBase())
}

// submit queues job and makes sure a worker will run it.
func (p *offloadPool) submit(job func()) {
	p.mu.Lock()
	p.jobs.push(job)
	switch {
	case p.idle > 0:
		p.cond.Signal()
	case p.workers < p.max:
		p.workers++
		p.wg.Add(1)
		if p.yield && !p.claimed {
			// All of the pool's Ps at once, before any worker runs:
			// changing GOMAXPROCS stops the world, which would have to wait
			// for running workers (a long assembly loop cannot be preempted).
			p.claimed = true
			p.procs = reserveProcs(p.max)
		}
		go p.work()
	}
	p.mu.Unlock()
}

func (p *offloadPool) work() {
	defer p.wg.Done()
	if p.yield {
		// The worker keeps its thread for life, at a lower OS priority; the
		// thread ends with the goroutine (it is never unlocked), so the lower
		// priority never passes to other goroutines.
		runtime.LockOSThread()
		lowerThreadPriority()
	}
	p.mu.Lock()
	for {
		for p.jobs.len() == 0 && !p.closed {
			p.idle++
			p.cond.Wait()
			p.idle--
		}
		job, ok := p.jobs.pop()
		if !ok { // closed and drained
			p.workers--
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		job()
		p.mu.Lock()
	}
}

// close stops the workers once the queue is empty and waits for them.
func (p *offloadPool) close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
	releaseProcs(p.procs) // after the workers: nobody changes procs now
	p.procs = 0
}

// WithLoopPriority says whether the loops are kept ahead of Offload
// workers (the default: true), so that CPU-heavy offloaded work can fill
// every core and a loop woken by I/O still runs at once. Turn it off when
// the program manages GOMAXPROCS or thread priorities itself; offloaded
// CPU work that fills every core can then delay a loop by up to the
// runtime's 10 ms preemption. Like every Option, it does not suspend.
//
// Two measures keep the loops ahead of the workers (WithLoopPriority(false)
// turns both off):
//
//  1. A spare P. When every P (the Go runtime's processors, GOMAXPROCS of
//     them) runs CPU-bound work, a loop that I/O wakes finds no P free and
//     waits for the runtime's 10 ms preemption. So each Offload worker
//     brings a P of its own: when a pool that may run W workers starts its
//     first, weft raises GOMAXPROCS by W above the program's own value,
//     and lowers it when the pool closes (when its Run ends). The count
//     is process-wide, since GOMAXPROCS is, and bounded: all Runs
//     together add at most max(32, 8×GOMAXPROCS), however many run side
//     by side, and a pool that finds that reached reserves what is left.
//     It is left alone if someone else changed GOMAXPROCS meanwhile
//     (procs.go).
//  2. A lower priority. With more busy threads than cores, the kernel must
//     still run the loop's thread at once when it wakes. Each worker keeps
//     its OS thread and lowers that thread's priority (on Linux, nice +10):
//     the kernel then preempts a worker for the loop, while the workers
//     still fill every core the loops leave idle.
func WithLoopPriority(on bool) Option {
	return func(o *options) { offloadSettingsOf(o).noLoopPriority = !on }
}

// Offload runs f on a goroutine of the Run's bounded pool and suspends the
// task until f returns, then returns f's result. It is a cancellation
// point: if the task is cancelled, Offload returns the cause (matching
// context.Canceled) at once; an f already handed to the pool still runs,
// and its result is dropped.
//
// Use it for work that would block the loop: CPU-heavy computation,
// blocking system calls, cgo, libraries without a weft API. f must not use
// the Task (it runs on another goroutine, and every Task method panics
// there) but may call t.Context() and use the context: it is done once the
// task is cancelled or has finished. A panic in f becomes a *PanicError.
//
// While f runs, Run stays alive. The pool's size is set by
// WithOffloadWorkers (default: the program's GOMAXPROCS, not counting
// what weft reserved for other Runs, and at least 4); calls beyond it
// wait their turn in FIFO order. CPU-heavy f may fill every core: the
// workers bring processors of their own and run at a lower OS priority, so
// that a loop woken by I/O still runs at once (see WithLoopPriority).
// Blocking f (sleeps, files) run in parallel up to the pool's size.
//
// f cannot be stopped from outside: after a cancellation it runs on to
// completion (pass it t.Context() to let it notice), and Run still waits
// for it before returning, so that no goroutine outlives Run.
//
// In a seeded Run (WithSeed), Offload returns an error wrapping ErrRealIO
// without running f, unless AllowRealIO: f's completion would come when
// the goroutine scheduler says, and the run would not replay.
func Offload[T any](t *Task, f func() (T, error)) (T, error) {
	t.check("Offload")
	if f == nil {
		panic("weft: Offload called with a nil function")
	}
	if err := t.cancelPoint(); err != nil {
		var zero T
		return zero, err
	}
	if err := t.rs.checkIO("Offload"); err != nil {
		var zero T
		return zero, err
	}
	l := t.loop
	if l.aborted {
		var zero T
		return zero, errAborted
	}
	var v T
	var ferr error
	// One allocation for the work and its helper: f may call t.Context().
	w := &struct {
		op extOp
		h  helper
	}{op: extOp{t: t}, h: t.beginHelp()}
	op, h := &w.op, &w.h
	l.startExternal(op, poolOf(l).submit, func() {
		g := h.enter()
		defer func() {
			h.leave(g)
			if r := recover(); r != nil {
				ferr = newPanicError(r)
			}
		}()
		v, ferr = f()
	})
	if err := t.waitExternal(op); err != nil {
		var zero T
		return zero, err
	}
	return v, reraiseMisuse(ferr) // a misuse in f (the Task used there, say) is re-raised
}

// ReadFile reads the named file off the loop (through Offload), suspending
// the task meanwhile, and returns its contents, like os.ReadFile: a
// missing file gives an error matching fs.ErrNotExist. It is a
// cancellation point, as Offload is: if the task is cancelled, ReadFile
// returns the cause (matching context.Canceled).
func ReadFile(t *Task, name string) ([]byte, error) {
	t.check("ReadFile")
	return Offload(t, func() ([]byte, error) { return os.ReadFile(name) })
}

// WriteFile writes data to the named file off the loop (through Offload),
// suspending the task meanwhile, creating it with perm if needed and
// truncating it otherwise, like os.WriteFile. It is a cancellation point,
// as Offload is: if the task is cancelled, WriteFile returns the cause
// (matching context.Canceled), and the write may still complete.
func WriteFile(t *Task, name string, data []byte, perm fs.FileMode) error {
	t.check("WriteFile")
	_, err := Offload(t, func() (struct{}, error) { return struct{}{}, os.WriteFile(name, data, perm) })
	return err
}

// WithOffloadWorkers bounds the goroutines that run Offload calls (and the
// file and name-resolution calls built on it) for one Run. n < 1 means the
// default.
func WithOffloadWorkers(n int) Option {
	return func(o *options) { offloadSettingsOf(o).workers = n }
}

// offloadSettings are the Run's options for the pool.
type offloadSettings struct {
	workers        int
	noLoopPriority bool
}

type offloadKey struct{}

func offloadSettingsOf(o *options) *offloadSettings {
	return layerOption(o, offloadKey{}, func() *offloadSettings { return &offloadSettings{} })
}

// poolOf returns the Run's pool, made on first use; it is closed, and its
// workers waited for, when the loop ends.
func poolOf(l *loop) *offloadPool {
	return layerState(l, offloadKey{}, func() (*offloadPool, func()) {
		var s offloadSettings
		if set, ok := l.rs.layerOpts[offloadKey{}].(*offloadSettings); ok {
			s = *set
		}
		workers := s.workers
		if workers < 1 {
			workers = defaultOffloadWorkers()
		}
		p := newOffloadPool(workers, !s.noLoopPriority)
		l.rs.obs.offload.Store(p)
		return p, p.close
	})
}
