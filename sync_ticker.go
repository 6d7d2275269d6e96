package weft

// Tickers. A ticker is a weak timer on its loop's heap that re-arms itself
// every period and offers the time to a channel of capacity 1 with
// TrySend: a tick that finds the previous one still unread is dropped, as
// time.Ticker drops ticks for a slow receiver. Deadlines advance by whole
// periods from the start, so ticks do not drift; periods missed while the
// loop was busy are skipped.
//
// The ticker's timer is weak (see timers.go): it does not keep the loop
// from reporting a deadlock by itself. The channel is a keepAliveSource
// while the ticker runs, so a task waiting for a tick is not deadlocked.
//
// A ticker stops when its channel is closed (from any goroutine: the stop
// is posted to the ticker's loop) or when the task that made it finishes
// (a finish hook, which closes the channel). Ownership: the timer and the
// stopped flag belong to the loop that made the ticker (tk.l) and are
// touched only there; the finish hook belongs to the task that made it,
// and so to whichever loop owns that task now (Task.onOwner). The task
// may move to another loop (its Conn lives there, say) while the ticker
// runs: the ticks still come from tk.l, through the channel, and the stop
// still happens on tk.l.

import "time"

// Ticker returns a channel that receives the loop's time (t.Now()) once
// per period d, measured on the loop's clock, so virtual time drives it
// too. Ticker does not suspend and is not a cancellation point. The
// channel holds one tick: a consumer slower than d gets dropped ticks, not
// a backlog, as with time.Ticker.
//
// The ticker runs until its channel is closed (c.Close(), from any task or
// goroutine) or until t finishes, which closes the channel: receivers then
// get io.EOF. While it runs, a task waiting on the channel is not
// deadlocked; the ticker alone does not keep Run alive, though. d must be
// positive.
func (t *Task) Ticker(d time.Duration) *Chan[time.Time] {
	t.check("Ticker")
	if d <= 0 {
		panic("weft: Ticker with a non-positive period")
	}
	l := t.loop
	c := NewChan[time.Time](1)
	openHandOvers(l)
	c.own.Store(l) // the ticks come from this loop: it owns the channel
	tk := &ticker{c: c, l: l, owner: t, period: int64(d)}
	tk.tm = timer{index: -1, weak: true, fn: tk.fire}
	tk.tm.when = l.deadline(tk.period)
	l.timers.push(&tk.tm)
	tk.hook.fn = c.Close // runs on the task's loop, which may not be l: closed stops on l
	t.onFinish(&tk.hook)
	c.keep = true
	c.onClose = tk.closed
	return c
}

type ticker struct {
	c       *Chan[time.Time]
	l       *loop // owns tm and stopped
	owner   *Task // the task that made it: its loop owns hook
	period  int64
	tm      timer
	hook    finishHook
	stopped bool
}

// fire offers a tick and re-arms the timer, on the loop.
func (tk *ticker) fire() {
	if tk.stopped {
		return
	}
	l := tk.l
	now := l.clock.Nanotime()
	tk.c.trySend(l.clock.Now(), l, true)
	next := tk.tm.when + tk.period
	if next <= now {
		next += ((now-next)/tk.period + 1) * tk.period // skip the periods missed
	}
	tk.tm.when = next
	l.timers.push(&tk.tm)
}

// stop removes the timer, on tk.l.
func (tk *ticker) stop() {
	if tk.stopped {
		return
	}
	tk.stopped = true
	tk.l.timers.remove(&tk.tm)
}

// closed is the channel's onClose (any goroutine): it stops the ticker on
// its loop and drops the finish hook on its task's.
func (tk *ticker) closed() {
	tk.l.runOn(tk.stop)
	tk.owner.onOwner(tk.hook.remove)
}
