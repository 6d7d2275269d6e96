package weft

// Blocking: a call into blocking Go code (a database driver, a cloud SDK,
// a library that waits on Go channels or locks) on a goroutine of its own,
// while the task that makes it waits suspended and its loop runs other
// tasks. Tokio's spawn_blocking, asyncio's to_thread, Trio's
// to_thread.run_sync.
//
// It is a layer, like the Offload pool (offload.go), on the core's
// external work (external.go): the call is counted as off-loop work of
// the task's loop, so Run stays alive and no deadlock is reported while
// it runs, and its completion comes back through the inbox. Unlike
// Offload's pool, which is bounded by the CPU count because it is for CPU
// work, Blocking's goroutines only wait: up to WithBlockingLimit of them
// (10,000 by default) run at once per Run, and further calls queue in
// FIFO order on a Semaphore.
//
// Goroutines are reused: a goroutine whose call has returned waits a
// little for the next one (blockingIdle) before it ends, so that a task
// calling a database in a loop pays for a wake-up, not a goroutine start,
// per call. When the Run ends, the idle goroutines are told to stop and
// waited for: none outlives Run.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultBlockingLimit is how many Blocking calls may run at once in one
// Run when WithBlockingLimit is not given.
const DefaultBlockingLimit = 10000

// Blocking runs f on a goroutine of its own (not the loop, not the Offload
// pool), suspends the task until f returns, and returns f's result. If the
// task is cancelled while f runs, ctx is cancelled and Blocking still
// waits for f and returns what f returned (the task's next suspension
// point returns the cancellation); a task cancelled before f starts
// (already, or while it waits for a slot: WithBlockingLimit) gets the
// cause (matching context.Canceled), and f does not run.
//
// Use it to call blocking Go code from a task: database and cache clients
// (database/sql, pgx, go-redis), cloud SDKs, anything that waits on the
// network, a Go channel, a sync lock or time.Sleep. Use Offload instead
// for CPU-heavy work: its pool is sized to the cores, while Blocking's
// goroutines only wait and are many.
//
// ctx is the task's context where Blocking is called (t.Context()): it
// carries the values of Run's context and the deadline of a Timeout
// around the call, and it is cancelled, with the cause (context.Cause
// gives it; Err is context.DeadlineExceeded when a deadline passed), when
// the task is cancelled. Since Blocking then still waits for f, so that
// nothing outlives the call, give f's blocking calls ctx so that they
// return early (f's own error then usually reports the cancellation of
// ctx). ctx is not cancelled when Blocking returns, but when the scope it
// belongs to ends (the Timeout, Group or Protect around the call returns,
// or the task finishes): a transaction that database/sql ties to the
// context it began with lasts until then. ctx is the task's, not a
// context the caller holds: an HTTP handler that wants its request's
// deadline to reach f (r.Context(), which middleware may have given a
// timeout) calls whttp.BlockingCall, which merges the two.
//
// f must not use the Task, nor anything bound to it (a Conn's ReadWriter,
// a whttp ResponseWriter): it runs on another goroutine, and doing so
// panics with a "weft:" message, which Blocking raises again in the
// calling task with f's stack. Any other panic in f reaches the caller as
// a child task's does: Blocking returns a *PanicError.
//
// While f runs, the task waits without holding its loop, is not
// deadlocked (Run stays alive and waits for f before it returns), and
// shows in Dump as waiting on "off-loop work (Blocking)" at the line of
// the call. A call that returns at once costs about a goroutine start and
// a wake-up of the loop; goroutines are reused between calls. In a seeded
// Run (WithSeed), Blocking returns an error wrapping ErrRealIO without
// running f, unless AllowRealIO.
func Blocking[T any](t *Task, f func(ctx context.Context) (T, error)) (T, error) {
	t.check("Blocking")
	if f == nil {
		panic("weft: Blocking called with a nil function")
	}
	var zero T
	if err := t.cancelPoint(); err != nil {
		return zero, err
	}
	if err := t.rs.checkIO("Blocking"); err != nil {
		return zero, err
	}
	if t.loop.aborted {
		return zero, errAborted
	}
	bs := blockingOf(t.loop)
	if err := bs.slots.acquire(t, 1, "Blocking (queued: WithBlockingLimit)"); err != nil {
		return zero, err
	}
	c := &blockingCall[T]{f: f, ctx: t.context()}
	c.run(t, bs)
	bs.slots.release(1, t.loop)
	if c.panicked != nil {
		return zero, reraiseMisuse(c.panicked) // a misuse in f (the Task used there) is re-raised
	}
	return c.v, c.err
}

