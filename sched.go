package weft

// The scheduler: lanes, checkpoints, the switch interval and the budget.
//
// A loop runs one task at a time, like CPython's GIL, and must not repeat
// the GIL's convoy effect, where a CPU-bound thread makes an I/O-bound one
// wait a whole switch interval after every I/O. So:
//
//   - Two lanes. A task made runnable by an event (fd ready, timer due,
//     promise settled, a wake from another goroutine) or that suspended on its
//     own (Yield, a wait, Go) is interactive. A task forced off at a
//     Checkpoint after using a whole switch interval since it last waited is
//     batch. The loop runs interactive tasks first; a batch task runs when no
//     interactive one is runnable, and at least once per interval whatever
//     happens (checked at the loop's periodic poll), so neither lane starves.
//     A batch task that later waits or yields on its own is interactive
//     again. Lane choice depends only on these events, so the same events
//     give the same schedule.
//
//   - Checkpoint is where a CPU-bound task offers the loop. Its fast path is
//     a counter decrement and a flag load (a few nanoseconds). Every so many
//     calls it takes the slow path: it reads the clock, polls the kernel
//     without blocking, fires due timers and drains the inbox, and switches
//     if an event has woken a task since the running one got the loop (at
//     once: this is what defeats the convoy) or if the task has used its
//     interval and another task waits. Tasks that are runnable only because
//     they gave way themselves (other CPU-bound tasks, new tasks) do not cut
//     a slice short: CPU-bound tasks share the loop by the interval. The
//     number of fast calls between slow ones adapts so that the slow path
//     runs about once per poll period of the caller's own time, whatever the
//     work between two calls; the period is 2 µs after a look that woke a
//     task and grows by half after each look that found nothing, up to
//     50 µs. Wakes from other goroutines and cancellations set the flag, so
//     the next call sees them.
//
//   - A budget: a task that keeps finding results ready (awaiting settled
//     promises, reads that return data at once) is made to yield after
//     taskBudget of them without suspending, as Tokio does, so one busy
//     connection cannot starve the rest.

import (
	"runtime"
	"sync/atomic"
	"time"
)

const (
	// DefaultSwitchInterval is how long a task may hold the loop, at
	// Checkpoints, while other tasks wait: CPython's default. (Go's runtime
	// preempts after 10 ms.)
	DefaultSwitchInterval = 5 * time.Millisecond

	// taskBudget is how many ready results a task may take in a row before
	// it must yield (Tokio uses 128).
	taskBudget = 128

	// pollPeriodMin and pollPeriodMax bound how often, in a CPU-bound
	// task's own time, Checkpoint looks at the kernel and the timers. After
	// a look that woke a task, the next comes after pollPeriodMin (events
	// come in runs: a request now means another soon); after one that found
	// nothing, the period grows by half, up to pollPeriodMax. A look
	// costs about a microsecond, so a quiet loop loses 2% to it, and a busy
	// one answers within tens of microseconds. pollPeriodMin was 2 µs: on a
	// loop serving many connections every look wakes a task, so the
	// period stayed at 2 µs, shorter than one request's work, and the loop
	// made 1.5 non-blocking epoll_wait calls per request (half of them
	// finding nothing) where a goroutine server makes 0.16 (bench resp
	// -perf); at 20 µs the echo server does 1.17x the requests per CPU
	// second, and a woken I/O task still waits far less than the switch
	// interval, as the convoy and fairness tests check.
	pollPeriodMin = 20 * time.Microsecond
	pollPeriodMax = 50 * time.Microsecond

	// goschedEvery is how often a busy loop lets its goroutine give its
	// processor to other goroutines (gosched), at slow Checkpoints and
	// between tasks, while doing so costs little. When a Gosched keeps
	// the loop off its processor for longer than the period it ran, and
	// the loops of the process do not outnumber its processors (so that
	// goroutines that do not block took it), the period grows to that
	// wait (at least double), up to goschedEveryMax, Go's own time slice,
	// so that the loop keeps its share of the processor; it halves back
	// when Gosched is cheap.
	goschedEvery    = 20 * time.Microsecond
	goschedEveryMax = 10 * time.Millisecond

	// maxCheckpointStride bounds the fast Checkpoint calls between two slow
	// ones, so that a task calling it in a tight loop still polls.
	maxCheckpointStride = 1 << 16
)

// readyBatch makes t runnable in the batch lane.
func (l *loop) readyBatch(t *Task) {
	t.ensureExtra().batch = true
	t.state = stateRunnable
	t.waitKind = waitNone
	l.obsRunnable(t)
	l.batchq.push(t)
}

