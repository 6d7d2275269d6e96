package weft

// Observation: what Dump, the watchdog, RunStats and DebugHandler read
// while the loops run (DESIGN.md, "Observability").
//
// The loops' own state is loop-owned and lock-free, so an observer on
// another goroutine must not read it. What observers need is published
// here, off the loops' hot paths, in three places:
//
//  1. The registry of running Runs (runs, under runsMu): a Run joins it
//     when it starts and leaves it when it returns, so nothing is kept
//     after a Run ends.
//  2. Each Run's registry of live tasks: an intrusive list (taskObs.prev,
//     next) under runObs.mu, joined in newTask and left in finish. A
//     task's published record (its name, its parent, its current wait)
//     is guarded by its own taskObs.mu, written by the task's loop when
//     the task starts to wait (block) and by SetName.
//  3. Each loop's switch word (loopObs.run): the id of the task it runs
//     and a sequence number bumped at every resumption and slow
//     Checkpoint, or 0 while the loop sleeps. One atomic store per switch
//     is all an observer costs a loop; the watchdog samples it.
//
// Invariants:
//
//  1. Observers never wait for a loop: they take only runsMu, runObs.mu,
//     taskObs.mu and (with several loops) the run lock, each held by the
//     loops for a few instructions at a time.
//  2. Lock order: the run lock, then runObs.mu, then taskObs.mu.
//  3. A task is in its Run's registry from newTask until finish: exactly
//     the tasks walkTasks sees, without needing the scope tree.

import (
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/weft-go/weft/internal/poller"
)

// The running Runs, in start order.
var (
	runsMu  sync.Mutex
	runs    []*runState // guarded by runsMu
	runsSeq int         // guarded by runsMu: Runs started, for their numbers
)

// runObs is a Run's observation state.
type runObs struct {
	num int // immutable once registered: the Run's number, from 1

	mu    sync.Mutex // guards the task list
	head  *Task      // guarded by mu: the live tasks, newest first
	count int        // guarded by mu: tasks in the list

	offload atomic.Value // the Run's offload pool once made (its stats method: obs_stats.go)

	noLabels bool // immutable: WithTaskLabels(false)

	// awake counts the Run's loops that are not asleep (loop.countAwake).
	// An observer with nothing to watch while every loop sleeps (the
	// watchdog) waits in waitAwake instead of waking on a timer; the
	// loop that wakes first, seeing it there (waiters), signals it
	// through awakeCh. A loop pays for this only as it goes to sleep and
	// wakes: two atomic adds and a load.
	awake   atomic.Int32
	waiters atomic.Int32
	awakeCh chan struct{} // capacity 1; made with the Run
}

// countAwake adds d (1 or -1) to the Run's awake loops, and wakes an
// observer waiting for one (waitAwake) when the first loop wakes. Either
// the loop sees the waiter or the waiter sees the loop awake: each
// writes its count before it reads the other's.
func (o *runObs) countAwake(d int32) {
	if o.awake.Add(d) == 1 && d > 0 && o.waiters.Load() > 0 {
		select {
		case o.awakeCh <- struct{}{}:
		default:
		}
	}
}

// waitAwake returns true once some loop of the Run is awake (at once if
// one is), or false when stop is closed first. Any goroutine may call it.
func (o *runObs) waitAwake(stop <-chan struct{}) bool {
	o.waiters.Add(1)
	defer o.waiters.Add(-1)
	for o.awake.Load() == 0 {
		select {
		case <-o.awakeCh:
		case <-stop:
			return false
		}
	}
	return true
}

// runObservers are what layers start beside every Run (the watchdog:
// obs_watchdog.go), registered at init. Each is given the Run and its
// options, may start a goroutine that reads what the loops publish, and
// returns what stops it (or nil); the core knows no more of them.
var runObservers []func(rs *runState, o *options) (end func())

