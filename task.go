package weft

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/weft-go/weft/internal/coro"
	"github.com/weft-go/weft/internal/poller"
)

// Task is a running task's handle on its loop. Every task function receives
// its own *Task, and every operation that can suspend takes it, so a reader
// can see where a task may give up the loop.
//
// A *Task belongs to its task: it may be used only by that task's own code,
// while the task runs. Using it from another task, from another goroutine
// (a plain `go` statement inside a task, say) or after the task finished is
// a programming error and panics with a message starting "weft:".
type Task struct {
	loop *loop
	co   *coro.Coro // the coroutine running the task; nil before start and after finish
	job  taskJob    // the typed half: runs the function, settles the promise

	// The spawn tree, for cancellation and reports. A finished task's
	// children move to its parent, so every live task descends from
	// loop.root.
	parent, child, prevSib, nextSib *Task

	state     taskState
	waitKind  waitKind
	nested    bool   // resumed by a driving task: must switch back to it
	cancelled bool   // some cancellation applies: see Task.cause
	waitGen   uint32 // bumped per wait; wakes naming an older one are dropped
	id        uint32
	spawnPC   uintptr    // where Go (or Run) was called
	x         *taskExtra // what only some tasks need, made on first use
}

// taskExtra holds the parts of a task that most tasks never need, so that
// a spawn allocates as little as possible (on this machine allocation costs
// about a third of a nanosecond per byte, more than anything else in a
// spawn but the coroutine switch).
type taskExtra struct {
	wakeErr     error        // delivered by interrupt to the current wait
	cancelErr   error        // the cancellation cause; see cancel.go
	protect     int32        // depth of Protect calls: cancellation is held back while > 0
	scope       *cancelScope // the innermost Group body the task's code is in
	fdMode      poller.Mode
	fd          int          // fd waited on (state waiting, waitFD)
	deadline    int64        // loop-clock deadline from an enclosing Timeout; 0 if none
	timer       timer        // the task's sleep
	ctx         *taskContext // created by Context on first use
	w           *waitState   // promise waits, made on the first one
	cpu         int64        // ns run at Checkpoints since the task last waited (sched.go)
	batch       bool         // in (or last queued in) the batch lane
	checkpoints bool         // has taken the slow path of Checkpoint: time its runs
	park        parkSource   // the source of a parked wait (park.go)
	parkW       *parkWaiter  // ... and the registration with it
	finish      *finishHook  // callbacks to run when the task finishes (finish.go)
}

func (t *Task) extra() *taskExtra {
	if t.x == nil {
		t.x = &taskExtra{}
		t.x.timer.index = -1
		t.x.timer.task = t
	}
	return t.x
}

type taskState uint8

const (
	stateNew taskState = iota
	stateRunnable
	stateRunning
	stateWaiting
	stateDone
)

type waitKind uint8

const (
	waitNone waitKind = iota
	waitPromise
	waitMulti
	waitTimer
	waitFD
	waitExternal
	waitPark // a wait source outside the core: see park.go
)

// taskJob is implemented by taskCell[T], the allocation that holds a task,
// its function and its promise.
type taskJob interface {
	coro.Job
	funcPC() uintptr
	promiseCore() *promise
	taskOf() *Task
}

// taskCell is one allocation per spawn: the task, the function it runs and
// the promise of its result.
type taskCell[T any] struct {
	task    Task
	promise Promise[T]
	f       func(t *Task) (T, error)
}

func (c *taskCell[T]) funcPC() uintptr       { return funcPC(c.f) }
func (c *taskCell[T]) promiseCore() *promise { return &c.promise.p }
func (c *taskCell[T]) taskOf() *Task         { return &c.task }

// RunJob runs the task on its coroutine, from start to finish. A panic
// becomes the task's *PanicError. runtime.Goexit (t.FailNow in a test, say)
// cannot be stopped: it settles the promise with an error, and iter.Pull
// passes it on to the goroutine that resumed us, up to Run's caller; Run
// unwinds the other tasks on its way out.
func (c *taskCell[T]) RunJob() {
	t := &c.task
	var v T
	var err error
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil {
				err = newPanicError(r)
			} else {
				err = errGoexit
				t.loop.aborted = true
			}
		}
		t.finish(err)
		c.promise.settle(v, err, t.loop)
	}()
	v, err = c.f(t)
	returned = true
}

// newTask allocates a task that will run f, as a child of parent.
func newTask[T any](l *loop, parent *Task, f func(t *Task) (T, error), pc uintptr) *taskCell[T] {
	c := &taskCell[T]{f: f}
	t := &c.task
	t.loop = l
	t.job = c
	t.spawnPC = pc
	l.ids++
	t.id = l.ids
	c.promise.p.task = t
	t.link(parent)
	t.inherit(parent)
	l.live++
	return c
}

// link makes t the youngest child of parent in the spawn tree.
func (t *Task) link(parent *Task) {
	t.parent = parent
	t.nextSib = parent.child
	if parent.child != nil {
		parent.child.prevSib = t
	}
	parent.child = t
}

// unlink takes t out of its parent's children.
func (t *Task) unlink() {
	if t.prevSib != nil {
		t.prevSib.nextSib = t.nextSib
	} else if t.parent != nil {
		t.parent.child = t.nextSib
	}
	if t.nextSib != nil {
		t.nextSib.prevSib = t.prevSib
	}
	t.prevSib, t.nextSib = nil, nil
}

// inherit gives the newborn t what it takes from its parent: a
// cancellation the parent is not holding back, and the parent's deadline.
func (t *Task) inherit(parent *Task) {
	px := parent.x
	if px == nil {
		return
	}
	if parent.cancelled && px.protect == 0 {
		t.extra().cancelErr = parent.cause()
		t.cancelled = true
	}
	if px.deadline != 0 {
		t.extra().deadline = px.deadline
	}
}