// popRunnable takes the next task: interactive first, unless the batch lane
// is due (it has waited an interval) or the interactive lane is empty.
func (l *loop) popRunnable() (*Task, bool) {
	if s := l.sim; s != nil {
		return s.pick(l) // a seeded Run (seed.go)
	}
	if l.batchq.len() > 0 && (l.batchDue || l.runq.len() == 0) {
		l.batchDue = false
		l.batchRanAt = -1 // stamped at the next poll; see checkBatchDue
		return l.batchq.pop()
	}
	return l.runq.pop()
}

// checkBatchDue marks the batch lane due when it has waited an interval:
// an interval in which no batch task ran. While one runs (the task that
// holds the loop came from the batch lane) the lane is being served, and
// the clock starts again when it gives way. (Counted from when the batch
// task began instead, the lane was due again as soon as that task had
// used its interval, and the next batch task went ahead of the
// interactive ones: the batch tasks took turns for as long as each used
// its whole interval, and an I/O task woken meanwhile waited behind all
// of them, tens of milliseconds on a loaded machine.)
func (l *loop) checkBatchDue(now int64) {
	if l.batchq.len() == 0 || l.servingBatch() {
		l.batchRanAt = now
		return
	}
	if l.batchRanAt < 0 {
		l.batchRanAt = now
	}
	if now-l.batchRanAt >= l.interval {
		l.batchDue = true
	}
}

// servingBatch reports whether the task that holds the loop came from the
// batch lane.
func (l *loop) servingBatch() bool {
	t := l.current
	return t != nil && t.extra != nil && t.extra.batch
}

// Checkpoint offers the loop to other tasks, for a task doing CPU-bound
// work: call it every so often (every thousand iterations of an inner loop,
// say). When no switch is due it returns at once, in a few nanoseconds;
// when one is, it suspends the task (see below). Checkpoint is a
// cancellation point: if the task has been cancelled it returns the cause
// (matching context.Canceled).
//
// It switches in two cases. At once, if an interactive task is waiting: an
// fd became ready, a timer fell due, a promise was settled from another
// goroutine. And when the task has held the loop for the switch interval
// (see WithSwitchInterval) since it last waited and another task is
// runnable: the task then goes to the batch lane, behind interactive tasks.
// Meanwhile Checkpoint keeps the loop's view of fds and timers fresh,
// polling the kernel without blocking every 2 to 50 µs of the task's time
// (more often while events keep coming).
//
// With several loops (WithLoops), a Checkpoint is also where work spreads:
// if another loop sleeps with nothing to run, this loop hands it queued
// tasks, or, when nothing queued may move (a Local task, the task driving
// the loop), the calling task itself moves there and Checkpoint returns on
// that loop (Loop then says which). A Local task never moves.
func (t *Task) Checkpoint() error {
	t.check("Checkpoint")
	l := t.loop
	if l.cpLeft--; l.cpLeft > 0 && l.preempt.Load() == 0 && !t.cancelled.Load() {
		return nil
	}
	return t.checkpoint()
}

// checkpoint is Checkpoint's slow path.
func (t *Task) checkpoint() error {
	if err := t.cancelPoint(); err != nil {
		return err
	}
	// The task has held the loop a while, and may be made to give it
	// away below (or to move): its suspend hook runs here, before it.
	t.beforeSuspend()
	l := t.loop
	l.preempt.Store(0)
	l.obsCheckpoint()
	l.obsStackPoint(t, "a Checkpoint", 1)
	now := l.clock.Nanotime()
	l.noteNow(now)

	// Adapt the stride so that slow paths come about once per poll period.
	if dt := now - l.cpLast; l.cpLast != 0 && dt > 0 {
		stride := int64(l.cpStride) * l.pollPeriod / dt
		l.cpStride = int32(min(max(stride, 1), maxCheckpointStride))
	} else if l.cpStride < maxCheckpointStride {
		l.cpStride = max(2*l.cpStride, 1)
	}
	l.cpLast = now
	l.cpLeft = l.cpStride

	// The task's use of the loop since it last waited, and the start of its
	// slice, fixed before we look at events: a wake found below must count.
	x := t.ensureExtra()
	x.checkpoints = true
	if l.sliceOwner != t || l.sliceEpoch != l.epoch {
		l.sliceOwner, l.sliceEpoch, l.sliceStart = t, l.epoch, now
		l.sliceWakes, l.sliceBegan, l.sliceLooked = l.wakes, now, l.lookWakes
	}
	x.cpu += now - l.sliceStart
	l.sliceStart = now

	// What happened meanwhile.
	l.look(now)
	if l.rs.multi && l.rs.hungry.Load() > 0 {
		// Another loop sleeps with nothing to run: share the queue, or
		// go there if what is queued here must stay.
		if to := l.shed(t); to != nil {
			if err := t.migrate(to, "a hand-over"); err != nil {
				return err
			}
			return t.cancelPoint()
		}
	}
	if err := t.cancelPoint(); err != nil {
		return err
	}

	switch {
	case l.wakes != l.sliceWakes && l.runq.len() > 0, l.batchDue && l.batchq.len() > 0:
		// An event woke a task (or the batch lane is due): give way now.
		if x.cpu >= l.interval {
			x.cpu = 0
			l.readyBatch(t)
		} else {
			l.requeue(t)
		}
	case x.cpu >= l.interval && (l.batchq.len() > 0 || l.runq.len() > 0):
		// A whole interval used, and others wait their turn.
		x.cpu = 0
		l.readyBatch(t)
	default:
		if after := l.gosched(now); after != now {
			// The time the goroutine waited for a processor again is
			// not the task's use of the loop: with more loops than
			// cores, or beside goroutines that never block, it can be a
			// whole Go time slice (10 ms), and charging it would send
			// the task to the batch lane after every Gosched, starving
			// it there. Nor is it time the calls between two slow
			// Checkpoints took: the stride adapts to the task's pace,
			// not to the scheduler's.
			l.sliceStart, l.cpLast = after, after
		}
		return nil
	}
	l.obs.tr.why = whyPreempted
	l.suspend(t)
	return t.cancelPoint()
}