// startObs starts what the options ask for: the observers, tracing, the
// profiler label. It returns what ends them, after the loops have ended.
func (rs *runState) startObs(o *options) (end func()) {
	rs.obs.noLabels = o.obs.noLabels
	var ends []func()
	for _, start := range runObservers {
		if e := start(rs, o); e != nil {
			ends = append(ends, e)
		}
	}
	stopTrace := rs.startTrace(o)
	return func() {
		for _, e := range ends {
			e()
		}
		if stopTrace != nil {
			stopTrace()
		}
	}
}

// taskObs is a task's place in the registry and its published record.
// It is small (a task that never waits nor sets its name needs no
// record): the record lives in the task's extra part.
type taskObs struct {
	prev, next *Task                     // guarded by the Run's runObs.mu
	rec        atomic.Pointer[obsRecord] // &t.extra.obs once published (by its loop), or a record alone (prepareUnstarted)
}

// obsRecord is what a task publishes about itself. Its name, set by few
// tasks, is in its taskRare (name), guarded by mu too.
type obsRecord struct {
	mu sync.Mutex
	w  obsWaitRec // guarded by mu

	// runnableSince is when the task last became runnable (woken, or it
	// gave way), on the Run's clock (roughNow), plus one: 0 is never.
	// Written by the loop, read by Dump for a runnable task.
	runnableSince atomic.Int64

	// The wait's own state, written and read only by the task's loop
	// (never by observers, and not under mu). They are here, not in
	// taskExtra, so that a task waiting before it starts (waitUnstarted)
	// needs this record only.
	wakeErr error      // delivered by interrupt to the current wait
	op      *poller.Op // the completion-based operation waited on (waitFD), if any
	fd      int32      // fd waited on (state waiting, waitFD)
	fdMode  poller.Mode
	// dropped, set by waitUnstarted until the task starts, runs if the Run
	// unwinds before the task could start (loop.unwind): what the task's
	// function would have released (GoWhenReadable closes its Conn).
	dropped func()
}

// obsRec returns t's record, publishing it on first use. Only t's loop
// (or t itself) calls it.
func (t *Task) obsRec() *obsRecord {
	if r := t.obs.rec.Load(); r != nil {
		return r
	}
	r := &t.ensureExtra().obs
	t.obs.rec.Store(r)
	return r
}

// obsWaitRec describes a wait as the loop published it.
type obsWaitRec struct {
	gen    uint32   // the wait's generation: current while t.waitTok holds it
	kind   waitKind // what it waits on
	have   bool     // the record holds the current or last wait
	op     string   // the operation, if known ("Await", "Chan.Recv")
	since  int64    // when it began, on the Run's clock
	detail int64    // a timer's deadline; an fd<<2 | its poller.Mode
	pcs    [8]uintptr
}

// loopObs is a loop's published switch word and counters.
type loopObs struct {
	seq uint64        // loop-owned: resumptions
	run atomic.Uint64 // uint32(seq)<<32 | id of the task running (0 while the loop sleeps)
	cps atomic.Uint32 // slow Checkpoints: progress too, for the watchdog

	// roughNow's last reading of the clock, and seq then; loop-owned.
	rough      int64
	roughSeq   uint64
	roughValid bool

	// seen is the watchdog's last sample of run and when it first saw
	// that word (nil without a watchdog): how Dump tells how long the
	// running task has held the loop, with no clock read per switch.
	seen atomic.Pointer[watchSample]
	tr   traceState // loop-owned: tracing (trace.go)

	labels map[uintptr]unsafe.Pointer // loop-owned: profiler labels by task function (labels.go)

	// For the watchdog's reports (obs_watchdog.go), which never stop the
	// loop nor the world. yielding is set while the loop's goroutine
	// waits for a processor in a Gosched of its own (gosched): a loop
	// that has not switched for a while then is not held by its task.
	// wantStack names the running task whose stack an observer wants:
	// the task records it itself, from its own goroutine, at its next
	// suspension point, slow Checkpoint or slow look at ready results,
	// or its end (obsStackPoint), into stack. One stack, the cost of
	// runtime.Callers, once per report: never a dump of every goroutine.
	yielding  atomic.Bool
	wantStack atomic.Uint32
	stack     atomic.Pointer[stackRecord]

	// Counters for Stats, each written by the loop alone.
	seqPub   atomic.Uint64 // seq, published every 64 resumptions and before sleeping (see switches)
	spawned  atomic.Uint64 // tasks started on the loop
	polls    atomic.Uint64 // looks at the kernel
	pollNs   atomic.Int64  // ... and the time spent in them
	fired    atomic.Uint64 // timers that came due
	posts    atomic.Uint64 // messages posted to the inbox (by any goroutine)
	received atomic.Uint64 // tasks handed over to this loop by others
}

