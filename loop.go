package weft

// The loop.
//
// A loop runs the tasks of one Run, one at a time. Its state is loop-owned:
// it is read and written only by the goroutine that runs the loop at that
// moment, which is either the goroutine that called Run or the coroutine of
// one of the loop's tasks (see "Handing over" below). Control passes between
// those goroutines only by coroutine switches, which order memory like a
// channel handoff, so loop-owned state needs no locks. The exceptions are
// marked "shared" and are guarded as their comments say.
//
// Invariants:
//
//  1. At most one task runs at a time: l.current.
//  2. A task is in exactly one of these states: new (not yet started),
//     runnable (in a run queue, exactly once), running, waiting (registered
//     with exactly one wait source: a promise, several promises, the timer
//     heap, the fd table, off-loop work) or done.
//  3. Each lane (interactive, batch: see sched.go) is FIFO. Go queues the
//     child, then the parent; Yield queues the task at the back; an event
//     makes a waiting task runnable at the back of the interactive lane. The
//     one exception: a task cut short at a Checkpoint goes to the head of
//     the batch lane, to resume right after the tasks the event woke.
//  4. A task is woken once per wait: each wait has a generation number, and a
//     wake that names an older generation is dropped.
//  5. Run returns when no task is left and no off-loop work is pending. When
//     tasks are left but none is runnable and no timer, fd wait or off-loop
//     work can wake one, that is a deadlock (see deadlock.go).
//
// Handing over. Switching through the loop's own goroutine on every task
// switch would double the number of switches (task → loop → task). So a task
// resumed by the loop goroutine that suspends becomes the driver: it runs
// the scheduler itself, resuming the next tasks as nested coroutines until
// its own turn comes, at which point it simply returns. A nested task always
// switches back to the task that resumed it. A driver that is waiting (not
// runnable) hands back to the loop goroutine when the run queue empties, or
// when a nested task gave way while still runnable, so that the loop resumes
// that task at depth one and it can drive in turn. Nesting is thus never
// deeper than loop → driver → task; a spawn and its parent, a task and the
// task that wakes it, and two tasks taking turns all switch directly.

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft/internal/clock"
	"github.com/weft-go/weft/internal/coro"
	"github.com/weft-go/weft/internal/poller"
)

// pollEvery is how many task resumptions may pass between two checks of the
// kernel and the timer heap while tasks are always runnable (Tokio uses 61).
const pollEvery = 61

// maxIdleCoros bounds the coroutines a loop keeps for reuse. With
// several loops a loop keeps fewer (maxIdleCorosMulti) and moves
// coroBatch at a time to and from the Run's shared pool (coroPool), which
// keeps up to maxSharedCoros: a task ends on whatever loop it lives on by
// then (a connection's, on its fd's home), so without it the loop that
// accepts connections made a goroutine for every one while the others'
// pools filled with those that ended there.
const (
	maxIdleCoros      = 1024
	maxIdleCorosMulti = 256
	coroBatch         = 64
	maxSharedCoros    = 1024
)

