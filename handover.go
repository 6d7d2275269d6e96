package weft

// Several loops: handing tasks over, going idle, and what the last idle
// loop decides (DESIGN.md, "Several loops"). Nothing here runs with one
// loop.
//
// A loop's run queue is its own: no other loop reads or writes it. Work
// moves between loops by hand-over: a loop that has surplus while another
// sleeps hungry gives it the older half of its queue (shed, at every pick
// and at every slow Checkpoint, so within microseconds); a task that must
// wait on an fd registered elsewhere asks to move and is sent once it has
// switched out (Task.moveTo, loop.resume). Either way the task is runnable,
// never running, when its loop changes; its t.loop is written under the
// run lock, and it reaches the other loop through that loop's inbox.

import "slices"

// maxShed bounds a hand-over, and how far into the queue shed looks, so
// that a loop with a long queue does not pay for it at every pick.
const maxShed = 128

// movable reports whether t, runnable on l, may be handed to another loop.
// The driver is not (its coroutine runs the scheduler): it leaves by
// itself when shed sends it (sendDriver).
func (l *loop) movable(t *Task) bool {
	return !t.local && t.co != nil && t != l.driver && t.pin == 0
}

// shed hands about half of l's work, the older movable runnable tasks, to
// a hungry loop, if some loop sleeps with nothing to run (Go's
// wakep, done by the busy loop). running is the task that holds l at a
// slow Checkpoint (it counts: one queued task is then already surplus),
// nil at a pick (the next task stays: a queue of one is not).
//
// If nothing queued may move, the driver goes if it may (it leaves its
// driving: sendDriver); else, if running may, shed returns the hungry
// loop it claimed: running is to go there itself, leaving the loop to what
// must stay (Local tasks, pinned ones). Otherwise it returns nil.
func (l *loop) shed(running *Task) (moveRunning *loop) {
	if l.shedSkip > 0 {
		l.shedSkip--
		return nil
	}
	queued := l.runq.len() + l.batchq.len()
	others := queued
	if running != nil {
		others++
	}
	if others < 2 {
		return nil
	}
	to := l.rs.takeHungry(l)
	if to == nil {
		return nil
	}
	want := min(others/2, maxShed)
	var moved []*Task
	transient := false  // something may move soon: a task not yet started, the driver
	driverFree := false // the driver is queued and may go (sendDriver)
	for _, q := range []*queue[*Task]{&l.runq, &l.batchq} {
		n := q.len()
		if scan := min(n, 2*maxShed); want > len(moved) && scan > 0 {
			var keep []*Task
			blocked := false
			for i := 0; i < scan; i++ {
				t, _ := q.pop()
				if t.co == nil {
					// Never started: it stays, and so does every task behind
					// it, which may be the task that started it (Go's parent
					// goes on only after its child has started).
					blocked, transient = true, true
				}
				if t == l.driver {
					transient = true
					driverFree = !blocked // not queued behind a task it started
				}
				if !blocked && len(moved) < want && l.movable(t) {
					moved = append(moved, t)
				} else {
					keep = append(keep, t)
				}
			}
			// Put back what stays, ahead of the part not scanned.
			for i := len(keep) - 1; i >= 0; i-- {
				q.pushFront(keep[i])
			}
		}
	}
	if len(moved) > 0 {
		l.send(to, moved)
		return nil
	}
	if running == nil && driverFree && l.sendDriver(to) {
		// At a pick the driver, if there is one, is the caller: it can
		// stop driving now (at a Checkpoint it is under the running task).
		return nil
	}
	if running != nil && l.movable(running) {
		return to
	}
	// Nothing here may move now. If that is for lasting reasons (tasks
	// inside an fd operation, Local ones), look again only once the part
	// of the queue just scanned has run, instead of scanning it at every
	// pick (with 1000 connections that scan was a sixth of the CPU); a
	// task about to start or a driver about to stop driving may move at
	// the next pick.
	if !transient {
		l.shedSkip = min(queued, 2*maxShed)
	}
	to.wakeHungryAgain()
	return nil
}

// sendDriver sends the driver to loop to, if it is queued and may move
// otherwise: it is taken out of the queue and marked to move, and the
// next pick returns nil to it, so that it stops driving, switches out,
// and its resumer (the loop goroutine) sends it (loop.resume). It reports
// whether it did.
func (l *loop) sendDriver(to *loop) bool {
	d := l.driver
	if d == nil || d.state != stateRunnable || d.local || d.pin != 0 || d.moveTo != nil {
		return false
	}
	found := false
	for _, q := range []*queue[*Task]{&l.runq, &l.batchq} {
		for i, n := 0, q.len(); i < n; i++ {
			t, _ := q.pop()
			if t == d && !found {
				found = true
				continue
			}
			q.push(t)
		}
	}
	if !found {
		return false
	}
	d.moveTo = to
	return true
}