// registerRun adds rs to the running Runs.
func (rs *runState) registerRun() {
	runsMu.Lock()
	runsSeq++
	rs.obs.num = runsSeq
	runs = append(runs, rs)
	runsMu.Unlock()
}

// unregisterRun removes rs from the running Runs.
func (rs *runState) unregisterRun() {
	runsMu.Lock()
	if i := slices.Index(runs, rs); i >= 0 {
		runs = slices.Delete(runs, i, i+1)
	}
	runsMu.Unlock()
}

// runningRuns returns the running Runs, in start order.
func runningRuns() []*runState {
	runsMu.Lock()
	defer runsMu.Unlock()
	return slices.Clone(runs)
}

// obsSpawn registers the new task t, started from the scope parent.
func (rs *runState) obsSpawn(t *Task, parent *scope) {
	if p := parent.task; p != nil && p != &rs.root {
		t.parent = p.id
	}
	t.loop.obs.spawned.Add(1)
	o := &rs.obs
	o.mu.Lock()
	t.obs.next = o.head
	if o.head != nil {
		o.head.obs.prev = t
	}
	o.head = t
	o.count++
	o.mu.Unlock()
	t.loop.traceSpawn(t)
}

// obsFinish removes the finished task t from the registry.
func (rs *runState) obsFinish(t *Task) {
	o := &rs.obs
	o.mu.Lock()
	if p := t.obs.prev; p != nil {
		p.obs.next = t.obs.next
	} else if o.head == t {
		o.head = t.obs.next
	}
	if n := t.obs.next; n != nil {
		n.obs.prev = t.obs.prev
	}
	t.obs.prev, t.obs.next = nil, nil
	o.count--
	o.mu.Unlock()
}

// obsResume publishes that the loop runs t now (at a resumption, and at a
// Checkpoint's slow path: either one is progress for the watchdog).
func (l *loop) obsResume(t *Task) {
	l.obs.seq++
	l.obs.run.Store(uint64(l.obs.seq)<<32 | uint64(t.id))
	if l.obs.seq&63 == 0 {
		l.obs.seqPub.Store(l.obs.seq)
	}
}

// obsCheckpoint publishes that t, running, reached a slow Checkpoint.
func (l *loop) obsCheckpoint() { l.obs.cps.Add(1) }

// switches returns the loop's resumptions so far: the 64-bit count last
// published, advanced by the low 32 bits of the switch word, which are
// never 2^32 switches ahead of it.
func (o *loopObs) switches() uint64 {
	pub := o.seqPub.Load()
	low := uint32(o.run.Load() >> 32)
	return pub + uint64(low-uint32(pub))
}

// obsBegin publishes and traces that the loop resumes t.
func (l *loop) obsBegin(t *Task) {
	l.obsResume(t)
	l.traceResume(t)
}

// roughEvery is how many resumptions roughNow reuses a reading for.
const roughEvery = 64

