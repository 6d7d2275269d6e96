package weft

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

// deadlockError describes the blocked tasks, in the order given.
func (rs *runState) deadlockError(blocked []*Task) *DeadlockError {
	d := &DeadlockError{MainBlocked: rs.main.state != stateDone}
	for _, t := range blocked {
		bt := BlockedTask{Name: t.name(), Func: t.funcName(), Started: t.spawnSite(), Op: "?", Waiting: "?",
			TaskName: t.givenName(), StartedBy: t.how.String()}
		if ws := t.extra.w; ws != nil {
			bt.Op = ws.op
			bt.Waiting = userSite(ws.pcs[:])
		}
		d.Blocked = append(d.Blocked, bt)
	}
	return d
}