// send hands the runnable tasks ts, which have switched out, to loop to.
func (l *loop) send(to *loop, ts []*Task) {
	rs := l.rs
	rs.lock()
	for _, t := range ts {
		t.loop = to
	}
	rs.unlock()
	to.post(func() {
		to.traceSteal(l.id, len(ts))
		for _, t := range ts {
			if t.extra != nil && t.extra.batch {
				to.batchq.push(t)
			} else {
				to.runq.push(t)
			}
		}
	})
}

// homeFor returns the loop an accepted connection is registered on: the
// next loop, round-robin, so that one accept loop spreads its connections
// (and, once they first wait, the tasks that serve them) over all loops.
func (rs *runState) homeFor(l *loop) *loop {
	if !rs.multi {
		return l
	}
	return rs.loops[int(rs.nextFD.Add(1))%len(rs.loops)]
}

// migrate moves the running task t to loop to: it switches out, runnable,
// and its resumer sends it there (loop.resume); it returns once t runs on
// to. what names the object that made the move necessary, for the panic
// of a Local task, which never leaves its loop.
func (t *Task) migrate(to *loop, what string) error {
	if t.local {
		panic("weft: a Local task waited on " + what + " registered on another loop; a Local task never leaves its loop")
	}
	t.beforeSuspend()
	l := t.loop
	t.moveTo = to
	t.state = stateRunnable
	t.waitKind = waitNone
	l.obsRunnable(t)
	// Pinned in transit: to must run t before it may hand t on, or t
	// would resume on a third loop believing it had arrived.
	t.pin++
	l.suspend(t)
	t.pin--
	return t.takeWakeErr()
}

// takeHungry claims a loop other than l that sleeps with nothing to run,
// or returns nil.
func (rs *runState) takeHungry(l *loop) *loop {
	for i := 1; i < len(rs.loops); i++ {
		to := rs.loops[(l.id+i)%len(rs.loops)]
		if to.hungry.Load() && to.hungry.CompareAndSwap(true, false) {
			rs.hungry.Add(-1)
			return to
		}
	}
	return nil
}

// wakeHungryAgain gives back a hungry loop claimed for nothing.
func (l *loop) wakeHungryAgain() {
	if l.hungry.CompareAndSwap(false, true) {
		l.rs.hungry.Add(1)
	}
}

// loopSummary is what an idle loop publishes for the last one to look at
// (run lock): while idle it runs no task, so its live count cannot change;
// and the last idle loop concludes something only when no loop has an
// event source left that could change the rest.
type loopSummary struct {
	live      int
	external  int
	fds       int
	nextTimer int64 // the earliest timer's deadline, or -1
	strong    bool  // a timer that is not weak is pending (timers.go)
	ioTimers  bool  // an I/O deadline's timer is pending (blockVirtualIO)
	keepAlive bool  // a parked task's source may be satisfied from outside
}

// idleMulti is run's idle step with several loops: mark the loop idle, let
// the last idle loop decide for all, sleep, and report whether the Run is
// over.
func (l *loop) idleMulti() (stop bool) {
	rs := l.rs
	if rs.aborting.Load() {
		l.aborted = true
		return true
	}
	rs.mu.Lock()
	if rs.done {
		rs.mu.Unlock()
		return true
	}
	if l.inboxLen.Load() != 0 || l.runq.len()+l.batchq.len() > 0 {
		rs.mu.Unlock()
		return false
	}
	l.summary = loopSummary{live: l.live, external: l.external, fds: l.fds.waiting, nextTimer: -1,
		strong: l.timers.strong() > 0, keepAlive: l.parkedKeepAliveLocked(), ioTimers: l.ioTimers > 0}
	if tm := l.timers.peek(); tm != nil {
		l.summary.nextTimer = tm.when
	}
	rs.idle++
	if rs.idle == len(rs.loops) {
		rs.allIdle(l)
	}
	stop = rs.done
	grace, graceEpoch := rs.graceNext, rs.wakeEpoch
	if rs.graceLoop != l {
		grace = -1
	}
	rs.graceLoop = nil
	rs.mu.Unlock()
	if stop {
		return true
	}
	l.hungry.Store(true)
	rs.hungry.Add(1)
	if grace >= 0 {
		l.blockVirtualIOMulti(grace, graceEpoch)
	} else {
		l.block()
	}
	if l.hungry.CompareAndSwap(true, false) {
		rs.hungry.Add(-1)
	}
	rs.mu.Lock()
	rs.idle--
	rs.wakeEpoch++
	stop = rs.done
	rs.mu.Unlock()
	if rs.aborting.Load() {
		l.aborted = true
		return true
	}
	return stop
}

