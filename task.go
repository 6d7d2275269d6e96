package weft

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft/internal/coro"
	"github.com/weft-go/weft/internal/loophook"
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
	loop *loop      // the loop that owns the task now; written under the run lock (handover.go)
	rs   *runState  // immutable: its Run
	co   *coro.Coro // the coroutine running the task; nil before start and after finish
	job  taskJob    // the typed half: runs the function, settles the promise

	// root is the task's root cancel scope: its node in the Run's scope
	// tree (cancel.go, under the run lock), under the scope its spawner's
	// code was in. A finished task's children move to the parent scope, so
	// every live task descends from the Run's sentinel, runState.root.
	root scope

	state     taskState
	waitKind  waitKind
	nested    bool                     // resumed by a driving task: must switch back to it
	local     bool                     // started by Local: never leaves its loop
	simWhy    uint8                    // a seeded Run: why the task was last made runnable (seed.go)
	how       spawnOp                  // immutable: what started it (Go, TaskGroup.Go, First...), for reports
	simLoop   uint16                   // a seeded Run: the simulated loop the task is on (seed.go)
	cancelled atomic.Bool              // some cancellation applies: see Task.cause
	waitGen   uint32                   // bumped per wait; wakes naming an older one are dropped
	waitTok   atomic.Uint32            // waitGen while waiting, 0 otherwise: stale wakes posted to a loop that no longer owns the task check it, and nothing else (handover.go)
	pin       int32                    // > 0 while the task holds registrations on its loop between waits: it must not move
	moveTo    *loop                    // the loop the task asked to move to, set until its resumer sends it (handover.go)
	dl        atomic.Pointer[deadline] // the earliest deadline on its scope chain (cancel.go); written under the run lock
	id        uint32
	parent    uint32     // immutable: the id of the task that started it (0: none), for observers
	spawnPC   uintptr    // where Go (or Run) was called
	extra     *taskExtra // what only some tasks need, made on first use
	obs       taskObs    // what observers read: name, parent, wait (observe.go)
}

// taskExtra holds the parts of a task that most tasks never need, so that
// a spawn allocates as little as possible (on this machine allocation costs
// about a third of a nanosecond per byte, more than anything else in a
// spawn but the coroutine switch). Every task that waits has one (its wait
// is published in obs): it holds what a wait needs, and what only a few
// tasks ever use is in a second record, taskRare, made on first use, so
// that a task sleeping, awaiting or reading pays only for this one. It is
// 280 bytes, in the allocator's 288-byte size class (the next is 320):
// see TestRecordSizes before adding a field.
type taskExtra struct {
	cur         *scope                   // the innermost scope the task's code is in; nil: its root (cancel.go)
	w           *waitState               // promise waits, made on the first one
	cpu         int64                    // ns run at Checkpoints since the task last waited (sched.go)
	hold        int32                    // cancellation is held back while > 0 (joins: see holdCancel)
	batch       bool                     // in (or last queued in) the batch lane
	checkpoints bool                     // has taken the slow path of Checkpoint: time its runs
	timer       timer                    // the task's sleep
	park        parkSource               // the source of a parked wait (park.go)
	parkW       *parkWaiter              // ... and the registration with it
	rare        atomic.Pointer[taskRare] // made on first use (ensureRare)
	// obs is the wait observers read and the wait's own state (wake
	// error, fd), once published in Task.obs (observe.go). A task that
	// waits before it starts (waitUnstarted) has a record of its own
	// instead, and no taskExtra until it needs one: see waitRec.
	obs obsRecord

	// suspendHook, armed by loophook.OnSuspend, runs once before the task
	// next gives its loop away (suspend.go).
	suspendHook loophook.Suspender
}

