package weft

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"time"

	"github.com/weft-go/weft/internal/clock"
	"github.com/weft-go/weft/internal/coro"
	"github.com/weft-go/weft/internal/poller"
)

// Option configures Run. The functions that make one (AllowRealIO and the
// With... functions) take no task and do not suspend; Run applies the
// options as it starts.
type Option func(*options)

type options struct {
	sim     *simOptions // WithSeed and the options of a seeded Run (seed.go)
	network Network     // WithNetwork (seed_network.go)

	ctx       context.Context
	backend   poller.Kind
	clock     clock.Clock
	interval  time.Duration
	layer     map[any]any // the layers' settings (layerOption)
	logger    *slog.Logger
	loggerSet bool
	loops     int        // WithLoops
	loopsSet  bool       // WithLoops was given (a number, or LoopsFromEnv)
	loopsEnv  bool       // ... with LoopsFromEnv: loops holds WEFT_LOOPS's number
	obs       obsOptions // WithWatchdog, WithTrace (observe.go)
	err       error      // a bad option; Run returns it
}

// WithContext makes ctx the parent of every task's Context: its values are
// visible to all tasks, and when ctx is cancelled, main is cancelled (and
// with it every task it started) with ctx's cause.
func WithContext(ctx context.Context) Option {
	return func(o *options) { o.ctx = ctx }
}

// WithVirtualTime runs the loop on a virtual clock that starts at start
// and moves only when every task waits: the loop then jumps to the next
// deadline instead of sleeping. Sleeps and timeouts take no real time, and
// a run is repeatable. While a task waits on an fd or off-loop work is
// pending, virtual time stands still until that completes.
func WithVirtualTime(start time.Time) Option {
	return func(o *options) { o.clock = clock.NewVirtual(start) }
}

// Run runs main as the first task of a new loop on the calling goroutine
// and returns when no task is left: main and every task it started, awaited
// or not, have finished, and no timer, fd wait or off-loop work remains.
// It returns main's value and error. Run is not a task's operation: it
// blocks the calling goroutine, which must not be a task's (from a task it
// returns ErrNestedRun). A cancelled WithContext context cancels main and
// every task it started, and Run returns once they have finished, with
// what main returned.
//
// Failures are never silent: the error of every task that failed (an error
// or a panic, but not a cancellation) and that no Await, All or Race
// returned to anyone is joined to main's error, so errors.Is and errors.As
// find it.
//
// If the tasks deadlock, Run returns a *DeadlockError naming them (see
// DeadlockError); it does not hang.
//
// Independent Runs may run in parallel on different goroutines.
func Run[T any](main func(t *Task) (T, error), opts ...Option) (T, error) {
	var zero T
	if main == nil {
		return zero, errors.New("weft: Run called with a nil function")
	}
	if coro.Running() {
		return zero, ErrNestedRun
	}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.err != nil {
		return zero, o.err
	}
	rs, err := newRunState(o)
	if err != nil {
		return zero, err
	}
	rs.registerRun()
	defer rs.unregisterRun()
	defer rs.startObs(&o)()
	l := rs.loops[0]
	c := newTask(l, &rs.root.root, main, 0, spawnRun, 0)
	rs.main = &c.task
	l.ready(rs.main)
	if stop := rs.watchContext(); stop != nil {
		defer stop()
	}
	rs.startLoops()

	finished := false
	defer func() {
		if !finished {
			rs.abort(l) // a Goexit is passing through
		}
	}()
	l.run()
	if l.aborted {
		// A task of another loop called runtime.Goexit: unwind this loop
		// too, and end this goroutine as that one ended.
		finished = true
		rs.abort(l)
		runtime.Goexit()
	}
	finished = true
	rs.stopped.Wait()
	rs.close()

	var errs []error
	v := c.promise.val
	if d := rs.deadlock.Load(); d != nil && d.MainBlocked {
		v = zero
		errs = append(errs, d)
	} else {
		if err := c.promise.p.err; err != nil {
			errs = append(errs, err)
		}
		if d != nil {
			errs = append(errs, d)
		}
	}
	errs = append(errs, rs.unobservedErrors()...)
	for _, err := range errs {
		reraiseMisuse(err) // a misuse in main or in a task nobody awaited: Run's caller panics
	}
	switch len(errs) {
	case 0:
		return v, nil
	case 1:
		return v, errs[0]
	}
	return v, errors.Join(errs...)
}