type loop struct {
	rs *runState // the Run this loop is one of (loops.go)
	id int       // its index in rs.loops

	sim *simState // rs.sim, at hand for the hot paths (seed.go)

	// The run queue: loop-owned even with several loops (another loop
	// never touches it; a loop hands tasks over itself: handover.go).
	runq    queue[*Task] // runnable interactive tasks, FIFO (see sched.go)
	batchq  queue[*Task] // runnable batch tasks, FIFO
	current *Task        // the running task, nil while the scheduler runs
	driver  *Task        // a task driving the scheduler from its coroutine (see suspend)
	live    int          // tasks started on this loop minus tasks finished on it

	clock     clock.Clock
	timers    timerHeap
	poller    poller.Poller
	caps      poller.Caps
	ring      poller.Completer // the poller's completion side (io_uring), or nil
	locked    bool             // the loop's goroutine is locked to its thread (caps.SingleIssuer)
	reserved  int              // ... and holds this many reserved processors (procs.go)
	lastYield time.Time        // when yieldLocked last went through the scheduler
	events    []poller.Event
	fds       fdTable
	ticks     int // resumptions since the last poll

	// external counts off-loop operations in flight (Offload calls and the
	// helper goroutines of the portable I/O layer). Each posts its completion
	// to the inbox; while any is pending the loop sleeps instead of
	// declaring a deadlock.
	external int

	idle []*coro.Coro // finished coroutines kept for reuse

	// Scheduling (sched.go).
	interval      int64 // the switch interval, ns
	epoch         uint64
	budget        int32 // ready results the running task may still take
	batchDue      bool  // the batch lane has waited an interval
	batchRanAt    int64 // when a batch task last ran (-1: just now, not yet stamped)
	cpLeft        int32 // fast Checkpoints before the next slow one
	cpStride      int32 // fast Checkpoints between slow ones
	cpLast        int64 // when the last slow Checkpoint ran
	pollPeriod    int64 // ns between slow Checkpoints, pollPeriodMin..pollPeriodMax
	lastGosched   int64 // when a slow Checkpoint last yielded the goroutine's P (goschedEvery)
	goschedPeriod int64 // the time between two such yields, goschedEvery to goschedEveryMax
	sliceOwner    *Task // the task whose run sliceStart dates
	sliceEpoch    uint64
	sliceStart    int64
	sliceBegan    int64  // when the slice started (sliceStart moves on as its time is counted)
	sliceWakes    uint64 // wakes when the slice started
	sliceLooked   uint64 // lookWakes when the slice started
	lookWakes     uint64 // tasks woken by what the loop's looks found (fds, timers, posts), not by the running task
	spLeft        int32  // ready results (spend) before the next slow look
	spStride      int32  // ready results between slow looks
	spLast        int64  // when the last slow look at ready results ran
	lookedAt      int64  // when the loop last looked at the kernel and timers while busy (look, pollNow)
	wakes         uint64 // tasks woken by events (not those that gave way)

	aborted bool // Run is unwinding after a Goexit in a task
	// shedSkip is how many more calls of shed look at nothing, after one
	// found no movable task in the queue (handover.go); loop-owned.
	shedSkip int
	summary  loopSummary // run lock: published when the loop goes idle (handover.go)

	// ioTimers counts the I/O deadline timers in the heap (the net layer's
	// Conn deadlines): while there are any, virtual time may move although
	// fds or off-loop work are pending (blockVirtualIO).
	ioTimers int

	// Shared: the inbox receives work from other goroutines (wakes of
	// promises settled elsewhere, off-loop completions, cancellations).
	inboxMu  sync.Mutex
	inbox    []func()            // guarded by inboxMu
	releases []func(onLoop bool) // guarded by inboxMu: descriptors to release (postRelease)
	spare    []func()            // loop-owned: the previous inbox slice, for reuse
	closed   bool                // guarded by inboxMu: no more posts are accepted
	inboxLen atomic.Int32
	sleeping atomic.Bool // the loop is (about to be) asleep: a post must wake it (kick)
	// parkedInGo: the sleep is on wakeCh, not in the kernel (written before
	// sleeping is set, so a poster that sees sleeping sees the right way).
	parkedInGo atomic.Bool
	wakeCh     chan struct{} // capacity 1: kick's token for a loop parked in Go
	parkTimer  *time.Timer   // loop-owned: bounds a park in Go (parkInGo)
	obs        loopObs       // published for observers: the switch word (observe.go)
	kaParked   *Task         // loop-owned: tasks parked on a keepAliveSource (park.go)
	hungry     atomic.Bool   // asleep with nothing to run: a busy loop may hand it work (handover.go)

	// loopG is the loop's goroutine while it runs, for the owner checks
	// (owner.go; written only when ownerChecks is on, atomic because the
	// check that catches a wrong-goroutine access reads it from that wrong
	// goroutine).
	loopG   atomic.Uintptr
	preempt atomic.Uint32 // the running task's next Checkpoint must look (inbox)

	// The thread of control: the coroutine running for the loop now
	// (nil: the loop's goroutine), set and restored around every switch
	// (switchTo). coro.Current reads it from any goroutine to find the
	// caller's coroutine, and the owner checks to find who may touch the
	// loop's state. Registered from newLoop until the Run closes.
	thread coro.Thread
}

