package weft

// Suspend hooks: a one-shot callback that a layer arms on a task, to do
// work only if the task suspends. whttp starts the task that watches a
// connection for its client's going only once the handler waits for
// something (or runs long): most handlers answer without ever suspending,
// and the watch would cost them a spawn and two switches per request.
//
// The hook runs on the task's own code, at the start of every way a
// running task gives its loop away, before the task changes state or is
// queued: block (every wait: a timer, an fd, a promise, a wait source of
// park.go, an external operation, Select), Yield, spawnIn (Go and every
// spawn that runs the child first), giveWayReady (a task that kept
// finding results ready), migrate (a move to another loop), and at the
// slow path of Checkpoint, where a task that holds the loop long may be
// made to give it away (a CPU-bound task on a quiet loop never is, yet it
// runs long). A task that finishes without any of these never runs its
// hook. The check on those paths is a load and a branch.
//
// The hook runs while the task is still running (its code may use the
// API), but it must not suspend: while it runs, a spawn by its task (Go,
// TaskGroup.Go, GoIn...) only queues the new task, which runs once the
// task has given the loop away, and any other suspension panics. A switch
// there would be wrong: on the wait paths the task is registered with its
// wait's source but not yet waiting, and on Yield it would be queued
// twice. The hook is disarmed before it runs; it may not arm another.
// Everything here is the task's own state (loop-owned).

import "github.com/weft-go/weft/internal/loophook"

func init() {
	loophook.OnSuspend = func(t any, h loophook.Suspender) {
		tt := t.(*Task)
		tt.check("loophook.OnSuspend")
		tt.onSuspend(h)
	}
}

// hookRunning is a task's suspendHook while its hook runs.
type hookRunning struct{}

func (hookRunning) BeforeSuspend() {
	panic("weft: a task suspended in its suspend hook (loophook.OnSuspend)")
}

// onSuspend arms h as t's suspend hook, replacing the one armed, or
// disarms it (h nil). It does not suspend. Call it from t's own code.
func (t *Task) onSuspend(h loophook.Suspender) {
	x := t.extra
	if h == nil {
		if x == nil {
			return
		}
	} else if x == nil {
		x = t.ensureExtra()
	}
	if x.suspendHook == (hookRunning{}) {
		panic("weft: loophook.OnSuspend called in a suspend hook")
	}
	x.suspendHook = h
}

// beforeSuspend runs t's suspend hook, if one is armed: call it at the
// start of every way t gives its loop away, before t changes state (see
// above). It does not suspend.
func (t *Task) beforeSuspend() {
	if x := t.extra; x != nil && x.suspendHook != nil {
		t.runSuspendHook(x, false)
	}
}

// runSuspendHook disarms and runs t's armed hook, x.suspendHook, and
// reports false; or, if the hook is running (it is the caller), reports
// true for a spawn (spawnIn then only queues the child) and panics for
// anything else.
func (t *Task) runSuspendHook(x *taskExtra, spawn bool) (inHook bool) {
	h := x.suspendHook
	if h == (hookRunning{}) {
		if spawn {
			return true
		}
		h.BeforeSuspend() // panics
	}
	x.suspendHook = hookRunning{}
	defer func() { x.suspendHook = nil }()
	h.BeforeSuspend()
	return false
}
