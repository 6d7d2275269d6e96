package weft

// External work: what a task waits for off the loop (a job on the Offload
// pool, a blocking call of the portable I/O layer on a helper goroutine).
// The loop counts it (loop.external): while any is in flight the loop
// sleeps instead of reporting a deadlock, and Run does not return. Its
// completion comes back through the inbox. This file is the core's side;
// the layers start the work.
//
// It also holds the two hooks through which a layer keeps state per Run
// without the core knowing the layer: layerOption (an Option's setting)
// and layerState (a value made on first use and closed when the loop
// ends).

import (
	"runtime"
	"sync/atomic"
)

// extOp is one piece of off-loop work a task waits for.
type extOp struct {
	t       *Task
	name    string        // the operation, for Dump and deadlock reports ("": Offload)
	waiting atomic.Uint64 // the wait for op: its generation << 32 | the index of the loop it waits on
	done    atomic.Bool   // fn has returned (set on the loop that started it)
	fin     chan struct{} // if not nil, closed when fn has returned (any goroutine may wait)
	inline  atomic.Uint32 // extPolling while the task polls for fn's return (pollExternal), then extTaken if fn returned meanwhile
	tr      traceOp       // the work's lane and times, when tracing (trace.go)
}

// startExternal runs fn off the loop as external work of t's loop: start
// launches it (on the pool, or on a goroutine of its own for operations that
// may block indefinitely). fn must be safe off the loop. When it returns, the
// loop marks op done and wakes t if t is waiting for it.
func (l *loop) startExternal(op *extOp, start func(func()), fn func()) {
	if ownerChecks {
		l.assertOwner("the external-work count")
	}
	l.external++
	fn = l.traceExternal(op, fn)
	start(func() {
		// Deferred, so that fn calling runtime.Goexit still completes op
		// (the goroutine then ends: start must allow for that).
		defer l.completeExternal(op)
		fn()
	})
}

// completeExternal tells op's loop that its work has returned.
func (l *loop) completeExternal(op *extOp) {
	if op.fin != nil {
		close(op.fin)
	}
	if op.inline.CompareAndSwap(extPolling, extTaken) {
		return // the task polls for us: it completes op itself
	}
	// If the loop has ended (only when Run unwinds after a Goexit), the
	// post is refused and there is nobody left to tell.
	l.post(func() {
		if ownerChecks {
			l.assertOwner("the external-work count")
		}
		l.external--
		l.traceExternalDone(op)
		op.done.Store(true)
		// The task may have stopped waiting for op (cancelled), moved to
		// another loop and waited for op again there: wake it where it
		// waits. waitTok is all we may read of it until then.
		w := op.waiting.Load()
		gen, to := uint32(w>>32), l.rs.loops[uint32(w)]
		if to == l {
			l.wakeExternal(op.t, gen)
		} else {
			to.post(func() { to.wakeExternal(op.t, gen) })
		}
	})
}

const (
	extPolling = 1
	extTaken   = 2
)

// pollExternal gives op's work up to n turns of t's processor to return,
// if t's loop has nothing else to do, and reports whether it did: op is
// then done, without the completion's trip through the inbox and t's
// suspension. For work that often returns at once (a call into a client
// library that answers from its buffers, say), that trip is most of its
// cost. The caller sets op.inline to extPolling before it starts op.
func (t *Task) pollExternal(op *extOp, n int) bool {
	l := t.loop
	// Not on a loop locked to its thread (io_uring): there giving way is a
	// hand-off of the thread, dearer than the wake-up it would save.
	if !l.locked && l.runq.len() == 0 && l.batchq.len() == 0 && l.inboxLen.Load() == 0 {
		for i := 0; i < n && op.inline.Load() == extPolling; i++ {
			runtime.Gosched() // the work's goroutine was readied on this processor: let it run
		}
	}
	if op.inline.CompareAndSwap(extPolling, 0) {
		return false // still running: its completion will be posted
	}
	if ownerChecks {
		l.assertOwner("the external-work count")
	}
	l.external--
	l.traceExternalDone(op)
	op.done.Store(true)
	return true
}

// waitExternal suspends t until op is done. It returns the error of an
// interruption (cancellation, unwinding); op then runs on.
func (t *Task) waitExternal(op *extOp) error {
	// Publish the wait first, then look at done: the completion sets done,
	// then reads the wait, so one of the two sees the other.
	op.waiting.Store(uint64(t.newWait())<<32 | uint64(t.loop.id))
	if op.done.Load() {
		return nil
	}
	// What reports show: the operation and where its caller waits.
	// (noteWaitSite, inline so that the stack starts at the caller)
	name := op.name
	if name == "" {
		name = "Offload"
	}
	r := t.obsRec()
	r.mu.Lock()
	t.publishWaitLocked(r, waitExternal, name)
	fpCallers(r.w.pcs[:])
	r.mu.Unlock()
	return t.block(waitExternal)
}