func newLoop(rs *runState, id int, o options) (*loop, error) {
	// One loop alone never hands a task to another thread, so its
	// goroutine may stay on one thread: io_uring then defers its
	// completion work to that thread's waits (see run).
	p, err := poller.Open(o.backend, poller.Options{SingleIssuer: !rs.multi})
	if err != nil {
		return nil, err
	}
	l := &loop{rs: rs, id: id, poller: p, caps: p.Caps(), clock: rs.clock, wakeCh: make(chan struct{}, 1)}
	if l.caps.Completion {
		l.ring = p.(poller.Completer)
	}
	l.timers.owner, l.fds.owner = l, l
	l.pollPeriod = int64(pollPeriodMax)
	l.goschedPeriod = int64(goschedEvery)
	l.interval = int64(o.interval)
	if l.interval <= 0 {
		l.interval = int64(DefaultSwitchInterval)
	}
	l.thread.Register()
	return l, nil
}

// post queues fn to run on the loop and wakes the loop if it sleeps. Any
// goroutine may call it. It reports false if the loop has ended, in which
// case fn will never run.
func (l *loop) post(fn func()) bool {
	l.inboxMu.Lock()
	if l.closed {
		l.inboxMu.Unlock()
		return false
	}
	l.inbox = append(l.inbox, fn)
	l.inboxLen.Store(int32(len(l.inbox)))
	l.inboxMu.Unlock()
	l.obs.posts.Add(1)
	// Pairs with block: either we see sleeping and wake the poller, or the
	// loop sees inboxLen > 0 before it sleeps. A running task that is busy
	// computing sees preempt at its next Checkpoint.
	l.preempt.Store(1)
	l.kick()
	return true
}

// runOn runs fn on l: at once if the caller is a task of l (l's thread of
// control), else through l's inbox. It reports false if l has ended, in
// which case fn does not run. fn must not suspend.
func (l *loop) runOn(fn func()) bool {
	if callerLoop() == l {
		fn()
		return true
	}
	return l.post(fn)
}

// onOwner runs fn on the loop that owns t now, for state of t's that its
// loop owns (its finish hooks, say) and that code elsewhere must change:
// at once if the caller runs on that loop, else through that loop's
// inbox, passed on if t has moved by the time it arrives. Any goroutine
// may call it. If the Run has ended, fn does not run. fn must not suspend.
func (t *Task) onOwner(fn func()) {
	rs := t.rs
	rs.lock()
	l := t.loop
	rs.unlock()
	if callerLoop() == l {
		fn() // l's thread: only l moves t, so t stays l's meanwhile
		return
	}
	l.post(func() { l.runOwned(t, fn) })
}

// runOwned runs fn if l still owns t, else passes it on to t's loop.
func (l *loop) runOwned(t *Task, fn func()) {
	rs := l.rs
	rs.lock()
	to := t.loop
	rs.unlock()
	if to != l {
		to.post(func() { to.runOwned(t, fn) })
		return
	}
	fn()
}

// wakeUp wakes l however it sleeps, and whether or not it does (the Run
// is over: see allIdle).
func (l *loop) wakeUp() {
	select {
	case l.wakeCh <- struct{}{}:
	default:
	}
	l.poller.Wake()
}

