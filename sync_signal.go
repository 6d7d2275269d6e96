package weft

// Signals delivered to tasks. The process has one watch per signal that
// some task subscribed to: a Go channel registered with os/signal.Notify
// for that signal alone, and a goroutine that forwards each arrival to
// every subscribed weft channel with TrySend (a subscriber whose buffer is
// full misses it, as os/signal's own channels do). When the last
// subscription to a signal ends, the watch calls signal.Stop, which gives
// the signal its default behaviour back unless other code of the process
// still asked for it, and its goroutine ends before the unsubscribe
// returns. One watch per signal, rather than one for all, lets each signal
// be given back on its own: signal.Stop applies to a channel's every
// signal.
//
// A subscribed channel is a keepAliveSource (a signal may come at any
// time), so a task waiting for a signal is not deadlocked. The
// subscription ends when the channel is closed or when the task that made
// it finishes.

import (
	"os"
	"os/signal"
	"slices"
	"sync"
)

var sigReg struct {
	mu      sync.Mutex
	watches map[os.Signal]*sigWatch // guarded by mu
}

// sigWatch forwards one signal to its subscribers.
type sigWatch struct {
	in   chan os.Signal     // registered with signal.Notify
	subs []*Chan[os.Signal] // guarded by sigReg.mu
	stop chan struct{}      // closed to end the goroutine
	done chan struct{}      // closed when the goroutine has ended
}

func (w *sigWatch) forward() {
	defer close(w.done)
	for {
		select {
		case s := <-w.in:
			sigReg.mu.Lock()
			subs := slices.Clone(w.subs)
			sigReg.mu.Unlock()
			for _, c := range subs {
				c.TrySend(s)
			}
		case <-w.stop:
			return
		}
	}
}

// Signal subscribes to the given signals of the process and returns the
// channel they are delivered on: each arrival of one of them goes to
// every channel subscribed to it (a channel whose buffer, one per signal,
// is full misses it). It does not suspend and is not a cancellation
// point. While subscribed, the signals no longer have their default
// effect (SIGINT no longer ends the program, say).
//
// A task waiting on the channel is not deadlocked: a signal may come at
// any time. Closing the channel (from any task or goroutine) ends the
// subscription, as does the end of task t, which closes the channel;
// when no subscription to a signal is left, its default behaviour is
// restored (unless other code of the process asked for it with
// os/signal). Signal panics when given no signal or a nil one.
func Signal(t *Task, sigs ...os.Signal) *Chan[os.Signal] {
	t.check("Signal")
	if len(sigs) == 0 {
		panic("weft: Signal called with no signal")
	}
	var uniq []os.Signal
	for _, s := range sigs {
		if s == nil {
			panic("weft: Signal called with a nil signal")
		}
		if !slices.Contains(uniq, s) {
			uniq = append(uniq, s)
		}
	}
	c := NewChan[os.Signal](len(uniq))
	sub := &sigSub{c: c, sigs: uniq, owner: t}
	c.keep = true
	sub.hook.fn = c.Close
	t.onFinish(&sub.hook)
	c.onClose = sub.closed
	subscribe(c, uniq)
	return c
}

// sigSub is one Signal channel's subscription. The finish hook belongs
// to the task that subscribed, and so to whichever loop owns that task now
// (the task may move while subscribed: Task.onOwner).
type sigSub struct {
	c     *Chan[os.Signal]
	sigs  []os.Signal
	owner *Task
	hook  finishHook
}

// closed is the channel's onClose (any goroutine): it unsubscribes, and
// drops the finish hook on the owner's loop.
func (s *sigSub) closed() {
	unsubscribe(s.c, s.sigs)
	s.owner.onOwner(s.hook.remove)
}

func subscribe(c *Chan[os.Signal], sigs []os.Signal) {
	sigReg.mu.Lock()
	defer sigReg.mu.Unlock()
	if sigReg.watches == nil {
		sigReg.watches = map[os.Signal]*sigWatch{}
	}
	for _, s := range sigs {
		w := sigReg.watches[s]
		if w == nil {
			w = &sigWatch{in: make(chan os.Signal, 1), stop: make(chan struct{}), done: make(chan struct{})}
			sigReg.watches[s] = w
			signal.Notify(w.in, s)
			go w.forward()
		}
		w.subs = append(w.subs, c)
	}
}

// unsubscribe ends c's subscription; it returns once the goroutine of
// every watch it ended has finished.
func unsubscribe(c *Chan[os.Signal], sigs []os.Signal) {
	var ended []*sigWatch
	sigReg.mu.Lock()
	for _, s := range sigs {
		w := sigReg.watches[s]
		if w == nil {
			continue
		}
		if i := slices.Index(w.subs, c); i >= 0 {
			w.subs = slices.Delete(w.subs, i, i+1)
		}
		if len(w.subs) == 0 {
			signal.Stop(w.in)
			close(w.stop)
			delete(sigReg.watches, s)
			ended = append(ended, w)
		}
	}
	sigReg.mu.Unlock()
	for _, w := range ended {
		<-w.done // it only forwards: it ends at once
	}
}
