package weft

// Promises settled from outside the loops. NewPromiseExternal counts the
// promise as pending off-loop work of the creating task's loop (the
// loop's external count, as an Offload call in flight is), so that the
// loop sleeps, instead of reporting a deadlock, until the settle function
// is called or the creating task finishes, whichever comes first. The
// count is loop-owned: it is taken on the loop by the creating task and
// given back on the loop, directly or through the inbox.

import "sync/atomic"

// NewPromiseExternal returns a pending promise and the function that
// settles it, for a result that code outside weft will deliver: a
// goroutine, a callback of another library, a task of another Run. Unlike
// NewPromise's, this promise keeps Run alive while it is pending and the
// task t that made it has not finished, so a task awaiting it is not
// reported as deadlocked while the settler is still at work.
// NewPromiseExternal does not suspend and is not a cancellation point.
//
// The settle function may be called from any goroutine, any number of
// times, and never blocks: the first call settles the promise and returns
// true, later calls change nothing and return false. The first call also
// lets Run end. If t finishes first, Run is no longer kept alive by the
// promise, which stays pending until it is settled.
//
// Like Offload work, a pending external promise holds virtual time still
// (see WithVirtualTime): the loop cannot know when the outside will act.
// Cancel settles the promise with context.Canceled but keeps Run alive
// until the settle function is called or t finishes.
func NewPromiseExternal[T any](t *Task) (*Promise[T], func(v T, err error) bool) {
	t.check("NewPromiseExternal")
	l := t.loop
	p := &Promise[T]{}
	k := &externalKeep{l: l}
	k.hook.fn = func() { l.runOn(k.release) } // on t's loop at its end, which may not be l
	if ownerChecks {
		l.assertOwner("the external-work count")
	}
	l.external++
	t.onFinish(&k.hook)
	settle := func(v T, err error) bool {
		ok := p.settle(v, err, callerLoop())
		if k.called.CompareAndSwap(false, true) {
			l.runOn(k.release) // refused only once the loop has ended: nothing to release then
			t.onOwner(k.hook.remove)
		}
		return ok
	}
	return p, settle
}

// externalKeep is the hold of an external promise on its loop.
type externalKeep struct {
	l        *loop       // owns the count and released
	hook     finishHook  // the creating task's: releases the hold when it finishes
	called   atomic.Bool // the settle function was called
	released bool        // l's
}

// release gives the loop's external count back, once. It runs on k.l.
func (k *externalKeep) release() {
	if k.released {
		return
	}
	k.released = true
	if ownerChecks {
		k.l.assertOwner("the external-work count")
	}
	k.l.external--
}