// kick wakes l if it sleeps, after a post: through wakeCh if it is parked
// in Go (a goroutine wake, as a channel send's: no system call on either
// side), else through the poller. Pairs with block: either the poster sees
// sleeping and kicks, or the loop sees inboxLen > 0 before it sleeps. A
// kick that finds the loop already awake leaves at most a token in wakeCh:
// the next park in Go then returns at once, a spurious wake-up.
func (l *loop) kick() {
	if !l.sleeping.Load() {
		return
	}
	if l.parkedInGo.Load() {
		select {
		case l.wakeCh <- struct{}{}:
		default:
		}
		return
	}
	l.poller.Wake()
}

// postRelease is post for the release of a descriptor that was closed
// (Close of a Conn, Listener or File): it must happen even if the loop
// ends first, so the loop runs what is still queued when it closes, and if
// the loop has already ended, postRelease runs fn itself, with onLoop
// false: fn must then touch no loop state. Nothing a user closed stays
// open.
func (l *loop) postRelease(fn func(onLoop bool)) {
	l.inboxMu.Lock()
	if l.closed {
		l.inboxMu.Unlock()
		fn(false)
		return
	}
	l.releases = append(l.releases, fn)
	l.inboxLen.Add(1)
	l.inboxMu.Unlock()
	l.preempt.Store(1)
	l.kick()
}

func (l *loop) drainInbox() {
	l.traceFrom(fromInbox)
	l.inboxMu.Lock()
	batch := l.inbox
	l.inbox = l.spare[:0]
	releases := l.releases
	l.releases = nil
	l.inboxLen.Store(0)
	l.inboxMu.Unlock()
	for i, fn := range batch {
		batch[i] = nil
		fn()
	}
	l.spare = batch[:0]
	for _, fn := range releases {
		fn(true)
	}
}

// ready makes t runnable at the back of the (interactive) run queue. A
// task that was waiting has been woken by an event: that is counted, so that
// a CPU-bound task's next Checkpoint gives way to it.
func (l *loop) ready(t *Task) {
	if ownerChecks {
		l.assertOwner("the run queue")
		if t.loop != l {
			panic("weft: internal error: a task of another loop made runnable on loop " + strconv.Itoa(l.id))
		}
	}
	if s := l.sim; s != nil {
		s.noteReady(t)
	}
	if t.state == stateWaiting {
		l.wakes++
		t.waitTok.Store(0)
		if t.waitKind == waitPark {
			if r := t.extra.rare.Load(); r != nil && r.kaLinked {
				l.unlinkKeepAlive(t)
			}
		}
		l.traceWake(t)
	}
	t.state = stateRunnable
	t.waitKind = waitNone
	l.obsRunnable(t)
	l.runq.push(t)
}

// pick returns the next task to run, or nil if none is runnable. Every so
// often it also collects due timers and ready fds without blocking, so that
// tasks that keep the loop busy cannot starve the ones waiting for events.
func (l *loop) pick() *Task {
	if l.inboxLen.Load() != 0 {
		l.drainInbox()
	}
	if l.ticks++; l.ticks >= pollEvery {
		l.ticks = 0
		l.pollNow()
	}
	if l.rs.multi {
		if l.rs.hungry.Load() > 0 {
			l.shed(nil)
		}
		if d := l.driver; d != nil && d.moveTo != nil {
			return nil // the driver is sent away: it stops driving (sendDriver)
		}
	}
	t, ok := l.popRunnable()
	if !ok {
		return nil
	}
	return t
}

// pollNow collects ready fds and due timers without blocking, checks
// whether the batch lane is due, and lets the program's other goroutines
// (other loops among them) have the loop's processor if it has held it
// for its Gosched period (gosched): tasks that take turns without a
// Checkpoint must not keep it until Go preempts the goroutine.
func (l *loop) pollNow() {
	wakes := l.wakes
	defer func() { l.lookWakes += l.wakes - wakes }()
	var now int64
	if l.fds.waiting > 0 {
		now = l.pollKernel(0)
	} else {
		now = l.clock.Nanotime()
	}
	if l.timers.len() > 0 || l.batchq.len() > 0 {
		l.fireTimersAt(now)
		l.checkBatchDue(now)
	}
	l.lookedAt = now
	l.gosched(now)
}