// newRunState makes a Run's state and its loops.
func newRunState(o options) (*runState, error) {
	n := loopCount(&o)
	rs := &runState{multi: n > 1, ctx: o.ctx, labels: getProfLabel(), layerOpts: o.layer}
	rs.obs.awakeCh = make(chan struct{}, 1)
	if rs.ctx == nil {
		rs.ctx = context.Background()
	}
	rs.clock = o.clock
	rs.network = o.network
	if o.seeded() {
		rs.clock = simClock(&o)
	}
	if rs.clock == nil {
		rs.clock = clock.NewReal()
	}
	rs.logger = slog.Default()
	if o.loggerSet {
		rs.logger = o.logger
	}
	rs.report = &failureReport{logger: rs.logger}
	for i := range n {
		l, err := newLoop(rs, i, o)
		if err != nil {
			for _, l := range rs.loops {
				l.poller.Close()
				l.thread.Unregister()
			}
			return nil, err
		}
		rs.loops = append(rs.loops, l)
	}
	if rs.sim = newSimState(&o); rs.sim != nil {
		rs.sim.clock, rs.sim.start = rs.clock, rs.clock.Nanotime()
		rs.loops[0].sim = rs.sim
		rs.loops[0].timers.rnd = &rs.sim.rng
	}
	rs.root.loop = rs.loops[0]
	rs.root.rs = rs
	rs.root.state = stateRunning
	rs.root.root.task = &rs.root
	return rs, nil
}

// startLoops starts the goroutines of loops 1 to n-1 (loop 0 runs on
// Run's goroutine).
func (rs *runState) startLoops() {
	for _, l := range rs.loops[1:] {
		rs.stopped.Add(1)
		go func() {
			defer rs.stopped.Done()
			finished := false
			defer func() {
				if !finished {
					rs.requestAbort() // a Goexit is passing through this loop
					l.unwind()
				}
			}()
			l.run()
			finished = true
			if l.aborted {
				l.unwind()
			}
		}()
	}
}

// close ends the Run once every loop has stopped: no more posts, the
// layers' state closed, coroutines and pollers released.
func (rs *runState) close() {
	if rs.sim != nil {
		rs.sim.finish()
	}
	for _, l := range rs.loops {
		l.closeInbox()
	}
	rs.coros.close()
	for _, fn := range rs.layerClose {
		fn()
	}
	for _, l := range rs.loops {
		l.poller.Close()
		l.thread.Unregister()
		if l.reserved > 0 {
			releaseProcs(l.reserved)
			l.reserved = 0
		}
		if l.locked {
			l.locked = false
			runtime.UnlockOSThread()
		}
	}
}

// watchContext cancels main when Run's context is cancelled.
func (rs *runState) watchContext() (stop func() bool) {
	if rs.ctx.Done() == nil {
		return nil
	}
	return context.AfterFunc(rs.ctx, func() {
		cause := asCancellation(context.Cause(rs.ctx))
		rs.lock()
		l := rs.main.loop
		rs.unlock()
		l.post(func() { l.cancel(rs.main, cause) })
	})
}

// abort tears the Run down while a runtime.Goexit passes through loop l's
// goroutine (or after another loop's): every loop stops and unwinds its
// tasks, so that no goroutine is left; on Run's goroutine it waits for the
// other loops and closes the Run.
func (rs *runState) abort(l *loop) {
	rs.requestAbort()
	l.unwind()
	if l.id == 0 {
		rs.stopped.Wait()
		rs.close()
	}
}

// requestAbort makes every loop stop and unwind (once).
func (rs *runState) requestAbort() {
	if !rs.aborting.CompareAndSwap(false, true) {
		return
	}
	rs.report.ended.Store(true) // no error will be returned: nothing to log either
	for _, l := range rs.loops {
		l.post(func() { l.aborted = true })
	}
}

// unwind closes every coroutine of l's tasks that is still suspended: each
// one's wait returns an error and it unwinds, its defers run.
func (l *loop) unwind() {
	l.aborted = true
	// Tasks that wait without having started (waitUnstarted) have no
	// coroutine to unwind: what their function would have released is
	// released for them, once.
	var dropped []func()
	l.rs.lock()
	l.rs.walkTasks(func(t *Task) {
		if r := t.obs.rec.Load(); t.loop == l && t.co == nil && r != nil && r.dropped != nil { // waiting, or woken and never run
			dropped = append(dropped, r.dropped)
			r.dropped = nil
		}
	})
	l.rs.unlock()
	for _, fn := range dropped {
		fn()
	}
	for {
		var busy []*coro.Coro
		l.rs.lock()
		l.rs.walkTasks(func(t *Task) {
			if t.loop == l && t.co != nil && t.co.Busy() {
				busy = append(busy, t.co)
			}
		})
		l.rs.unlock()
		if len(busy) == 0 {
			return
		}
		for _, c := range busy {
			prev := l.switchTo(c) // its deferred calls run as the task
			c.Close()
			l.switchBack(prev)
		}
	}
}