// taskRare holds what only a few tasks use: contexts, a Network of their
// own, exit and finish callbacks, a failure record, keep-alive parks, a
// name. It hangs off taskExtra, made by ensureRare on the task's loop and
// published atomically (no lock: callers may hold the run lock, or
// channels' locks), since the cancellation walk of another loop reads its
// ctxs under the run lock and a promise's first observer, on any
// goroutine, its failure.
type taskRare struct {
	network Network        // GoWithNetwork's, inherited by the tasks it starts (seed_network.go)
	ctxs    []*scope       // run lock: the scopes whose context Context made (context.go)
	failure *failureRecord // the task failed and nobody had observed it (unobserved.go)
	atExit  []func()       // run on the loop after the task finished (see atExit)
	finish  *finishHook    // callbacks to run when the task finishes (finish.go)
	// kaPrev, kaNext link the task into its loop's list of tasks parked on
	// a keepAliveSource (loop.kaParked), while it is.
	kaPrev, kaNext *Task
	kaLinked       bool
	name           string // SetName's: written by the task and read elsewhere under its obs record's mu (observe.go)
}

// ensureExtra returns t's extra record, making it on first use. Only
// t's own loop calls it; it publishes the record under the run lock,
// since the cancellation walk of another loop may read t.extra (and its
// cur) under it, and under the lock of t's observers' record if t has
// one already (a task that waited before it started), since observers
// read t.extra there.
func (t *Task) ensureExtra() *taskExtra {
	if t.extra == nil {
		x := &taskExtra{}
		x.timer.index = -1
		x.timer.task = t
		t.rs.lock()
		if r := t.obs.rec.Load(); r != nil {
			// A record alone (prepareUnstarted), whose observers read
			// t.extra under its lock (nameLocked).
			r.mu.Lock()
			t.extra = x
			r.mu.Unlock()
		} else {
			t.extra = x
		}
		t.rs.unlock()
	}
	return t.extra
}

// ensureRare returns t's rare record, making it (and the extra record) on
// first use. Only t's loop calls it. It takes no lock of its own, but
// making the extra record takes the run lock: a caller holding the run
// lock (or locks the run lock's holders may wait for) must know that t
// has one already.
func (t *Task) ensureRare() *taskRare {
	x := t.ensureExtra()
	r := x.rare.Load()
	if r == nil {
		r = &taskRare{}
		x.rare.Store(r)
	}
	return r
}