// resume runs t until it suspends or finishes, and reports whether t gave
// way while still runnable on this loop (it yielded or spawned). nested
// says that the caller is a driving task rather than the loop goroutine.
// Once resume returns, t may belong to another loop: the caller must not
// look at it.
func (l *loop) resume(t *Task, nested bool) (gaveWay bool) {
	t.nested = nested
	t.state = stateRunning
	l.begin(t)
	var done bool
	if t.co == nil {
		t.co = l.coroutine()
		prev := l.switchTo(t.co)
		done = t.co.Start(t.job)
		l.switchBack(prev)
	} else {
		prev := l.switchTo(t.co)
		done = t.co.Resume()
		l.switchBack(prev)
	}
	l.current = nil
	if done {
		l.obsStackPoint(t, "its end", -1)
		l.traceFinished(t)
		l.recycle(t)
		return false
	}
	if to := t.moveTo; to != nil {
		// t asked to move and has switched out: it may go now.
		t.moveTo = nil
		l.send(to, []*Task{t})
		return false
	}
	return t.state == stateRunnable
}

// begin starts a run of t on the loop: its budget, and for a task known
// to be CPU-bound, the start of its slice (see sched.go).
func (l *loop) begin(t *Task) {
	l.current = t
	l.epoch++
	l.obsBegin(t)
	l.budget = taskBudget
	if x := t.extra; x != nil && x.checkpoints {
		l.sliceOwner, l.sliceEpoch, l.sliceStart = t, l.epoch, l.clock.Nanotime()
		l.sliceWakes, l.sliceBegan, l.sliceLooked = l.wakes, l.sliceStart, l.lookWakes
	}
}

// suspend gives up the loop on behalf of the running task t, whose state is
// already runnable (queued) or waiting. It returns when t is resumed.
//
// If t was resumed by the loop goroutine it drives (see "Handing over"):
// it resumes the next tasks itself until its own turn comes. A waiting
// driver stops driving when the run queue is empty (the loop goroutine then
// polls the kernel, or finds a deadlock) or when a task it resumed gave way
// while still runnable, as tasks taking turns do: the loop goroutine then
// resumes that one at depth one, so that it can hand over directly to the
// next.
func (l *loop) suspend(t *Task) {
	l.obsStackPoint(t, "a suspension point", 1)
	l.traceSuspend(t)
	if !t.nested && !l.aborted && t.moveTo == nil {
		l.driver = t // it may be queued, but its coroutine is busy: it must not move
		for {
			next := l.pick()
			if next == t {
				l.driver = nil
				t.state = stateRunning
				l.begin(t)
				return
			}
			if next == nil {
				break
			}
			if l.resume(next, true) && t.state == stateWaiting {
				break
			}
		}
		l.driver = nil
	}
	l.current = nil
	if !t.co.Suspend() {
		// The coroutine was closed under us: Run is unwinding after a
		// Goexit. Every wait from now on fails at once.
		t.state = stateRunning
		t.waitRec().wakeErr = errAborted
	}
}

func (l *loop) coroutine() *coro.Coro {
	if len(l.idle) == 0 && l.rs.multi {
		l.idle = l.rs.coros.take(l.idle)
	}
	if n := len(l.idle); n > 0 {
		c := l.idle[n-1]
		l.idle[n-1] = nil
		l.idle = l.idle[:n-1]
		return c
	}
	return coro.New()
}

// recycle returns the coroutine of the finished task t to the pool.
func (l *loop) recycle(t *Task) {
	c := t.co
	t.co = nil
	switch {
	case l.aborted:
		c.Close()
	case !l.rs.multi:
		if len(l.idle) < maxIdleCoros {
			l.idle = append(l.idle, c)
		} else {
			c.Close()
		}
	default:
		if len(l.idle) >= maxIdleCorosMulti {
			// Full: the oldest batch goes to the Run's pool.
			l.idle = l.rs.coros.give(l.idle)
		}
		l.idle = append(l.idle, c)
	}
}