// roughNow returns the loop's clock for the start of a wait, which Dump
// shows as "for how long": a real clock is read at most once every
// roughEvery resumptions (and at slow Checkpoints), so a park costs no
// clock read of its own. The reading may be early by what the loop ran
// since it was taken, microseconds unless a task held the loop without
// a Checkpoint (which the watchdog reports). A virtual clock is exact.
func (l *loop) roughNow() int64 {
	o := &l.obs
	if o.roughValid && o.seq-o.roughSeq < roughEvery {
		return o.rough
	}
	now := l.clock.Nanotime()
	if !l.clock.Virtual() {
		o.rough, o.roughSeq, o.roughValid = now, o.seq, true
	}
	return now
}

// noteNow hands roughNow a reading the loop took for itself.
func (l *loop) noteNow(now int64) {
	o := &l.obs
	o.rough, o.roughSeq, o.roughValid = now, o.seq, !l.clock.Virtual()
}

// obsRunnable publishes when t became runnable, for Dump; only a task that
// has waited once has a record to publish it in (a task that never waited
// shows no duration while runnable).
func (l *loop) obsRunnable(t *Task) {
	if r := t.obs.rec.Load(); r != nil {
		r.runnableSince.Store(l.roughNow() + 1)
	}
}

// obsSleep publishes that the loop runs no task: it is about to sleep.
func (l *loop) obsSleep() {
	l.obs.roughValid = false // time passes while it sleeps
	l.obs.run.Store(uint64(l.obs.seq) << 32)
	l.obs.seqPub.Store(l.obs.seq)
	l.tracePublish()
}

// obsWait publishes the wait of kind t is about to suspend in (block),
// unless its caller did (noteWaitSite).
func (t *Task) obsWait(kind waitKind) {
	x := t.extra
	r := t.obsRec()
	rec := &r.w
	// Only t writes its record, so t reads it without the lock.
	if rec.have && rec.gen == t.waitGen && rec.kind == kind {
		return // published with its site by noteWaitSite
	}
	r.mu.Lock()
	rec.have = true
	rec.gen, rec.kind = t.waitGen, kind
	rec.since = t.loop.roughNow()
	rec.detail = 0
	switch kind {
	case waitPromise, waitMulti, waitPark, waitExternal:
		// op and pcs are noteWaitSite's, which published the wait
	default:
		rec.op = ""
		clear(rec.pcs[:])
		fpCallers(rec.pcs[:])
		switch kind {
		case waitTimer:
			rec.op, rec.detail = "Sleep", x.timer.when
		case waitFD:
			rec.detail = int64(r.fd)<<2 | int64(r.fdMode)
		}
	}
	r.mu.Unlock()
}

// publishWaitLocked writes the wait of kind and op that t is about to
// block in to its record r, its stack cleared for the caller to fill.
// r.mu held, on t.
func (t *Task) publishWaitLocked(r *obsRecord, kind waitKind, op string) {
	rec := &r.w
	rec.have = true
	rec.gen, rec.kind, rec.op = t.waitGen, kind, op
	rec.since = t.loop.roughNow()
	rec.detail = 0
	clear(rec.pcs[:])
}

// SetName names the task, for Dump, the watchdog's reports, traces and
// profiles (the pprof label weft.task). A task has no name until it sets
// one; reports then show its id and function. SetName does not suspend
// and is not a cancellation point.
func (t *Task) SetName(name string) {
	t.check("SetName")
	r := t.obsRec()
	rr := t.ensureRare()
	r.mu.Lock()
	rr.name = name
	r.mu.Unlock()
	t.nameChanged()
}

// Name returns the name given by SetName, or "" if the task has none. It
// does not suspend.
func (t *Task) Name() string {
	t.check("Name")
	return t.ownName()
}

// ownName is t's name for t itself or its loop, which read it without
// the lock: only t writes it.
func (t *Task) ownName() string {
	if r := t.rareOf(); r != nil {
		return r.name
	}
	return ""
}