// rareOf returns t's rare record, nil if it has none.
func (t *Task) rareOf() *taskRare {
	if x := t.extra; x != nil {
		return x.rare.Load()
	}
	return nil
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
	logIfDropped(rec *failureRecord)
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

// wrappedCell is the cell of a task whose function wraps the user's (a
// group's task, Generate's producer): reports (Dump, deadlocks, failures,
// traces, labels, seeded decisions) name the user's function, not weft's
// wrapper. Only such spawns pay for the extra word.
type wrappedCell[T any] struct {
	taskCell[T]
	user uintptr // the user's function
}

func (c *wrappedCell[T]) funcPC() uintptr { return c.user }

// spawnOp says what started a task, for reports ("started by TaskGroup.Go
// at x.go:12").
type spawnOp uint8

const (
	spawnGo spawnOp = iota
	spawnRun
	spawnLocal
	spawnGoWithNetwork
	spawnFirst
	spawnGenerate
	spawnGroupGo
	spawnGoIn
	spawnGoDaemon
	spawnStart
	spawnForGoroutine
	spawnGoWhenReadable
)

var spawnOpNames = [...]string{"Go", "Run", "Local", "GoWithNetwork", "First", "Generate", "TaskGroup.Go", "GoIn", "TaskGroup.GoDaemon", "TaskGroup.Start", "a goroutine's call", "TaskGroup.GoWhenReadable"}

func (o spawnOp) String() string { return spawnOpNames[o] }

// logIfDropped logs rec if the cell (and so its promise) is collected
// while the failure is unobserved.
func (c *taskCell[T]) logIfDropped(rec *failureRecord) { runtime.AddCleanup(c, logDropped, rec) }

// RunJob runs the task on its coroutine, from start to finish. A panic
// becomes the task's *PanicError. runtime.Goexit (t.FailNow in a test, say)
// cannot be stopped: it settles the promise with an error, and iter.Pull
// passes it on to the goroutine that resumed us, up to Run's caller; Run
// unwinds the other tasks on its way out.
//
// Its frame, and those of the functions it calls on the way to a wait,
// stay on the task's stack for as long as the task is suspended (see
// coro.Coro.body): so the unwinding is a method of the cell, deferred
// without a closure.
func (c *taskCell[T]) RunJob() {
	t := &c.task
	setProfLabel(t.startLabels())
	returned := false
	defer c.unwind(&returned)
	v, err := c.f(t)
	returned = true
	c.end(v, err)
}

// end finishes the task with the result its function returned.
func (c *taskCell[T]) end(v T, err error) {
	t := &c.task
	t.finish(err)
	c.promise.settle(v, err, t.loop)
	if r := t.rareOf(); r != nil && len(r.atExit) > 0 {
		t.runAtExit(r)
	}
}

// unwind finishes a task whose function did not return: it panicked, or
// called runtime.Goexit. It does nothing once the function returned (end
// did the rest).
func (c *taskCell[T]) unwind(returned *bool) {
	if *returned {
		return
	}
	t := &c.task
	var err error
	if r := recover(); r != nil {
		err = newPanicError(r)
	} else {
		err = errGoexit
		t.loop.aborted = true
	}
	var zero T
	c.end(zero, err)
}

// atExit arranges for fn to run on the loop once t has finished and its
// promise has settled, in the order registered (the group's failure
// handler, say). fn must not suspend: it runs as the very end of t.
func (t *Task) atExit(fn func()) {
	r := t.ensureRare()
	r.atExit = append(r.atExit, fn)
}

func (t *Task) runAtExit(r *taskRare) {
	fns := r.atExit
	r.atExit = nil
	for _, fn := range fns {
		fn()
	}
}

// newTask allocates a task that will run f, its root scope under parent
// (the scope the spawner's code is in, or a group's scope), started by how
// at pc. user is the user's function when f wraps it (0: f is the user's).
func newTask[T any](l *loop, parent *scope, f func(t *Task) (T, error), pc uintptr, how spawnOp, user uintptr) *taskCell[T] {
	var c *taskCell[T]
	if user == 0 {
		c = &taskCell[T]{f: f}
		c.task.job = c
	} else {
		w := &wrappedCell[T]{taskCell: taskCell[T]{f: f}, user: user}
		c = &w.taskCell
		c.task.job = w
	}
	t := &c.task
	t.loop = l
	t.how = how
	t.spawnPC = pc
	t.id = l.rs.newID()
	t.rs = l.rs
	t.inheritNetwork(parent)
	c.promise.p.task = t
	t.root.task = t
	l.rs.lock()
	t.root.link(parent)
	t.inherit(parent)
	l.rs.unlock()
	l.rs.obsSpawn(t, parent)
	l.live++
	return c
}

// inherit gives the newborn t what applies to the scope it starts in: a
// cancellation (held by its root scope itself, so that it stays when the
// spawner's scope closes: cancel.go's invariant 2) and the earliest
// deadline. A plain Go from a task's innermost scope copies the spawner's
// cached answers; a task started elsewhere (a group task started by
// another task of the group) walks the chain.
func (t *Task) inherit(parent *scope) {
	var cause error
	var dl *deadline
	if sp := parent.task; sp != nil && sp.innermost() == parent {
		if sp.cancelled.Load() {
			cause = sp.cause()
		}
		dl = sp.dl.Load()
	} else {
		cause, dl = chainCause(parent), chainDeadline(parent)
	}
	if cause != nil {
		t.root.state().cause = cause
		t.cancelled.Store(true)
	}
	if dl != nil {
		t.dl.Store(dl)
	}
}

// finish records the end of t on the loop: its root scope leaves the tree
// (its children move to the parent scope) and a failure is noted for Run's
// report.
func (t *Task) finish(err error) {
	l := t.loop
	if r := t.rareOf(); r != nil && r.finish != nil {
		t.runFinishHooks()
	}
	rs := l.rs
	t.state = stateDone
	r := &t.root
	var moved []*scope
	rs.lock()
	if r.st != nil && r.st.dl != nil {
		for c := r.child; c != nil; c = c.next {
			moved = append(moved, c)
		}
	}
	r.close()
	for _, c := range moved {
		l.refreshSubtree(c, nil) // they no longer run under t's deadline
	}
	rs.unlock()
	t.closeContexts()
	rs.obsFinish(t)
	l.live--
	if err != nil && t != rs.main && !isCancellation(err) && !rs.isDeadlockErr(err) {
		rs.noteFailure(t, err)
	}
}

// Go starts f as a new task, a child of t, and returns the promise of its
// result. Go suspends t while the child runs first: it queues the child,
// then t, and t resumes when the child suspends or finishes (and every
// task queued before them has had its turn). Go is not a cancellation
// point; a child of a cancelled task starts cancelled unless t is inside
// Protect.
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

// spawn starts f as a child of t, Go's way (the child runs first), in the
// scope t's code is in.
func spawn[T any](t *Task, f func(t *Task) (T, error), pc uintptr) *Promise[T] {
	return spawnIn(t, t.innermost(), f, pc, spawnGo, 0, nil)
}

// spawnIn starts f as a new task whose root scope is under parent (a
// scope of t's code, or of a group), with a hook that adjusts the child
// before it runs; how, pc and user are newTask's. The child runs first: it
// is queued, then t, and t suspends.
func spawnIn[T any](t *Task, parent *scope, f func(t *Task) (T, error), pc uintptr, how spawnOp, user uintptr, setup func(*Task)) *Promise[T] {
	queueOnly := false
	if x := t.extra; x != nil && x.suspendHook != nil {
		queueOnly = t.runSuspendHook(x, true)
	}
	l := t.loop
	c := newTask(l, parent, f, pc, how, user)
	c.task.simLoop = t.simLoop // the child starts on its spawner's loop
	if setup != nil {
		setup(&c.task)
	}
	l.ready(&c.task)
	if queueOnly {
		return &c.promise // spawned by t's suspend hook: t runs on (suspend.go)
	}
	l.ready(t)
	l.obs.tr.why = whySpawned
	l.suspend(t)
	return &c.promise
}

// Yield suspends the task while every other runnable task runs, then
// continues: the task goes to the back of the run queue. It is a
// cancellation point: if the task has been cancelled, Yield returns the
// cause (an error matching context.Canceled) without yielding.
func (t *Task) Yield() error {
	t.check("Yield")
	if err := t.cancelPoint(); err != nil {
		return err
	}
	t.beforeSuspend()
	l := t.loop
	if x := t.extra; x != nil {
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
	x := t.ensureExtra()
	t.newWait()
	x.timer.when = l.deadline(int64(d))
	l.timers.push(&x.timer)
	return t.block(waitTimer)
}

// Now returns the current time on the loop's clock. It does not suspend.
func (t *Task) Now() time.Time {
	t.check("Now")
	return t.loop.clock.Now()
}

// block suspends t in a wait of the given kind; the caller has registered
// it with the wait's source. It returns the error the wait was interrupted
// with, or nil if the source woke it.
//
// Every wait has a generation of its own: the caller has called newWait
// before registering, so that what it registered can name it.
func (t *Task) block(kind waitKind) error {
	if ownerChecks {
		t.loop.assertOwner("a task's wait")
	}
	t.beforeSuspend()
	t.ensureExtra() // and its obs record (obsWait), whose wakeErr interrupt writes
	t.state = stateWaiting
	t.waitKind = kind
	t.waitTok.Store(t.waitGen)
	if x := t.extra; x != nil {
		x.cpu, x.batch = 0, false // it waits on its own: interactive again
	}
	t.obsWait(kind)
	t.loop.suspend(t)
	return t.takeWakeErr()
}

// waitUnstarted puts t, a task that has not started (it has no
// coroutine and is queued nowhere), in a wait of the given kind, as block
// does for a running task but without a switch: the caller has given t
// its wait's record (prepareUnstarted), started the wait's generation
// (newWait) and registered t with the wait's source, on t's loop.
// Whatever ends the wait (the source's wake, interrupt) makes t
// runnable, and it then starts; a wake error
// interrupt leaves is the starter's to take (takeWakeErr). op and pc
// name the operation and where it was asked for, for Dump, deadlock
// reports and the watchdog; dropped runs if the Run unwinds before t
// starts (loop.unwind). No task's stack is held while t waits.
func (t *Task) waitUnstarted(kind waitKind, op string, pc uintptr, dropped func()) {
	if ownerChecks {
		t.loop.assertOwner("a task's wait")
	}
	if t.co != nil || t.state != stateNew {
		panic("weft: internal error: waitUnstarted on a task that has started")
	}
	r := t.obs.rec.Load() // made by prepareUnstarted, before the registration
	r.dropped = dropped
	t.state = stateWaiting
	t.waitKind = kind
	t.waitTok.Store(t.waitGen)
	t.obsWait(kind)
	r.mu.Lock()
	r.w.op = op
	clear(r.w.pcs[:])
	r.w.pcs[0] = pc
	r.mu.Unlock()
}

// newWait starts a new wait generation and returns it.
func (t *Task) newWait() uint32 {
	t.waitGen++
	if t.waitGen == 0 {
		t.waitGen = 1 // 0 means "not waiting" in waitTok
	}
	return t.waitGen
}

// prepareUnstarted gives t, a task that has not started and is about to
// wait (waitUnstarted), the record of its wait: its observers' record
// alone (160 B), not the taskExtra a started task's wait makes (288 B),
// which the record is part of. The task keeps using that record (wake
// errors, fd waits, what observers read) after it starts; the taskExtra it
// makes then for the rest (ensureExtra) leaves its own copy unused. Only
// t's loop calls it, before t is registered with the wait's source.
func (t *Task) prepareUnstarted() {
	if t.co != nil || t.state != stateNew {
		panic("weft: internal error: prepareUnstarted on a task that has started")
	}
	if t.obs.rec.Load() == nil {
		t.obs.rec.Store(&obsRecord{})
	}
}

// waitRec returns the record of the wait t is in, or is registering: the
// loop-owned part of its observers' record. Only t's loop calls it.
func (t *Task) waitRec() *obsRecord { return t.obsRec() }

func (t *Task) takeWakeErr() error {
	if r := t.obs.rec.Load(); r != nil && r.wakeErr != nil {
		err := r.wakeErr
		r.wakeErr = nil
		return err
	}
	return nil
}

// check panics unless the caller is t's own task, running.
func (t *Task) check(op string) {
	if t == nil {
		panic("weft: " + op + " called with a nil *Task")
	}
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
	if t == t.rs.main {
		return "main"
	}
	return fmt.Sprintf("task %d", t.id)
}

func (t *Task) funcName() string { return funcNameOf(t.job.funcPC()) }

func (t *Task) spawnSite() string {
	if t == t.rs.main && t.spawnPC == 0 {
		return "Run"
	}
	return pcSite(t.spawnPC)
}

// Context returns a context.Context for the task. It carries the values of
// the context given to Run (WithContext), and it is done when the task is
// cancelled or has finished, whichever comes first; its Err is then
// context.Canceled (or context.DeadlineExceeded after a Timeout) and
// context.Cause gives the cancellation cause. Pass it to code that takes a
// context, such as the code inside Offload. Context does not suspend.
// Unlike the Task itself, the context may be used from any goroutine.
//
// Context may be called by the task's own code, and by the function an
// Offload of the task runs (on the pool's goroutine, while it runs, even
// after the task was cancelled or finished: its context is then done).
// From anywhere else it panics, as every Task method does; pass the
// context itself to other goroutines.
func (t *Task) Context() context.Context {
	if t != nil {
		if h := helperOf(t); h != nil {
			return h.context()
		}
	}
	t.check("Context")
	return t.context()
}