// coroPool is a Run's shared pool of idle coroutines, for several loops
// (see maxIdleCoros). Any loop may use it; it holds its lock for the copy
// of a batch.
type coroPool struct {
	mu   sync.Mutex
	pool []*coro.Coro
}

// take moves up to coroBatch coroutines from the pool to idle and returns
// idle.
func (p *coroPool) take(idle []*coro.Coro) []*coro.Coro {
	p.mu.Lock()
	n := min(coroBatch, len(p.pool))
	idle = append(idle, p.pool[len(p.pool)-n:]...)
	clear(p.pool[len(p.pool)-n:])
	p.pool = p.pool[:len(p.pool)-n]
	p.mu.Unlock()
	return idle
}

// give moves the first coroBatch coroutines of idle (the longest idle) to
// the pool, closing those it has no room for, and returns what is left of
// idle.
func (p *coroPool) give(idle []*coro.Coro) []*coro.Coro {
	n := min(coroBatch, len(idle))
	batch := idle[:n]
	p.mu.Lock()
	room := min(n, maxSharedCoros-len(p.pool))
	p.pool = append(p.pool, batch[:room]...)
	p.mu.Unlock()
	for _, c := range batch[room:] {
		c.Close()
	}
	rest := copy(idle, idle[n:])
	clear(idle[rest:])
	return idle[:rest]
}

// close closes the pool's coroutines, when the Run ends.
func (p *coroPool) close() {
	p.mu.Lock()
	pool := p.pool
	p.pool = nil
	p.mu.Unlock()
	for _, c := range pool {
		c.Close()
	}
}

// run is the loop goroutine's scheduler. It returns when nothing is left.
func (l *loop) run() {
	if l.caps.SingleIssuer && !l.locked {
		// Unlocked when the Run closes its pollers (runState.close).
		runtime.LockOSThread()
		l.locked = true
		if procsBase() == 1 {
			// Alone on its processor, a loop asleep in the kernel would
			// have it taken by sysmon at every sleep (see procs.go).
			l.reserved = reserveProcs(1)
		}
		if err := l.poller.(poller.Starter).Start(); err != nil {
			panic(err)
		}
	}
	l.ownLoopGoroutine(true)
	defer l.ownLoopGoroutine(false)
	l.countAwake(1)
	defer l.countAwake(-1)
	for {
		if l.aborted {
			return
		}
		if t := l.pick(); t != nil {
			l.resume(t, false)
			continue
		}
		if l.rs.multi {
			if l.idleMulti() {
				return
			}
			continue
		}
		if l.live == 0 && l.external == 0 {
			return
		}
		if l.inboxLen.Load() != 0 {
			continue
		}
		if l.timers.strong() == 0 && l.fds.waiting == 0 && l.external == 0 && !l.parkedKeepAliveLocked() {
			if l.rs.confirmDeadlock() { // not if a goroutine's wake is on its way (deadlock.go)
				l.onDeadlock()
				continue
			}
		}
		l.block()
	}
}

// block sleeps in the kernel until an fd is ready, the next timer is due or
// another goroutine posts to the inbox. With a virtual clock and nothing
// outside the loop to wait for, it jumps to the next deadline instead.
func (l *loop) block() {
	l.obsSleep()
	l.countAwake(-1)
	l.sleep()
	l.countAwake(1)
}