// finish records the end of t on the loop: it leaves the spawn tree (its
// children move to its parent) and a failure is noted for Run's report.
func (t *Task) finish(err error) {
	l := t.loop
	if t.x != nil && t.x.finish != nil {
		t.runFinishHooks()
	}
	t.state = stateDone
	t.unlink()
	// Hand the children to the parent.
	for c := t.child; c != nil; {
		next := c.nextSib
		c.prevSib, c.nextSib = nil, nil
		c.link(t.parent)
		c = next
	}
	t.parent, t.child, t.prevSib, t.nextSib = nil, nil, nil, nil
	t.closeContext()
	l.live--
	if err != nil && t != l.main && !isCancellation(err) && !l.isDeadlockErr(err) {
		l.failures = append(l.failures, t)
	}
}

// Go starts f as a new task, a child of t, and returns the promise of its
// result. The child runs first: Go queues the child, then t, and t resumes
// when the child suspends or finishes (and every task queued before them
// has had its turn). Go is not a cancellation point; a child of a cancelled
// task starts cancelled unless t is inside Protect.
//
// A spawn costs about one coroutine switch there and back plus one
// allocation; finished coroutines are pooled, so no goroutine is started
// per task in the steady state.
//
//go:noinline
func Go[T any](t *Task, f func(t *Task) (T, error)) *Promise[T] {
	pc := callerPC()
	t.check("Go")
	if f == nil {
		panic("weft: Go called with a nil function")
	}
	return spawn(t, f, pc)
}

// Yield lets every other runnable task run, then continues: the task goes
// to the back of the run queue. It is a cancellation point: if the task has
// been cancelled, Yield returns the cause (an error matching
// context.Canceled) without yielding.
func (t *Task) Yield() error {
	t.check("Yield")
	if err := t.cancelPoint(); err != nil {
		return err
	}
	l := t.loop
	if x := t.x; x != nil {
		x.cpu, x.batch = 0, false // it gives way on its own: interactive
	}
	l.ready(t)
	l.suspend(t)
	if err := t.takeWakeErr(); err != nil {
		return err
	}
	return t.cancelPoint()
}

// Sleep suspends the task for d, measured on the loop's clock. d <= 0
// yields instead. If the task is cancelled, the sleep ends at once and
// returns the cause (an error matching context.Canceled); its timer is
// removed.
func (t *Task) Sleep(d time.Duration) error {
	t.check("Sleep")
	if d <= 0 {
		return t.Yield()
	}
	if err := t.cancelPoint(); err != nil {
		return err
	}
	l := t.loop
	if l.aborted {
		return errAborted
	}
	x := t.extra()
	x.timer.when = l.deadline(int64(d))
	l.timers.push(&x.timer)
	return t.block(waitTimer)
}

// Now returns the current time on the loop's clock.
func (t *Task) Now() time.Time {
	t.check("Now")
	return t.loop.clock.Now()
}

// block suspends t in a wait of the given kind; the caller has registered
// it with the wait's source. It returns the error the wait was interrupted
// with, or nil if the source woke it.
func (t *Task) block(kind waitKind) error {
	t.state = stateWaiting
	t.waitKind = kind
	if x := t.x; x != nil {
		x.cpu, x.batch = 0, false // it waits on its own: interactive again
	}
	t.loop.suspend(t)
	return t.takeWakeErr()
}

func (t *Task) takeWakeErr() error {
	if x := t.x; x != nil && x.wakeErr != nil {
		err := x.wakeErr
		x.wakeErr = nil
		return err
	}
	return nil
}

// check panics unless the caller is t's own task, running.
func (t *Task) check(op string) {
	if coro.HaveGetg {
		// t.co is set while the task is started and not done, and its
		// goroutine is the only one that runs the task's code.
		if c := t.co; c == nil || c.G() != coro.Getg() {
			t.misuse(op)
		}
		return
	}
	// Without a goroutine identifier, catch what the loop can see: use by
	// another task, or after the end.
	if t.loop.current != t {
		t.misuse(op)
	}
}

func (t *Task) misuse(op string) {
	// t.co is nil before the task starts (when nobody has t) and after it
	// finished; it is the field check reads anyway, so reading it here adds
	// no race the misuse does not already have.
	if t.co == nil {
		panic(fmt.Sprintf("weft: %s called on the Task of a task that has finished: a *Task is valid only while its own task runs", op))
	}
	panic(fmt.Sprintf("weft: %s called outside the task the Task belongs to (from another task or goroutine): a *Task may be used only by its own task's code", op))
}

// name describes t for reports: "main" or "task N", and its function.
func (t *Task) name() string {
	if t == t.loop.main {
		return "main"
	}
	return fmt.Sprintf("task %d", t.id)
}

func (t *Task) funcName() string {
	if f := runtime.FuncForPC(t.job.funcPC()); f != nil {
		return f.Name()
	}
	return "?"
}

func (t *Task) spawnSite() string {
	if t == t.loop.main && t.spawnPC == 0 {
		return "Run"
	}
	return pcSite(t.spawnPC)
}

// Context returns a context.Context for the task. It carries the values of
// the context given to Run (WithContext), and it is done when the task is
// cancelled or has finished, whichever comes first; its Err is then
// context.Canceled (or context.DeadlineExceeded after a Timeout) and
// context.Cause gives the cancellation cause. Pass it to code that takes a
// context, such as the code inside Offload. Unlike the Task itself, the
// context may be used from any goroutine.
func (t *Task) Context() context.Context {
	t.check("Context")
	return t.context()
}