// blockingCall is one Blocking call: f, its context, and what it gave.
type blockingCall[T any] struct {
	op       extOp
	f        func(ctx context.Context) (T, error)
	ctx      context.Context // the task's, of the scope Blocking was called in
	v        T
	err      error
	panicked *PanicError
	wg       sync.WaitGroup // done when f has returned: for Run's unwinding
}

// call runs f on its goroutine. It must not suspend the calling task.
func (c *blockingCall[T]) call() {
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil {
				c.panicked = newPanicError(r)
			} else {
				// runtime.Goexit (t.FailNow, say): the goroutine ends, the
				// call still completes.
				var zero T
				c.v, c.err = zero, errBlockingGoexit
			}
		}
		c.wg.Done()
	}()
	c.v, c.err = c.f(c.ctx)
	returned = true
}

var errBlockingGoexit = errors.New("weft: the function passed to Blocking called runtime.Goexit")

// run starts c on a goroutine and suspends t until it has returned. A
// cancellation of t cancels c's context and is held back until then.
func (c *blockingCall[T]) run(t *Task, bs *blockingState) {
	l := t.loop
	c.op.t = t
	c.op.name = "Blocking"
	c.wg.Add(1)
	c.op.inline.Store(extPolling)
	l.startExternal(&c.op, bs.start, c.call)
	if t.pollExternal(&c.op, blockingSpins) {
		return
	}
	err := t.waitExternal(&c.op)
	if err == nil {
		return
	}
	// Cancelled (ctx is cancelled already), or Run unwinds (cancel ctx
	// ourselves): wait for f all the same, with the cancellation held back;
	// the task's next suspension point returns it.
	if !isCancellation(err) {
		if tc, ok := c.ctx.(*taskContext); ok {
			t.rs.lock()
			tc.cancelWith(err)
			t.rs.unlock()
		}
	}
	t.pin++ // the completion reports to this loop: stay until it is done
	release := t.holdCancel()
	for !c.op.done.Load() && !t.loop.aborted {
		t.waitExternal(&c.op)
	}
	release()
	t.pin--
	if !c.op.done.Load() {
		// Run is unwinding and the loop no longer delivers completions:
		// wait for f itself (it writes into c).
		c.wg.Wait()
	}
}

// WithBlockingLimit bounds the Blocking calls in flight at once in one
// Run to n (the default is DefaultBlockingLimit, 10,000); further calls
// suspend their tasks and start in FIFO order as earlier ones return.
// n = 0 means the default; n < 0 panics with "weft:".
func WithBlockingLimit(n int) Option {
	if n < 0 {
		panic(fmt.Sprintf("weft: WithBlockingLimit with a negative limit (%d)", n))
	}
	return func(o *options) {
		layerOption(o, blockingKey{}, func() *blockingSettings { return &blockingSettings{} }).limit = n
	}
}

type blockingKey struct{}

// blockingSettings are the Run's options for Blocking.
type blockingSettings struct {
	limit int
}

// blockingIdle is how long, at least, a goroutine whose call returned
// waits for the next call before it ends (at most twice that).
const blockingIdle = 100 * time.Millisecond

// maxIdleBlocking bounds the goroutines kept waiting for a call.
const maxIdleBlocking = 256

// blockingState is a Run's Blocking state: its slots and its goroutines.
type blockingState struct {
	slots *Semaphore

	mu     sync.Mutex
	idle   []*blockingWorker // guarded by mu: goroutines waiting for a call, most recent last
	closed bool              // guarded by mu: the Run has ended
	sweep  *time.Timer       // guarded by mu: ends the goroutines idle for long enough
	swept  uint64            // guarded by mu: sweeps so far
	armed  bool              // guarded by mu: sweep is due to run (and counted in wg)
	wg     sync.WaitGroup    // every goroutine started, and the sweep while armed
}