// wakeExternal readies t if it still waits, in generation gen, for off-loop
// work.
func (l *loop) wakeExternal(t *Task, gen uint32) {
	if t.waitTok.Load() == gen && t.waitKind == waitExternal {
		l.ready(t)
	}
}

// finishExternal waits, with cancellation held back, until op is done; it is
// for operations that use the caller's memory and must end before the call
// returns. interrupt makes op return early (a deadline in the past).
func (t *Task) finishExternal(op *extOp, interrupt func()) {
	interrupt()
	t.pin++ // op reports to this loop: stay until it is done
	defer func() { t.pin-- }()
	release := t.holdCancel()
	for !op.done.Load() && !t.loop.aborted {
		t.waitExternal(op)
	}
	release()
	if !op.done.Load() && op.fin != nil {
		// Run is unwinding and the loop no longer delivers completions:
		// wait for fn itself, which uses the caller's memory.
		<-op.fin
	}
}

// A goroutine's call: a plain goroutine that asks a Run to do something
// that only a task can do (a Conn's GoConn: a Read on the Conn's loop),
// and blocks until it is done. It posts the request to the loop, which
// starts a task for it; the task does the work and answers the goroutine.
// The request cannot be lost: if the loop has ended, or ends before it
// runs the request, the goroutine is answered that the Run is over.

// postForGoroutine asks l, from a plain goroutine, to run start on l (to
// call startForGoroutine), or refused if l has ended or ends before it
// runs the request: exactly one of the two runs, start on l, refused on
// the caller's goroutine or as l closes. Neither may block.
func (l *loop) postForGoroutine(start, refused func()) {
	// A descriptor's release has the guarantee needed: it runs whether or
	// not the loop is alive, and says which.
	l.postRelease(func(onLoop bool) {
		if onLoop && !l.closed { // closed is set before closeInbox runs what is left
			start()
		} else {
			refused()
		}
	})
}

// startForGoroutine starts f as a new task of l's Run, on l (call it on
// l, from postForGoroutine's start): a task with no parent, in the Run's
// root scope beside main, which a cancellation of the whole Run reaches
// and which, like any task, keeps the Run alive while it lives. f must
// answer its goroutine however it ends (a defer). user names f's work in
// reports (Dump, deadlock reports: the function at that PC).
func (l *loop) startForGoroutine(f func(t *Task), user uintptr) {
	c := newTask(l, &l.rs.root.root, func(t *Task) (struct{}, error) {
		f(t)
		return struct{}{}, nil
	}, 0, spawnForGoroutine, user)
	l.ready(&c.task)
}

// layerOption returns the setting of type S that a layer's Option stores
// under key, making it on first use.
func layerOption[S any](o *options, key any, make func() *S) *S {
	if o.layer == nil {
		o.layer = map[any]any{}
	}
	if s, ok := o.layer[key].(*S); ok {
		return s
	}
	s := make()
	o.layer[key] = s
	return s
}

// layerState returns the layer's state of type S for l's Run, stored under
// key and made by make on first use; the close function make returns runs
// when the Run ends, after the last task and before the pollers close.
// Any task of the Run may call it.
func layerState[S any](l *loop, key any, make func() (*S, func())) *S {
	rs := l.rs
	rs.lock()
	defer rs.unlock()
	return layerStateLocked(rs, key, make)
}

// tryLayerState is layerState for a caller that may hold a lock the run
// lock's holders take (a channel's: a loop holding the run lock looks at
// the channels its parked tasks wait on): it reports false, without
// waiting, when the run lock is busy.
func tryLayerState[S any](l *loop, key any, make func() (*S, func())) (*S, bool) {
	rs := l.rs
	if rs.multi {
		if !rs.mu.TryLock() {
			return nil, false
		}
		defer rs.mu.Unlock()
	}
	return layerStateLocked(rs, key, make), true
}

// layerStateLocked is layerState's body, under the run lock.
func layerStateLocked[S any](rs *runState, key any, make func() (*S, func())) *S {
	if s, ok := rs.layers[key].(*S); ok {
		return s
	}
	s, closeFn := make()
	if rs.layers == nil {
		rs.layers = map[any]any{}
	}
	rs.layers[key] = s
	if closeFn != nil {
		rs.layerClose = append(rs.layerClose, closeFn)
	}
	return s
}