// sleep is block's body.
func (l *loop) sleep() {
	timeout := int64(-1)
	if next := l.timers.peek(); next != nil {
		timeout = max(0, next.when-l.clock.Nanotime())
		if l.clock.Virtual() {
			if l.fds.waiting == 0 && l.external == 0 && !l.rs.multi {
				l.clock.AdvanceTo(next.when)
				l.fireTimers()
				return
			}
			if l.ioTimers > 0 && !l.rs.multi {
				l.blockVirtualIO(next) // I/O deadlines pass unless I/O comes first
				return
			}
			timeout = -1 // virtual deadlines pass only when nothing else can happen
		}
	}
	// With no task waiting on an fd, nothing the kernel says matters until
	// one does (registrations keep their events for the next poll): the
	// loop parks in Go instead, and a wake from another loop or goroutine
	// is a goroutine wake-up (see kick). Short sleeps stay in the kernel,
	// whose timeout is precise.
	// A loop locked to its thread (io_uring) always sleeps in the kernel:
	// a Go wake-up of a locked goroutine is a thread hand-off.
	inGo := l.fds.waiting == 0 && (timeout < 0 || timeout >= int64(parkInGoMin)) && !l.locked
	l.parkedInGo.Store(inGo)
	l.sleeping.Store(true)
	if l.inboxLen.Load() != 0 {
		timeout = 0
	}
	if l.locked {
		l.yieldLocked()
	}
	var now int64
	if inGo {
		l.parkInGo(timeout)
		now = l.clock.Nanotime()
	} else {
		now = l.pollKernel(timeout)
	}
	l.sleeping.Store(false)
	// A sleep is a look: the kernel and the inbox were just read, so the
	// first slow Checkpoint or ready result after it need not look again
	// (see spendSlow). Without this, a loop that sleeps between bursts
	// made a non-blocking epoll_wait at the start of almost every burst.
	l.lookedAt = now
	if l.timers.len() > 0 {
		l.fireTimersAt(now)
	}
}

// countAwake adds d (1 or -1) to the loops counted awake: the process's
// (awakeLoops, for the scheduler: see gosched) and the Run's (for
// observers that sleep while every loop does: see runObs.awake).
func (l *loop) countAwake(d int32) {
	awakeLoops.Add(d)
	l.rs.obs.countAwake(d)
}

// lockedYieldEvery is how often a loop locked to its thread goes through
// the Go scheduler before it sleeps (yieldLocked).
const lockedYieldEvery = 5 * time.Millisecond

// yieldLocked lets a loop locked to its thread (which sleeps in system
// calls, never in the Go scheduler) go through the scheduler every few
// milliseconds. Otherwise sysmon sees one goroutine that has run for 10
// ms, forces a preemption, takes the processor at the loop's next system
// call, and then polls every 20 µs for a millisecond: about a tenth of an
// idle-ish server's CPU. A Gosched of a locked goroutine costs two thread
// hand-offs, tens of microseconds every 5 ms, taken just before a sleep.
func (l *loop) yieldLocked() {
	now := time.Now()
	if now.Sub(l.lastYield) < lockedYieldEvery {
		return
	}
	l.lastYield = now
	runtime.Gosched()
}

// parkInGoMin is the shortest sleep block takes in Go rather than in the
// kernel.
const parkInGoMin = time.Millisecond

// parkInGo sleeps on wakeCh for up to timeout nanoseconds (negative: no
// limit).
func (l *loop) parkInGo(timeout int64) {
	switch {
	case timeout == 0:
		select {
		case <-l.wakeCh:
		default:
		}
	case timeout < 0:
		<-l.wakeCh
	default:
		if l.parkTimer == nil {
			l.parkTimer = time.NewTimer(time.Duration(timeout))
		} else {
			l.parkTimer.Reset(time.Duration(timeout))
		}
		select {
		case <-l.wakeCh:
			l.parkTimer.Stop()
		case <-l.parkTimer.C:
		}
	}
}

// fireTimers wakes the tasks whose sleeps are due and runs due callbacks.
func (l *loop) fireTimers() { l.fireTimersAt(l.clock.Nanotime()) }

