package weft

// The watchdog: a goroutine beside a Run's loops that notices a task
// holding its loop too long without suspending or reaching a Checkpoint.
//
// It never needs the loop, and it never stops the world. Every loop
// publishes a switch word at each resumption, and counts its slow
// Checkpoints and its slow looks at ready results (observe.go); the
// watchdog samples them every quarter of its limit, and a word that names
// a task and has not moved for the limit is an episode. It reports an
// episode once, at Warn through the Run's logger: the task's name, id,
// function and spawn site, how long it has held the loop, and the likely
// cause with what to do. The cause comes from the process's CPU time
// over the episode (getrusage): a task that holds its loop without using
// the CPU is blocked in a call outside weft (a Go channel or lock,
// time.Sleep, Go's network I/O, a blocking system call); one that uses a
// whole CPU computes. The task's stack follows in a second record, taken
// by the task itself, from its own goroutine, when it next reaches a
// suspension point, a Checkpoint, a ready result or its end: the cost of
// one stack, whatever the number of tasks. (A dump of every goroutine,
// which once gave the stack at once, stops the world for as long as it
// takes to format them all: seconds with 100,000 tasks.)
//
// A blocking call is reported sooner: a word unchanged over two samples
// (held for a quarter of the limit) while the process used almost no CPU
// is reported then, with the advice to run the call through Blocking, once
// per task function per Run. A loop whose goroutine waits for a processor
// in a Gosched of its own (more goroutines than GOMAXPROCS want one) is
// not held by its task, and is reported as such.
//
// While every loop of the Run sleeps, nothing can hold one, and the
// watchdog sleeps too, until a loop wakes (runObs.waitAwake): an idle Run
// costs no timer ticks.

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"time"
)

// DefaultWatchdog is the watchdog's limit when WithWatchdog is not given.
const DefaultWatchdog = 100 * time.Millisecond

// WithWatchdog sets how long a task may hold its loop without reaching a
// suspension point or a Checkpoint before the Run reports it (the default
// is DefaultWatchdog, 100 ms; 0 turns the watchdog off). A report is a
// Warn record through the Run's logger (see WithLogger) with the task's
// name, id, function and spawn site, how long so far, and the likely
// cause (CPU work without Checkpoint, or a blocking call outside weft: a
// Go channel or lock, time.Sleep, Go's network I/O, a blocking system
// call) with what to do (for the blocking calls: run them through
// Blocking); it comes once per episode. A second record follows when the
// task lets go of its loop, with how long it held it and its stack at
// that point (the task records it itself: no goroutine dump, no
// stop-the-world). A task found blocked while holding its loop is
// reported as soon as it has held it for a quarter of the limit (once per
// task function), since a blocking call made from a task holds up the
// loop however short it is; calls shorter than that are not seen. The
// watchdog is a goroutine of the Run's own, which ends with it and sleeps
// while every loop does; it never needs the loops, and costs them one
// atomic store per task switch. With WithLogger(nil) there is no
// watchdog. d < 0 panics with "weft:".
func WithWatchdog(d time.Duration) Option {
	if d < 0 {
		panic("weft: WithWatchdog with a negative limit")
	}
	return func(o *options) {
		o.obs.watchdog = d
		o.obs.watchdogSet = true
	}
}

// watchdog is a Run's watchdog goroutine.
type watchdog struct {
	rs    *runState
	limit time.Duration
	stop  chan struct{}
	done  chan struct{}
	first *time.Timer // starts the goroutine at the first sample (see startWatchdog)

	// On the watchdog's goroutine only.
	early map[uintptr]bool // functions reported early (a blocking call), once each
	load  procLoad         // the process's load at this sample, once read
}

// procLoad is what the process's threads had done at a moment
// (readProcLoad: obs_cpu_*.go).
type procLoad struct {
	at   time.Time
	cpu  time.Duration // CPU time used so far
	wait time.Duration // time spent runnable, waiting for a CPU, so far (Linux; else 0)
	ok   bool          // cpu is known
}

