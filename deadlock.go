package weft

import "slices"

// onDeadlock handles a loop on which tasks are left but none can ever run
// again: every live task waits on a promise, and no timer, fd wait or
// off-loop work remains. It records a DeadlockError naming them and wakes
// each one with it, so that they unwind.
func (l *loop) onDeadlock() {
	var blocked []*Task
	l.walkTasks(func(t *Task) {
		if t.state == stateWaiting {
			blocked = append(blocked, t)
		}
	})
	if len(blocked) == 0 {
		panic("weft: internal error: deadlock with no blocked task")
	}
	slices.SortFunc(blocked, func(a, b *Task) int { return int(a.id) - int(b.id) })
	d := &DeadlockError{MainBlocked: l.main.state != stateDone}
	for _, t := range blocked {
		bt := BlockedTask{Name: t.name(), Func: t.funcName(), Started: t.spawnSite(), Op: "?", Waiting: "?"}
		if ws := t.x.w; ws != nil {
			bt.Op = ws.op
			bt.Waiting = userSite(ws.pcs[:])
		}
		d.Blocked = append(d.Blocked, bt)
	}
	if l.deadlock == nil {
		l.deadlock = d
	}
	for _, t := range blocked {
		l.interrupt(t, l.deadlock)
	}
}