// fireTimersAt is fireTimers with the time already read.
func (l *loop) fireTimersAt(now int64) {
	l.traceFrom(fromTimer)
	for {
		tm := l.timers.peek()
		if tm == nil || tm.when > now {
			return
		}
		l.timers.remove(tm)
		l.obs.fired.Add(1)
		if tm.task != nil {
			if tm.task.state == stateWaiting && tm.task.waitKind == waitTimer {
				l.ready(tm.task)
			}
		} else {
			tm.fn()
		}
	}
}

// addTimer schedules fn to run on the loop after d nanoseconds.
func (l *loop) addTimer(d int64, fn func()) *timer {
	tm := &timer{when: l.deadline(d), fn: fn}
	l.timers.push(tm)
	return tm
}

// deadline returns now+d on the loop clock, saturating instead of wrapping.
func (l *loop) deadline(d int64) int64 {
	now := l.clock.Nanotime()
	if d > (1<<63-1)-now {
		return 1<<63 - 1
	}
	return now + d
}

// interrupt wakes the waiting task t with err, withdrawing it from whatever
// it waits on. It does nothing to a task that is not waiting.
func (l *loop) interrupt(t *Task, err error) {
	if t.state != stateWaiting {
		return
	}
	switch t.waitKind {
	case waitPromise:
		t.extra.w.single.retire()
	case waitMulti:
		for _, w := range t.extra.w.multi {
			w.retire()
		}
	case waitTimer:
		l.timers.remove(&t.extra.timer)
	case waitFD:
		if r := t.obs.rec.Load(); r.op != nil {
			// The kernel owns the operation until it completes: ask for it
			// back and wait for its completion, which may still carry
			// data (opDone; the caller delivers it).
			if r.wakeErr == nil {
				r.wakeErr = err
			}
			l.ring.Cancel(r.op)
			return
		}
		l.fds.remove(l, t)
	case waitPark:
		t.extra.park.withdraw(t.extra.parkW)
	case waitExternal:
		// The off-loop work runs on; its completion finds the generation
		// changed and is dropped (Run still waits for it).
	}
	t.waitGen++
	t.obs.rec.Load().wakeErr = err // a waiting task has published its record (block, waitUnstarted)
	l.ready(t)
}

// closeInbox ends the loop's life: no more posts (late descriptor
// releases run at once), the idle coroutines released.
func (l *loop) closeInbox() {
	l.inboxMu.Lock()
	l.closed = true
	l.inbox = nil
	releases := l.releases
	l.releases = nil
	l.inboxMu.Unlock()
	// Closes that arrived after the last drain (from a task unwinding on
	// the Goexit path, or from another goroutine just now).
	for _, fn := range releases {
		fn(true)
	}
	for _, c := range l.idle {
		c.Close()
	}
	l.idle = nil
}

// virtualIOGrace is how long, in real time, a loop on a virtual clock waits
// for I/O before it lets an I/O deadline pass: fds report what the kernel
// holds at once, but off-loop work (the portable backend's helper
// goroutines) needs a goroutine to be scheduled, which a busy machine can
// delay, so it gets longer.
const (
	virtualIOGrace       = int64(10e6)  // 10 ms
	virtualExternalGrace = int64(100e6) // 100 ms
)

// blockVirtualIO is the loop's block when the clock is virtual, an I/O
// deadline is armed, and fds or off-loop work are pending: it waits up to
// the grace for them, and if nothing came, it moves the clock to the next
// timer.
func (l *loop) blockVirtualIO(next *timer) {
	l.parkedInGo.Store(false)
	l.sleeping.Store(true)
	grace := virtualIOGrace
	if l.external > 0 {
		grace = virtualExternalGrace
	}
	if l.inboxLen.Load() != 0 {
		grace = 0
	}
	l.pollKernel(grace)
	l.sleeping.Store(false)
	if l.runq.len() == 0 && l.inboxLen.Load() == 0 {
		l.clock.AdvanceTo(next.when)
	}
	l.fireTimers()
}