// requeue puts a task forced off at a Checkpoint before using its interval
// (an event woke another task) at the head of the batch lane: the woken
// interactive tasks run first, and then it resumes where it was cut short,
// ahead of the other CPU-bound tasks, keeping the time it used (t.extra.cpu)
// towards its interval.
func (l *loop) requeue(t *Task) {
	t.ensureExtra().batch = true
	t.state = stateRunnable
	t.waitKind = waitNone
	l.obsRunnable(t)
	l.batchq.pushFront(t)
}

// gosched gives the loop goroutine's processor to the program's other
// goroutines (off-loop work, plain Go code, other loops beyond
// GOMAXPROCS) when the loop has held it for its Gosched period, as a
// goroutine that blocks would, instead of holding it until Go preempts it
// (10 ms). now is the loop's clock; it returns the clock after the
// Gosched, or now if there was none. A loop locked to its thread
// (io_uring) never does it: a Gosched is two thread hand-offs there, and
// the program's other goroutines have a processor of their own beside it
// (loop.run reserves one when GOMAXPROCS is 1).
//
// While the awake loops of the process outnumber its processors, the
// loops must take turns at this grain: a loop off its processor cannot
// even see its events, so an I/O task on it waits for the periods of
// the loops ahead of it. The period is then always goschedEvery. Only
// while they do not can a long wait for the processor come from
// goroutines that never block (Go preempts them after 10 ms), and the
// period then grows to that wait, so that the loop keeps its share of the
// processor beside them; it shrinks back as Gosched gets cheap. (It once
// grew with more loops than cores too: each loop's longer period made the
// others wait longer, until every loop held its processor for 10 ms and
// an I/O task waited milliseconds for its loop's turn.)
func (l *loop) gosched(now int64) int64 {
	if l.locked || now-l.lastGosched < l.goschedPeriod {
		return now
	}
	l.obs.yielding.Store(true)
	runtime.Gosched()
	l.obs.yielding.Store(false)
	after := l.clock.Nanotime()
	switch wait := after - now; {
	case loopsOutnumberProcs():
		l.goschedPeriod = int64(goschedEvery)
	case wait > l.goschedPeriod:
		l.goschedPeriod = min(max(2*l.goschedPeriod, wait), int64(goschedEveryMax))
	default:
		l.goschedPeriod = max(l.goschedPeriod/2, int64(goschedEvery))
	}
	l.lastGosched = after
	return after
}

// awakeLoops counts the loops of every Run in the process that are not
// asleep (loop.setAwake).
var awakeLoops atomic.Int32

// loopsOutnumberProcs reports whether more loops are awake in the process
// than Go has processors for them (GOMAXPROCS less those reserved for
// Offload workers, which keep theirs busy).
func loopsOutnumberProcs() bool {
	return int(awakeLoops.Load()) > runtime.GOMAXPROCS(0)-int(procsReserved.Load())
}

// look collects what happened since the loop last looked (posts, ready
// fds, due timers, whether the batch lane is due) at now, and adapts the
// poll period: short after a look that woke a task, longer after each
// that found nothing.
func (l *loop) look(now int64) {
	wakes := l.wakes
	if l.inboxLen.Load() != 0 {
		l.drainInbox()
	}
	if l.fds.waiting > 0 {
		l.pollKernel(0)
	}
	if l.timers.len() > 0 {
		l.fireTimersAt(now)
	}
	l.checkBatchDue(now)
	l.lookWakes += l.wakes - wakes
	if l.wakes != wakes {
		l.pollPeriod = int64(pollPeriodMin)
	} else {
		l.pollPeriod = min(l.pollPeriod+l.pollPeriod/2, int64(pollPeriodMax))
	}
	l.lookedAt = now
}