// Thresholds on the process's use of the CPU over an episode, in CPUs,
// beyond one per other loop awake: a task that holds its loop while the
// process uses less than blockedCPU (and, counting the time its threads
// waited for a CPU, less than busyCPU) waits in a blocking call; one
// that uses at least blockedCPU and, with the wait, busyCPU computes (on
// a machine overloaded three times over a computing thread still gets a
// third of a CPU, and waits for the rest). The wait alone says nothing:
// every thread that wakes on a loaded machine waits (Go's sysmon, a
// timer), whether the task computes or not; below idleCPU a task waits
// whatever the wait says (a computing thread gets a tenth of a CPU only
// beside twenty runnable threads a core).
const (
	// minLoadWindow is the shortest window that says anything: on a
	// loaded machine the kernel can leave a computing thread off every
	// CPU for a few ticks (4 ms each at HZ=250). Shorter ones (a limit
	// under 40 ms) give the undecided cause.
	minLoadWindow = 20 * time.Millisecond

	idleCPU    = 0.1
	blockedCPU = 0.3
	busyCPU    = 0.7
)

func init() {
	runObservers = append(runObservers, func(rs *runState, o *options) func() {
		if wd := rs.startWatchdog(o); wd != nil {
			return wd.end
		}
		return nil
	})
}

// startWatchdog starts rs's watchdog if its options ask for one; stop it
// with its end method.
func (rs *runState) startWatchdog(o *options) *watchdog {
	limit := DefaultWatchdog
	if o.obs.watchdogSet {
		limit = o.obs.watchdog
	}
	if limit <= 0 || rs.logger == nil {
		return nil
	}
	wd := &watchdog{rs: rs, limit: limit, stop: make(chan struct{}), done: make(chan struct{})}
	// Its goroutine starts when the first sample is due: a Run shorter
	// than a sampling period (a quarter of the limit) starts none, and an
	// empty Run costs a timer rather than a goroutine start and the wake of
	// a thread for it.
	wd.first = time.AfterFunc(wd.period(), wd.run)
	return wd
}

// period is the time between two samples.
func (wd *watchdog) period() time.Duration { return max(wd.limit/4, time.Millisecond) }

// end stops the watchdog and waits for its goroutine, if it started, to
// return.
func (wd *watchdog) end() {
	close(wd.stop)
	if wd.first.Stop() {
		return // it never started
	}
	<-wd.done
}

// loopWatch is the watchdog's view of one loop.
type loopWatch struct {
	word     uint64    // the switch word last seen
	cps      uint32    // ... and the count of slow Checkpoints and looks
	since    time.Time // when it was first seen
	load     procLoad  // the process's load at the first sample that found it unchanged
	reported bool      // this episode has been reported
	asked    uint32    // the task whose stack the report asked for (0: none)
	held     time.Time // ... and since when it held the loop
}

// run samples the loops every period until end, from the first period's
// end (it is time.AfterFunc's function). While every loop sleeps it
// sleeps too, until one wakes.
func (wd *watchdog) run() {
	defer close(wd.done)
	period := wd.period()
	timer := time.NewTimer(period)
	defer timer.Stop()
	watch := make([]loopWatch, len(wd.rs.loops))
	// The loops have stopped when end is called: a stack a task recorded
	// as it ended is still reported.
	defer wd.followUps(watch)
	for now := time.Now(); ; {
		select {
		case <-wd.stop:
			return
		default:
		}
		wd.sample(now, watch)
		if watchdogSampled != nil {
			watchdogSampled()
		}
		if wd.rs.obs.awake.Load() == 0 {
			// Every loop sleeps (and so has recorded any stack it was
			// asked for): nothing can hold one until one wakes.
			wd.followUps(watch)
			if !wd.rs.obs.waitAwake(wd.stop) {
				return
			}
			// A loop woke: sample it a period from now, not at once.
			// Sampling at once found the loop asleep again more often
			// than not where the loops leave no processor free (with
			// GOMAXPROCS 1 the watchdog runs only while the loop sleeps
			// in the kernel), and went back to waiting: a wake of this
			// goroutine, another thread's, per sleep of the loop, up to
			// one per request on a lightly loaded server.
			timer.Reset(period)
		}
		select {
		case <-wd.stop:
			return
		case now = <-timer.C:
			timer.Reset(period)
		}
	}
}

