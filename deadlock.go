package weft

import "runtime"

// onDeadlock handles a loop (the only one of its Run) on which tasks are
// left but none can ever run again: every live task waits on a promise, a
// channel, a lock..., and no timer, fd wait or off-loop work remains. It
// records a DeadlockError naming them and wakes each one with it, so that
// they unwind. (With several loops, the last idle loop does this for all:
// runState.onDeadlockLocked.)
func (l *loop) onDeadlock() {
	rs := l.rs
	blocked := rs.blockedTasks()
	if len(blocked) == 0 {
		panic("weft: internal error: deadlock with no blocked task")
	}
	rs.deadlock.CompareAndSwap(nil, rs.deadlockError(blocked))
	d := rs.deadlock.Load()
	for _, t := range blocked {
		l.interrupt(t, d)
	}
}

// A goroutine (a channel's SendWait, say) may satisfy a task that is
// parked on an object at any moment, under the object's lock, and post
// the task's wake to its loop right after. A loop that looked between the
// two would find the task parked with nothing left to wake it (the
// goroutine no longer waits on the object, the wake is not in the inbox
// yet), report a deadlock and unwind the task, and what the goroutine
// handed over (a value it was told was received) would be lost. So the
// two sides meet in two atomics, each writing one and then reading the
// other, so that at least one sees the other:
//
//   - the loop, before it reports, announces the report (deadlocking)
//     and then looks for wakes in flight and posts pending: if there is
//     one, it withdraws the announcement and goes on waiting;
//   - the goroutine, before it claims a parked task (under the object's
//     lock), counts its wake as in flight and then looks for an
//     announcement: if there is one, it claims nothing, and either waits
//     for the decision and starts over, or, the Run being deadlocked,
//     leaves the task to be unwound. Otherwise it hands over, unlocks,
//     posts the wake, and only then uncounts it (releaseWake).

// confirmDeadlock is called by the loop that found every task of the Run
// blocked, before it reports: false means a wake is on its way after all.
// Once confirmed, the announcement stays.
func (rs *runState) confirmDeadlock() bool {
	rs.deadlocking.Store(true)
	if rs.wakesInFlight.Load() == 0 && !rs.postsPending() {
		return true
	}
	rs.deadlocking.Store(false)
	return false
}

// postsPending reports whether some loop has posts it has not run.
func (rs *runState) postsPending() bool {
	for _, l := range rs.loops {
		if l.inboxLen.Load() != 0 {
			return true
		}
	}
	return false
}

// wakeClaim is what claimWake found.
type wakeClaim uint8

const (
	wakeHeld wakeClaim = iota // the wake is counted in flight: hand over, post, then releaseWake
	wakeBusy                  // the Run is deciding whether it is deadlocked: awaitDecision, then start over
	wakeDead                  // the Run is deadlocked: its parked tasks are being unwound; claim none
)

// claimWake is for a plain goroutine about to satisfy a task of rs parked
// on an object, under the object's lock (see above).
func (rs *runState) claimWake() wakeClaim {
	rs.wakesInFlight.Add(1)
	if !rs.deadlocking.Load() {
		return wakeHeld
	}
	rs.wakesInFlight.Add(-1)
	if rs.deadlock.Load() != nil {
		return wakeDead
	}
	return wakeBusy
}

// releaseWake ends a wakeHeld claim, once the wake is posted.
func (rs *runState) releaseWake() { rs.wakesInFlight.Add(-1) }

// awaitDecision waits, on a plain goroutine holding no lock, until rs has
// decided whether it is deadlocked (a moment: the loop is building its
// report or has found a wake on its way).
func (rs *runState) awaitDecision() {
	for rs.deadlocking.Load() && rs.deadlock.Load() == nil {
		runtime.Gosched()
	}
}

// deadlockError describes the blocked tasks, in the order given.
func (rs *runState) deadlockError(blocked []*Task) *DeadlockError {
	d := &DeadlockError{MainBlocked: rs.main.state != stateDone}
	for _, t := range blocked {
		bt := BlockedTask{Name: t.name(), Func: t.funcName(), Started: t.spawnSite(), Op: "?", Waiting: "?",
			TaskName: t.givenName(), StartedBy: t.how.String()}
		if r := t.obs.rec.Load(); r != nil {
			r.mu.Lock()
			switch r.w.kind {
			case waitPromise, waitMulti, waitPark, waitExternal: // noteWaitSite's
				bt.Op = r.w.op
				bt.Waiting = userSite(r.w.pcs[:])
			}
			r.mu.Unlock()
		}
		d.Blocked = append(d.Blocked, bt)
	}
	return d
}