// givenName returns the name t gave itself with SetName, "" if none. Any
// goroutine may call it (the record is published atomically, the name
// read under its lock).
func (t *Task) givenName() string {
	r := t.obs.rec.Load()
	if r == nil {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return t.nameLocked()
}

// nameLocked is givenName for a caller holding the lock of t's published
// observers' record. A task waiting before it starts has a record and
// no t.extra (prepareUnstarted), and no name: nothing but its own code
// makes t.extra, and SetName makes it before it writes the name under the
// record's lock, so a name read here was written after t.extra was.
func (t *Task) nameLocked() string {
	if x := t.extra; x != nil {
		if rr := x.rare.Load(); rr != nil {
			return rr.name
		}
	}
	return ""
}

// fdModeString names a direction of an fd wait.
func fdModeString(m poller.Mode) string {
	switch m {
	case poller.Read:
		return "read"
	case poller.Write:
		return "write"
	}
	return "read+write"
}

// nameChanged passes a new name on to the trace and the profiler label.
func (t *Task) nameChanged() {
	t.loop.traceName(t, t.ownName())
	t.nameLabel()
}

// obsOptions are the observation options of Run.
type obsOptions struct {
	watchdog    time.Duration // WithWatchdog
	watchdogSet bool
	trace       io.Writer     // WithTrace
	flight      time.Duration // WithFlightRecorder
	noLabels    bool          // WithTaskLabels(false)
}

// watchSample is a switch word as the watchdog first saw it, published
// for Dump.
type watchSample struct {
	word  uint64
	since time.Time
}

// stackRecord is a task's stack, recorded by the task itself when an
// observer asked for it (loopObs.wantStack).
type stackRecord struct {
	id    uint32
	at    time.Time // when it was recorded
	where string    // what the task had reached: "a suspension point", "a Checkpoint", "its end"...
	pcs   []uintptr // return PCs from the recording point outwards; none at its end
}

// askStack asks loop l for the stack of the task id it runs, which the
// task records at its next suspension point, slow Checkpoint, slow look
// at ready results, or its end (obsStackPoint); the answer is then in
// l.obs.stack. Any goroutine may call it. The loop is preempted so that
// a Checkpoint's fast path takes the slow one at once.
func (l *loop) askStack(id uint32) {
	l.obs.wantStack.Store(id)
	l.preempt.Store(1)
}

// obsStackPoint records the running task t's stack if an observer asked
// for it (askStack), saying what t has reached. It runs on t's own
// goroutine (at its end, on the loop's: no stack then), and costs an
// atomic load when nobody asked.
func (l *loop) obsStackPoint(t *Task, where string, skip int) {
	id := l.obs.wantStack.Load()
	if id == 0 || id != t.id || !l.obs.wantStack.CompareAndSwap(id, 0) {
		return
	}
	rec := &stackRecord{id: id, at: time.Now(), where: where}
	if skip >= 0 {
		pcs := make([]uintptr, 64)
		rec.pcs = pcs[:runtime.Callers(skip+2, pcs)]
	}
	l.obs.stack.Store(rec)
}

// runningTask returns the task loop l runs now if its id is id, else
// nil: how the watchdog finds a task that holds its loop, in constant
// time whatever the number of tasks. It reads l.current, which only the
// loop writes, without synchronisation: a word-sized read observes some
// value written (Go's memory model), here a task that ran on l or nil, and
// the id check rejects any but the one the switch word named (a task's id
// never changes, and its cell is never reused). Under the owner checks'
// builds (the race detector, weft_debug) it walks the Run's registry
// instead, which the race detector accepts.
func (l *loop) runningTask(id uint32) *Task {
	if ownerChecks {
		return l.rs.findTask(id)
	}
	t := l.current
	if t == nil || t.id != id {
		return nil
	}
	return t
}

// findTask finds the live task id in the Run's registry (a walk of every
// live task: runningTask's way under the owner checks).
func (rs *runState) findTask(id uint32) *Task {
	o := &rs.obs
	o.mu.Lock()
	defer o.mu.Unlock()
	for t := o.head; t != nil; t = t.obs.next {
		if t.id == id {
			return t
		}
	}
	return nil
}