// sample looks at every loop's switch word at now: a loop that has run
// the same task since the last samples for the limit or longer is
// reported, and so is one found blocked for two samples.
func (wd *watchdog) sample(now time.Time, watch []loopWatch) {
	wd.load = procLoad{}
	wd.followUps(watch)
	for i, l := range wd.rs.loops {
		lw := &watch[i]
		w, cps := l.obs.run.Load(), l.obs.cps.Load()
		if w != lw.word || cps != lw.cps {
			if w != lw.word {
				l.obs.seen.Store(&watchSample{word: w, since: now})
			}
			asked, held := lw.asked, lw.held
			*lw = loopWatch{word: w, cps: cps, since: now, asked: asked, held: held}
			continue
		}
		id := uint32(w)
		if id == 0 || lw.reported {
			continue
		}
		load := wd.readLoad()
		if lw.load.at.IsZero() {
			// The first sample that finds the loop held: the window over
			// which the process's CPU demand is measured starts here.
			lw.load = load
			continue
		}
		held := now.Sub(lw.since)
		others := wd.othersAwake(watch, i)
		cause := classify(lw.load, load, others, l.obs.yielding.Load())
		switch {
		case held >= wd.limit:
			lw.reported = wd.report(i, lw, id, held, cause, false)
		case cause == causeBlocked && others == 0:
			// Held over two samples without computing: a blocking call.
			// (With other loops busy, their threads blur the measure.)
			lw.reported = wd.report(i, lw, id, held, cause, true)
		}
	}
}

// readLoad reads the process's load, once per sample.
func (wd *watchdog) readLoad() procLoad {
	if wd.load.at.IsZero() {
		wd.load = readProcLoad()
	}
	return wd.load
}

// othersAwake counts the loops other than li that run a task at their
// last sample: each may use a CPU of the process's.
func (wd *watchdog) othersAwake(watch []loopWatch, li int) int {
	n := 0
	for i := range watch {
		if i != li && uint32(watch[i].word) != 0 {
			n++
		}
	}
	return n
}

// stuckCause is what the watchdog makes of an episode.
type stuckCause uint8

const (
	causeUnknown  stuckCause = iota // CPU or a blocking call: the process's CPU time does not say
	causeCPU                        // it computes
	causeBlocked                    // it waits in a call outside weft
	causeYielding                   // its loop waits for a processor, in a Gosched of its own
)

// classify names the likely cause of an episode from the process's load
// over it (from the first sample that found the loop held to this one),
// the other loops awake, and whether the loop waits for a processor.
func classify(from, to procLoad, others int, yielding bool) stuckCause {
	if yielding {
		return causeYielding
	}
	wall := float64(to.at.Sub(from.at))
	if !from.ok || !to.ok || wall < float64(minLoadWindow) || to.cpu < from.cpu || to.wait < from.wait {
		return causeUnknown
	}
	use := float64(to.cpu-from.cpu)/wall - float64(others)
	demand := use + float64(to.wait-from.wait)/wall
	switch {
	case use < idleCPU, use < blockedCPU && demand < busyCPU:
		return causeBlocked
	case use >= blockedCPU && demand >= busyCPU:
		return causeCPU
	}
	return causeUnknown
}