// spendBudget takes one ready result (an Await of a settled promise, a channel
// operation or an I/O call that did not wait) from the running task's
// budget. It is not a cancellation point.
//
// A task that keeps finding results ready never suspends by itself, so
// the loop treats it as it treats a CPU-bound task at its Checkpoints
// (spendSlow), for the same reason: every so many ready results (a stride
// that adapts, as Checkpoint's does, to about one look per poll period of
// the task's time) it reads the clock, looks at the kernel and the timers
// when a look is due, and makes the task give way to the batch lane once
// it has held the loop for readySlice while interactive tasks wait and
// one of the loop's looks (at the kernel, the timers, the inbox) woke a
// task since it began, or for the switch interval while batch tasks
// wait. The budget bounds it in count too: after taskBudget ready results
// in one run it gives way (to the batch lane) whatever the clock says.
// (Tasks that the running task woke itself, the receivers of its sends,
// say, do not make it give way before its budget: that order does not
// depend on the clock, as tests and seeded Runs expect.)
func (t *Task) spendBudget() {
	l := t.loop
	if l.budget--; l.budget <= 0 {
		l.giveWayReady(t)
		return
	}
	if l.spLeft--; l.spLeft <= 0 {
		l.spendSlow(t)
	}
}

// readySlice is how long a task that keeps finding results ready (reads
// that find data, say) may hold its loop while interactive tasks wait:
// long enough for a busy connection to carry on with its batch of
// requests between two looks, short enough that a connection woken
// beside it waits microseconds, not the 61 resumptions of up to
// taskBudget results each that it once could (tens of milliseconds when
// every read found data).
const readySlice = 50 * time.Microsecond

// spendSlow is spend's slow path: see spend.
func (l *loop) spendSlow(t *Task) {
	now := l.clock.Nanotime()
	l.noteNow(now)
	if dt := now - l.spLast; l.spLast != 0 && dt > 0 {
		stride := int64(l.spStride) * l.pollPeriod / dt
		l.spStride = int32(min(max(stride, 1), maxCheckpointStride))
	} else if l.spStride < maxCheckpointStride {
		l.spStride = max(2*l.spStride, 1)
	}
	l.spLast = now
	l.spLeft = l.spStride

	// The task's slice: from its first slow look in this run (or its
	// resumption, for a task that reached a Checkpoint before).
	x := t.ensureExtra()
	if l.sliceOwner != t || l.sliceEpoch != l.epoch {
		l.sliceOwner, l.sliceEpoch, l.sliceStart = t, l.epoch, now
		l.sliceWakes, l.sliceBegan, l.sliceLooked = l.wakes, now, l.lookWakes
	}
	x.cpu += now - l.sliceStart
	l.sliceStart = now

	// A look is due once the task has held the loop for a poll period
	// since the loop last looked: counted from the start of this run too,
	// so that tasks that each answer one request and wait again, taking
	// turns, leave the looks to the loop between them (pick, every
	// pollEvery resumptions, and its sleeps); a look per poll period of
	// loop time cost those servers a tenth of their CPU. A task that
	// keeps finding results ready still looks within two poll periods.
	if now-max(l.lookedAt, l.sliceBegan) >= l.pollPeriod {
		// The loop still looks at events: progress, for the watchdog.
		l.look(now)
		l.obsCheckpoint()
		l.obsStackPoint(t, "a ready result (an I/O call that did not wait, a settled Await...)", 2)
	}
	switch {
	case l.runq.len() > 0 && l.lookWakes != l.sliceLooked && now-l.sliceBegan >= int64(readySlice),
		l.batchDue && l.batchq.len() > 0,
		x.cpu >= l.interval && l.batchq.len() > 0:
		l.giveWayReady(t)
	default:
		if after := l.gosched(now); after != now {
			l.sliceStart, l.spLast = after, after
		}
	}
}

// giveWayReady makes the running task t, which keeps finding results
// ready, give way: to the back of the batch lane, behind the tasks that
// events woke and the tasks that wait their turn there (other busy
// connections among them, which so take turns).
func (l *loop) giveWayReady(t *Task) {
	t.beforeSuspend()
	t.ensureExtra().cpu = 0
	l.readyBatch(t)
	l.obs.tr.why = whyBudget
	l.suspend(t)
}

// WithSwitchInterval sets how long a task may hold the loop at its
// Checkpoints while other tasks are runnable, before it must give way
// (default DefaultSwitchInterval, 5 ms). A shorter interval shares the
// loop among CPU-bound tasks more finely, at the cost of more switches;
// interactive tasks do not wait for it either way. d must be positive.
func WithSwitchInterval(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.err = errBadInterval
			return
		}
		o.interval = d
	}
}