// allIdle decides, when every loop is idle (run lock held), whether the
// Run is over, deadlocked, or (virtual time) due to jump to its next timer.
func (rs *runState) allIdle(last *loop) {
	live, external, fds, keep, strong, ioTimers := 0, 0, 0, false, false, false
	next := int64(-1)
	for _, l := range rs.loops {
		if l.inboxLen.Load() != 0 {
			return // a post is on its way: that loop will wake
		}
		s := &l.summary
		live += s.live
		external += s.external
		fds += s.fds
		keep = keep || s.keepAlive
		strong = strong || s.strong
		ioTimers = ioTimers || s.ioTimers
		if s.nextTimer >= 0 && (next < 0 || s.nextTimer < next) {
			next = s.nextTimer
		}
	}
	switch {
	case live == 0 && external == 0:
		rs.done = true
		for _, l := range rs.loops {
			l.wakeUp()
		}
	case external > 0 || fds > 0:
		// Something outside the loops will wake one of them. Under virtual
		// time with I/O deadlines pending, as with one loop
		// (blockVirtualIO): the last idle loop gives the I/O a moment of
		// real time to come first, then time jumps to the earliest timer.
		if rs.clock.Virtual() && ioTimers && next >= 0 {
			rs.graceNext, rs.graceLoop = next, last
		}
	case next >= 0 && (strong || keep):
		// A timer is work to wait for, or feeds a task kept alive (a
		// Ticker's, which is weak). As with one loop, a keep-alive source
		// does not hold virtual time still.
		if rs.clock.Virtual() {
			// Every loop waits on timers only: time jumps to the earliest.
			rs.advanceLocked(next)
		}
		// With the real clock each loop sleeps until its own timer.
	case keep:
		// Something outside the loops may satisfy a parked task.
	default:
		if rs.confirmDeadlock() { // not if a goroutine's wake is on its way (deadlock.go)
			rs.onDeadlockLocked()
		}
	}
}

// advanceLocked moves virtual time to next and has the loops whose timers
// are then due fire them (run lock held, every loop idle).
func (rs *runState) advanceLocked(next int64) {
	rs.clock.AdvanceTo(next)
	for _, l := range rs.loops {
		if s := l.summary; s.nextTimer >= 0 && s.nextTimer <= next {
			l.post(func() { l.fireTimers() })
		}
	}
}

// blockVirtualIOMulti is blockVirtualIO for the last idle loop of several,
// which allIdle chose to hold the grace: it sleeps for the grace, and if no
// loop woke meanwhile (wakeEpoch unchanged) time jumps to next.
func (l *loop) blockVirtualIOMulti(next int64, epoch uint64) {
	rs := l.rs
	grace := virtualIOGrace
	l.obsSleep()
	l.countAwake(-1)
	l.parkedInGo.Store(false)
	l.sleeping.Store(true)
	if l.inboxLen.Load() != 0 {
		grace = 0
	}
	l.pollKernel(grace)
	l.sleeping.Store(false)
	l.countAwake(1)
	if l.runq.len()+l.batchq.len() > 0 {
		return // I/O came first, on this loop
	}
	rs.mu.Lock()
	if rs.wakeEpoch == epoch && rs.idle == len(rs.loops) && !rs.postsPendingLocked() && !rs.done {
		rs.advanceLocked(next)
	}
	rs.mu.Unlock()
}

// postsPendingLocked reports whether some loop has posts it has not run.
func (rs *runState) postsPendingLocked() bool {
	for _, l := range rs.loops {
		if l.inboxLen.Load() != 0 {
			return true
		}
	}
	return false
}

// onDeadlockLocked reports a deadlock spanning the loops (run lock held,
// every loop idle with no event source left): it names every blocked task
// of every loop, then each loop unwinds its own.
func (rs *runState) onDeadlockLocked() {
	blocked := rs.blockedTasks()
	if len(blocked) == 0 {
		panic("weft: internal error: deadlock with no blocked task")
	}
	d := rs.deadlockError(blocked)
	rs.deadlock.CompareAndSwap(nil, d)
	d = rs.deadlock.Load()
	for _, l := range rs.loops {
		l.post(func() { l.unwindDeadlocked(d) })
	}
}

// blockedTasks lists the waiting tasks, in spawn order (run lock held, or
// one loop).
func (rs *runState) blockedTasks() []*Task {
	var blocked []*Task
	rs.walkTasks(func(t *Task) {
		if t.state == stateWaiting {
			blocked = append(blocked, t)
		}
	})
	slices.SortFunc(blocked, func(a, b *Task) int { return int(a.id) - int(b.id) })
	return blocked
}

// unwindDeadlocked wakes l's own blocked tasks with the deadlock error.
func (l *loop) unwindDeadlocked(d *DeadlockError) {
	var mine []*Task
	l.rs.lock()
	l.rs.walkTasks(func(t *Task) {
		if t.loop == l && t.state == stateWaiting {
			mine = append(mine, t)
		}
	})
	l.rs.unlock()
	for _, t := range mine {
		l.interrupt(t, d)
	}
}