// blockingWorker is a goroutine that runs calls one after another.
type blockingWorker struct {
	jobs  chan func() // capacity 1; closed to stop the worker
	since uint64      // guarded by bs.mu: the sweep count when it went idle
}

// blockingOf returns the Run's Blocking state, made on first use; its
// goroutines are stopped and waited for when the Run ends.
func blockingOf(l *loop) *blockingState {
	return layerState(l, blockingKey{}, func() (*blockingState, func()) {
		limit := DefaultBlockingLimit
		if set, ok := l.rs.layerOpts[blockingKey{}].(*blockingSettings); ok && set.limit > 0 {
			limit = set.limit
		}
		bs := &blockingState{slots: NewSemaphore(int64(limit))}
		return bs, bs.close
	})
}

// start runs job on an idle goroutine, the one idle for the shortest time,
// or on a new one.
func (bs *blockingState) start(job func()) {
	bs.mu.Lock()
	if n := len(bs.idle); n > 0 {
		w := bs.idle[n-1]
		bs.idle[n-1] = nil
		bs.idle = bs.idle[:n-1]
		bs.mu.Unlock()
		w.jobs <- job
		return
	}
	bs.wg.Add(1)
	bs.mu.Unlock()
	w := &blockingWorker{jobs: make(chan func(), 1)}
	go w.work(bs, job)
}

// work runs job, then each job it is given while idle, until the sweep or
// the end of the Run closes its channel. If a job calls runtime.Goexit, the
// goroutine ends with it (its completion is deferred: startExternal).
func (w *blockingWorker) work(bs *blockingState, job func()) {
	defer bs.wg.Done()
	for {
		job()
		bs.mu.Lock()
		if bs.closed || len(bs.idle) >= maxIdleBlocking {
			bs.mu.Unlock()
			return
		}
		w.since = bs.swept
		bs.idle = append(bs.idle, w)
		if !bs.armed {
			bs.armSweepLocked()
		}
		bs.mu.Unlock()
		var ok bool
		if job, ok = <-w.jobs; !ok {
			return
		}
	}
}

// armSweepLocked makes the sweep run blockingIdle from now.
func (bs *blockingState) armSweepLocked() {
	bs.armed = true
	bs.wg.Add(1)
	if bs.sweep == nil {
		bs.sweep = time.AfterFunc(blockingIdle, bs.sweepIdle)
	} else {
		bs.sweep.Reset(blockingIdle)
	}
}

// sweepIdle ends the goroutines that have been idle since before the last
// sweep (so for blockingIdle at least), and comes again while some are
// idle.
func (bs *blockingState) sweepIdle() {
	defer bs.wg.Done()
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.armed = false
	if bs.closed {
		return
	}
	// The list is in the order the goroutines went idle: the old ones
	// first.
	n := 0
	for n < len(bs.idle) && bs.idle[n].since < bs.swept {
		close(bs.idle[n].jobs)
		n++
	}
	bs.idle = append(bs.idle[:0], bs.idle[n:]...)
	clear(bs.idle[len(bs.idle):cap(bs.idle)])
	bs.swept++
	if len(bs.idle) > 0 {
		bs.armSweepLocked()
	}
}

// close stops the idle goroutines and the sweep, and waits for them all:
// the Run has ended, so no call is in flight.
func (bs *blockingState) close() {
	bs.mu.Lock()
	bs.closed = true
	for _, w := range bs.idle {
		close(w.jobs)
	}
	bs.idle = nil
	if bs.armed && bs.sweep.Stop() {
		bs.armed = false
		bs.wg.Done() // it will not run
	}
	bs.mu.Unlock()
	bs.wg.Wait()
}

// blockingSpins is how many times a task whose loop is otherwise idle
// gives its processor to f before it suspends: a call that returns at
// once then costs no sleep and wake-up of the loop (pollExternal).
const blockingSpins = 5
