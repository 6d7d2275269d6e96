package weft

// Tracing: the core's records into internal/trace (see that package's
// documentation for the table of what is recorded where). Each loop holds
// a *wtrace.Buffer, nil while tracing is off: every hook is a nil test
// first, and reads the clock only when tracing is on. Timestamps are the
// loop clock's, so under WithVirtualTime the trace is in virtual time and
// a run repeats its trace exactly.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	wtrace "github.com/weft-go/weft/internal/trace"
)

// WithTrace records what the Run's loops do and writes it to w as one
// Chrome trace-event JSON document, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open as it is, and `weft trace FILE -o FILE.svg` draws:
// a track per loop with each task's slices (resumed, then suspended with
// the reason), spawns and wakes as arrows from the cause to the woken
// task, timers firing, polls of the kernel with their duration, tasks
// handed over between loops, and off-loop work on tracks of its own. A
// task's slices carry its name (SetName) or its function. Under
// WithVirtualTime the timestamps are virtual, so a repeatable run gives
// the same trace.
//
// A goroutine of the Run's writes to w as the events come (w need not be
// safe for concurrent use); the document is complete when Run returns. An
// error writing w is logged through the Run's logger. Recording costs the
// loop about 10 ns per event plus a clock read. A nil w makes Run return
// an error.
func WithTrace(w io.Writer) Option {
	return func(o *options) {
		if w == nil {
			o.err = errors.New("weft: WithTrace with a nil writer")
			return
		}
		o.obs.trace = w
	}
}

// WithFlightRecorder keeps the Run's trace events of roughly the last
// window in memory, in a ring shared by every Run that asks for one (the
// way Go's flight recorder does), for DebugHandler's /trace?seconds=N and
// WriteFlightRecord to write on demand. It costs what WithTrace costs on
// the loops, and up to 64 MB of memory. The first Run to ask sets the
// window, which does not shrink afterwards. window <= 0 panics with
// "weft:".
func WithFlightRecorder(window time.Duration) Option {
	if window <= 0 {
		panic("weft: WithFlightRecorder with a window that is not positive")
	}
	return func(o *options) { o.obs.flight = window }
}

// The process-wide ring of WithFlightRecorder.
var (
	flightMu  sync.Mutex
	flightRec *wtrace.Recorder // guarded by flightMu; nil until a Run asks
)

const flightMaxBytes = 64 << 20

func flightRecorder(window time.Duration) *wtrace.Recorder {
	flightMu.Lock()
	defer flightMu.Unlock()
	if flightRec == nil {
		flightRec = wtrace.NewRing(window, flightMaxBytes)
	}
	return flightRec
}

// ErrNoFlightRecorder is returned by WriteFlightRecord when no Run has
// used WithFlightRecorder.
var ErrNoFlightRecorder = errors.New("weft: no Run records a flight trace (see WithFlightRecorder)")

// WriteFlightRecord writes the events the flight recorder holds from the
// last d (all it holds if d <= 0) to w, as a trace-event JSON document
// like WithTrace's. It does not suspend: any goroutine may call it while
// Runs go on, and it does not stop the loops.
func WriteFlightRecord(w io.Writer, d time.Duration) error {
	if w == nil {
		return errors.New("weft: WriteFlightRecord with a nil writer")
	}
	flightMu.Lock()
	r := flightRec
	flightMu.Unlock()
	if r == nil {
		return ErrNoFlightRecorder
	}
	return r.WriteSnapshot(w, d)
}

// Reasons and sources, for the core's files.
const (
	whySpawned   = wtrace.Spawned
	whyPreempted = wtrace.Preempted
	whyBudget    = wtrace.Budget
	fromInbox    = wtrace.FromInbox
	fromTimer    = wtrace.FromTimer
)

// traceState is a loop's tracing state; loop-owned.
type traceState struct {
	b      *wtrace.Buffer // nil: tracing is off
	why    wtrace.Reason  // why the running task is about to give way while runnable (0: Yield)
	src    wtrace.Source  // what the loop itself is doing: the source of its wakes
	lanes  wtrace.Lanes
	ts     int64 // a timestamp read at a suspension, for the resumption that follows
	haveTs bool
}

// startTrace makes the Run's recorder and the loops' buffers if the
// options ask for them; it returns the function that closes them after
// the loops have ended.
func (rs *runState) startTrace(o *options) (stop func()) {
	var rec *wtrace.Recorder
	switch {
	case o.obs.trace != nil:
		rec = wtrace.NewStream(o.obs.trace)
	case o.obs.flight > 0:
		rec = flightRecorder(o.obs.flight)
	default:
		if rec = wtrace.Default(); rec == nil { // weft tour --trace
			return nil
		}
	}
	num := 1 // a stream holds one Run: the same program gives the same bytes
	if o.obs.trace == nil {
		num = rs.obs.num // a shared recorder holds them all
	}
	for _, l := range rs.loops {
		l.obs.tr.b = rec.NewBuffer(num, l.id)
	}
	return func() {
		if o.obs.trace == nil {
			for _, l := range rs.loops {
				l.obs.tr.b.Close()
			}
			return
		}
		if err := rec.Close(); err != nil && rs.logger != nil {
			rs.logger.LogAttrs(context.Background(), slog.LevelError, "weft: writing the trace failed", slog.Any("err", err))
		}
	}
}

