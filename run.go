package weft

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/weft-go/weft/internal/clock"
	"github.com/weft-go/weft/internal/coro"
	"github.com/weft-go/weft/internal/poller"
)

// Option configures Run.
type Option func(*options)

type options struct {
	ctx       context.Context
	backend   poller.Kind
	clock     clock.Clock
	interval  time.Duration
	layer     map[any]any // the layers' settings (layerOption)
	logger    *slog.Logger
	loggerSet bool
	err       error // a bad option; Run returns it
}

// WithContext makes ctx the parent of every task's Context: its values are
// visible to all tasks, and when ctx is cancelled, main is cancelled (and
// with it every task it started) with ctx's cause.
func WithContext(ctx context.Context) Option {
	return func(o *options) { o.ctx = ctx }
}

// WithVirtualTime runs the loop on a virtual clock that starts at start
// and moves only when every task waits: the loop then jumps to the next
// deadline instead of sleeping. Sleeps and timeouts take no real time, and
// a run is repeatable. While a task waits on an fd or off-loop work is
// pending, virtual time stands still until that completes.
func WithVirtualTime(start time.Time) Option {
	return func(o *options) { o.clock = clock.NewVirtual(start) }
}

// Run runs main as the first task of a new loop on the calling goroutine
// and returns when no task is left: main and every task it started, awaited
// or not, have finished, and no timer, fd wait or off-loop work remains.
// It returns main's value and error.
//
// Failures are never silent: the error of every task that failed (an error
// or a panic, but not a cancellation) and that no Await, All or Race
// returned to anyone is joined to main's error, so errors.Is and errors.As
// find it.
//
// If the tasks deadlock, Run returns a *DeadlockError naming them (see
// DeadlockError); it does not hang.
//
// Run must not be called from inside a task: it returns ErrNestedRun.
// Independent Runs may run in parallel on different goroutines.
func Run[T any](main func(t *Task) (T, error), opts ...Option) (T, error) {
	var zero T
	if main == nil {
		return zero, errors.New("weft: Run called with a nil function")
	}
	if coro.Running() {
		return zero, ErrNestedRun
	}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.err != nil {
		return zero, o.err
	}
	l, err := newLoop(o)
	if err != nil {
		return zero, err
	}
	c := newTask(l, &l.root.root, main, 0)
	l.main = &c.task
	l.ready(l.main)
	if stop := l.watchRunContext(); stop != nil {
		defer stop()
	}

	finished := false
	defer func() {
		if !finished {
			l.abort() // a Goexit is passing through
		}
	}()
	l.run()
	finished = true
	l.close()

	var errs []error
	v := c.promise.val
	if d := l.deadlock; d != nil && d.MainBlocked {
		v = zero
		errs = append(errs, d)
	} else {
		if err := c.promise.p.err; err != nil {
			errs = append(errs, err)
		}
		if d != nil {
			errs = append(errs, d)
		}
	}
	errs = append(errs, l.unobservedErrors()...)
	switch len(errs) {
	case 0:
		return v, nil
	case 1:
		return v, errs[0]
	}
	return v, errors.Join(errs...)
}

// watchRunContext cancels main when Run's context is cancelled.
func (l *loop) watchRunContext() (stop func() bool) {
	if l.ctx.Done() == nil {
		return nil
	}
	return context.AfterFunc(l.ctx, func() {
		cause := asCancellation(context.Cause(l.ctx))
		l.post(func() { l.cancel(l.main, cause) })
	})
}

// abort tears the loop down while a runtime.Goexit passes through Run: each
// task still suspended on a coroutine is unwound (its wait returns an
// error) so that no goroutine is left, and the loop is closed.
func (l *loop) abort() {
	l.aborted = true
	l.report.ended.Store(true) // no error will be returned: nothing to log either
	var busy []*coro.Coro
	l.walkTasks(func(t *Task) {
		if t.co != nil && t.co.Busy() {
			busy = append(busy, t.co)
		}
	})
	for _, c := range busy {
		c.Close()
	}
	l.close()
}