// String is the cause as a report gives it, with what to do.
func (c stuckCause) String() string {
	switch c {
	case causeCPU:
		return "CPU work without Checkpoint (the process computed all along): call t.Checkpoint() every so often, or Offload it"
	case causeBlocked:
		return "a blocking call outside weft (the task held the loop without using the CPU): a Go channel operation or sync lock, time.Sleep, Go network I/O or a blocking system call; run it through weft.Blocking, or use weft's own (channels, Mutex, t.Sleep, Conn)"
	case causeYielding:
		return "its loop waits for a processor (the process's busy goroutines and loops outnumber GOMAXPROCS): not the task's doing"
	}
	return "CPU work without Checkpoint, or a blocking call outside weft (other loops kept the process busy, so its CPU time does not tell): call t.Checkpoint() in long computations or Offload them, and run blocking calls through weft.Blocking"
}

// report logs the episode of task id holding loop li for d so far, and
// reports whether it did, asking the task for its stack as a follow-up.
// An early report (a blocking call, before the limit) is made once per
// task function.
func (wd *watchdog) report(li int, lw *loopWatch, id uint32, d time.Duration, cause stuckCause, early bool) bool {
	l := wd.rs.loops[li]
	t := l.runningTask(id)
	if t == nil {
		return false // it finished or switched meanwhile
	}
	pc := t.job.funcPC()
	if early {
		if wd.early[pc] {
			return false
		}
		if wd.early == nil {
			wd.early = map[uintptr]bool{}
		}
		wd.early[pc] = true
	}
	name := t.givenName()
	if name == "" {
		name = fmt.Sprintf("task %d", id)
		if id == 1 {
			name = "main"
		}
	}
	started := "Run"
	if t.spawnPC != 0 {
		started = pcSite(t.spawnPC)
	}
	// Ask again: if the loop moved on meanwhile, there is no report.
	if uint32(l.obs.run.Load()) != id {
		return false
	}
	msg := "weft: a task holds its loop without suspending"
	if cause == causeYielding {
		msg = "weft: a loop has not run for a while: its goroutine waits for a processor"
	}
	wd.rs.logger.LogAttrs(context.Background(), slog.LevelWarn, msg,
		slog.String("task", name),
		slog.Int("id", int(id)),
		slog.String("func", funcNameOf(pc)),
		slog.String("started", started),
		slog.Int("loop", li),
		slog.Duration("for", d.Round(time.Millisecond)),
		slog.String("cause", cause.String()))
	if cause != causeYielding {
		lw.asked, lw.held = id, lw.since
		l.askStack(id)
	}
	return true
}

// followUps logs the stacks that tasks reported earlier recorded since,
// each as the episode's second record.
func (wd *watchdog) followUps(watch []loopWatch) {
	for i, l := range wd.rs.loops {
		lw := &watch[i]
		if lw.asked == 0 {
			continue
		}
		rec := l.obs.stack.Swap(nil)
		if rec == nil || rec.id != lw.asked {
			continue
		}
		lw.asked = 0
		attrs := []slog.Attr{
			slog.Int("id", int(rec.id)),
			slog.Int("loop", i),
			slog.Duration("held", rec.at.Sub(lw.held).Round(time.Millisecond)),
			slog.String("at", rec.where),
		}
		if len(rec.pcs) > 0 {
			attrs = append(attrs, slog.String("stack", formatStack(rec.pcs)))
		}
		wd.rs.logger.LogAttrs(context.Background(), slog.LevelWarn, "weft: the task that held its loop let go", attrs...)
	}
}

// formatStack renders return PCs as a goroutine dump renders a stack:
// each frame's function, then its file and line.
func formatStack(pcs []uintptr) string {
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		fr, more := frames.Next()
		if fr.Function != "" {
			fmt.Fprintf(&b, "%s(...)\n\t%s:%d\n", fr.Function, fr.File, fr.Line)
		}
		if !more {
			return b.String()
		}
	}
}

// watchdogSampled, if set (by a test, before the Run), is called after
// each sample.
var watchdogSampled func()