// now returns a timestamp for a record.
func (tr *traceState) now(l *loop) int64 {
	if tr.haveTs {
		tr.haveTs = false
		return tr.ts
	}
	return l.clock.Nanotime()
}

// stamp returns a fresh timestamp, for any record but a resumption.
func (tr *traceState) stamp(l *loop) int64 {
	tr.haveTs = false
	return l.clock.Nanotime()
}

// traceSpawn records that t was started by its parent.
func (l *loop) traceSpawn(t *Task) {
	if tr := &l.obs.tr; tr.b != nil {
		tr.b.Spawn(tr.stamp(l), t.parent, t.id, t.job.funcPC())
	}
}

// traceResume records that the loop resumes t.
func (l *loop) traceResume(t *Task) {
	if tr := &l.obs.tr; tr.b != nil {
		tr.b.Resume(tr.now(l), t.id)
	}
}

// traceSuspend records that t gives up the loop, with its reason.
func (l *loop) traceSuspend(t *Task) {
	tr := &l.obs.tr
	why := tr.why
	tr.why = 0
	if tr.b == nil {
		return
	}
	if t.state == stateWaiting {
		switch t.waitKind {
		case waitPromise, waitMulti:
			why = wtrace.WaitPromise
		case waitTimer:
			why = wtrace.WaitTimer
		case waitFD:
			why = wtrace.WaitFD
		case waitPark:
			why = wtrace.WaitChannel
		case waitExternal:
			why = wtrace.WaitExternal
		}
	} else if why == 0 {
		why = wtrace.Yield
	}
	ts := l.clock.Nanotime()
	tr.b.Suspend(ts, t.id, why)
	tr.ts, tr.haveTs = ts, true
}

// traceFinished records the end of t.
func (l *loop) traceFinished(t *Task) {
	if tr := &l.obs.tr; tr.b != nil {
		ts := l.clock.Nanotime()
		tr.b.Suspend(ts, t.id, wtrace.Finished)
		tr.ts, tr.haveTs = ts, true
	}
}

// traceWake records that t, waiting, was made runnable: by the running
// task, or by the loop itself from its current source.
func (l *loop) traceWake(t *Task) {
	tr := &l.obs.tr
	if tr.b == nil {
		return
	}
	ts := tr.stamp(l)
	switch {
	case l.current != nil && l.current != t:
		tr.b.Wake(ts, l.current.id, t.id)
	case tr.src == wtrace.FromTimer:
		tr.b.TimerFired(ts, t.id)
	default:
		tr.b.WakeBy(ts, tr.src, t.id)
	}
}

// traceFrom sets the source of the loop's own wakes from now on.
func (l *loop) traceFrom(src wtrace.Source) { l.obs.tr.src = src }

// tracePollStart returns the start time of a poll of the kernel.
func (l *loop) tracePollStart() int64 { return l.clock.Nanotime() }

// tracePoll records a poll of the kernel that began at start, and returns
// when it ended.
func (l *loop) tracePoll(start int64, events int) (end int64) {
	tr := &l.obs.tr
	tr.src = wtrace.FromFD // the wakes that follow
	end = l.clock.Nanotime()
	l.obs.polls.Add(1)
	l.obs.pollNs.Add(end - start)
	if tr.b != nil {
		tr.haveTs = false
		tr.b.Poll(start, end, events)
	}
	return end
}

// traceSteal records that the loop took n tasks handed over by victim.
func (l *loop) traceSteal(victim, n int) {
	l.obs.received.Add(uint64(n))
	if tr := &l.obs.tr; tr.b != nil {
		tr.b.Steal(tr.stamp(l), victim, n)
	}
}

// traceOp is what tracing keeps of one piece of off-loop work.
type traceOp struct {
	on         bool
	lane       int
	start, end int64 // on the Run's clock, read by the worker
}

// traceExternal wraps fn, the off-loop work op, so that the worker reads
// the clock at its start and end, when tracing is on.
func (l *loop) traceExternal(op *extOp, fn func()) func() {
	tr := &l.obs.tr
	if tr.b == nil {
		return fn
	}
	op.tr = traceOp{on: true, lane: tr.lanes.Take()}
	clk := l.clock
	return func() {
		op.tr.start = clk.Nanotime()
		fn()
		op.tr.end = clk.Nanotime()
	}
}

// traceExternalDone records op, whose result has come back to the loop.
func (l *loop) traceExternalDone(op *extOp) {
	if tr := &l.obs.tr; tr.b != nil && op.tr.on {
		tr.b.Offload(op.tr.start, op.tr.end, op.t.id, op.tr.lane)
		tr.lanes.Put(op.tr.lane)
		tr.src = wtrace.FromOffload
	}
}

// traceName records t's new name.
func (l *loop) traceName(t *Task, name string) {
	if tr := &l.obs.tr; tr.b != nil {
		tr.b.SetName(tr.stamp(l), t.id, name)
	}
}

// tracePublish publishes the records so far to ring snapshots, before the
// loop sleeps.
func (l *loop) tracePublish() {
	if tr := &l.obs.tr; tr.b != nil {
		tr.b.Publish()
		tr.haveTs = false
	}
}
