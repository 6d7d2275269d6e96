package weft

// The watchdog: a goroutine beside a Run's loops that notices a task
// holding its loop too long without suspending or reaching a Checkpoint.
//
// It never needs the loop. Every loop publishes a switch word at each
// resumption and slow Checkpoint (observe.go); the watchdog samples the words
// every quarter of its limit, and a word that names a task and has not
// changed for the limit is an episode. It reports an episode once, at
// Warn through the Run's logger, with the task's name, how long it has
// held the loop and the stack of the task's goroutine taken then, from
// a dump of all goroutines (runtime.Stack, which stops the world for a
// moment: once per episode, never while nothing is stuck). The goroutine's
// state in that dump names the likely cause.
//
// A task blocked in a known blocking call (a system call or Go's network
// I/O, a Go channel or select, a sync lock, time.Sleep) is reported
// sooner: a word unchanged over two samples (held for a quarter of the
// limit) gets a look at the task's stack, and if it is in such a call the
// episode is reported then, with the advice to run the call through
// Blocking. A task's function gets one early look per Run, and early looks
// are at least probeEvery apart, so the watchdog stays cheap with tasks
// that compute for long stretches; each function is reported early once.

import (
	"bytes"
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
// name, how long so far, the likely cause (a Go channel operation, a sync
// lock, time.Sleep, a blocking system call or Go network I/O, or CPU
// without Checkpoint) with what to do (for the blocking calls: run them
// through Blocking) and the stack of the task taken while it is stuck; it
// comes once per episode. A task found in a known blocking call is
// reported as soon as it has held its loop for a quarter of the limit
// (once per task function), since a blocking call made from a task holds
// up the loop however short it is; calls shorter than that are not seen. The watchdog is a goroutine of the Run's own, which ends with
// it; it never needs the loops, and costs them one atomic store per task
// switch. With WithLogger(nil) there is no watchdog. d < 0 panics with
// "weft:".
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

	// The early looks (probe), on the watchdog's goroutine only.
	lastProbe time.Time
	looked    map[uintptr]bool // functions that had their early look
}

// probeEvery bounds the early looks at stacks of tasks that hold their
// loop for less than the limit.
const probeEvery = 100 * time.Millisecond

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
	cps      uint32    // ... and the count of slow Checkpoints
	since    time.Time // when it was first seen
	reported bool      // this episode has been reported
	probed   bool      // this episode has had its early look
}

// run samples the loops every period until end, from the first period's
// end (it is time.AfterFunc's function).
func (wd *watchdog) run() {
	defer close(wd.done)
	tick := time.NewTicker(wd.period())
	defer tick.Stop()
	watch := make([]loopWatch, len(wd.rs.loops))
	for now := time.Now(); ; {
		select {
		case <-wd.stop:
			return
		default:
		}
		wd.sample(now, watch)
		select {
		case <-wd.stop:
			return
		case now = <-tick.C:
		}
	}
}

// sample looks at every loop's switch word at now: a loop that has run
// the same task since the last samples for the limit or longer is reported.
func (wd *watchdog) sample(now time.Time, watch []loopWatch) {
	for i, l := range wd.rs.loops {
		lw := &watch[i]
		w, cps := l.obs.run.Load(), l.obs.cps.Load()
		if w != lw.word || cps != lw.cps {
			if w != lw.word {
				l.obs.seen.Store(&watchSample{word: w, since: now})
			}
			*lw = loopWatch{word: w, cps: cps, since: now}
			continue
		}
		id := uint32(w)
		if id == 0 || lw.reported {
			continue
		}
		if held := now.Sub(lw.since); held >= wd.limit {
			lw.reported = true
			wd.report(i, id, held, false)
		} else if !lw.probed && now.Sub(wd.lastProbe) >= probeEvery {
			// Held over two samples: look early for a blocking call.
			lw.probed = true
			lw.reported = wd.report(i, id, held, true)
			// The look stopped the world for a moment: that is not the
			// task's time.
			lw.since = lw.since.Add(time.Since(now))
		}
	}
}

// report logs the episode of task id holding loop li for d so far, and
// reports whether it did. An early report (before the limit) is made only
// if the task is in a known blocking call, once per function and cause.
func (wd *watchdog) report(li int, id uint32, d time.Duration, early bool) bool {
	rs := wd.rs
	pc, name, ok := rs.liveTask(id)
	if !ok {
		return false // it finished meanwhile
	}
	if early {
		if wd.looked[pc] {
			return false
		}
		wd.lastProbe = time.Now()
	}
	fn := funcNameOf(pc)
	state, stack := taskStack(fn)
	cause := stuckCause(state, stack)
	// Ask again: if the loop moved on while we looked, there is no report,
	// and an early look may come again for this function.
	if uint32(rs.loops[li].obs.run.Load()) != id {
		return false
	}
	if early {
		blocking := inBlockingCall(state, stack)
		// A goroutine found runnable has just been woken (its call
		// returned, and it waits for a processor): the look says nothing
		// about the function, so it does not count as its one look.
		if blocking || state != "runnable" {
			if wd.looked == nil {
				wd.looked = map[uintptr]bool{}
			}
			wd.looked[pc] = true
		}
		if !blocking {
			return false
		}
	}
	if name == "" {
		name = fmt.Sprintf("task %d", id)
		if id == 1 {
			name = "main"
		}
	}
	rs.logger.LogAttrs(context.Background(), slog.LevelWarn, "weft: a task holds its loop without suspending",
		slog.String("task", name),
		slog.Int("id", int(id)),
		slog.String("func", fn),
		slog.Int("loop", li),
		slog.Duration("for", d.Round(time.Millisecond)),
		slog.String("cause", cause),
		slog.String("stack", stack))
	return true
}

// liveTask finds the live task id in the Run's registry and returns its
// function and name. It reads only what is fixed at the spawn or guarded
// by the record's lock, unlike a full snapshot (a seeded Run's tasks
// change loops as they run), and copies nothing else.
func (rs *runState) liveTask(id uint32) (fn uintptr, name string, ok bool) {
	o := &rs.obs
	o.mu.Lock()
	defer o.mu.Unlock()
	for t := o.head; t != nil; t = t.obs.next {
		if t.id != id {
			continue
		}
		if r := t.obs.rec.Load(); r != nil {
			r.mu.Lock()
			name = r.name
			r.mu.Unlock()
		}
		return t.job.funcPC(), name, true
	}
	return 0, "", false
}

// taskStack finds, in a dump of every goroutine, the goroutine of the
// running task whose function is fn: a coroutine's goroutine (its stack
// holds weft's coroutine body) that is not itself switched out (state
// "coroutine"). It returns that goroutine's state and its stack.
func taskStack(fn string) (state, stack string) {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		if len(buf) >= 64<<20 {
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var fallback [2]string
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		s := string(g)
		if !strings.Contains(s, "weft/internal/coro.(*Coro).body") {
			continue
		}
		st := goroutineState(s)
		if st == "" || st == "coroutine" {
			continue
		}
		if strings.Contains(s, fn+"(") {
			return st, s
		}
		if fallback[1] == "" {
			fallback = [2]string{st, s}
		}
	}
	return fallback[0], fallback[1]
}

// goroutineState returns the state in a goroutine's header,
// "goroutine 7 [chan receive, 2 minutes]:" gives "chan receive".
func goroutineState(s string) string {
	i := strings.IndexByte(s, '[')
	j := strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return ""
	}
	st := s[i+1 : j]
	if k := strings.IndexByte(st, ','); k >= 0 {
		st = st[:k]
	}
	return st
}

// stuckCause names the likely cause of a stuck task from its goroutine's
// state and stack, and what to do about it.
func stuckCause(state, stack string) string {
	switch {
	case stack == "":
		return "unknown (its stack was not found)"
	case strings.HasPrefix(state, "chan ") || strings.HasPrefix(state, "select"):
		return "a Go channel operation (" + state + "): run the code that waits through weft.Blocking, or use a weft channel"
	case strings.HasPrefix(state, "sync.") || strings.HasPrefix(state, "semacquire"):
		return "a sync lock (" + state + "): run the code that waits through weft.Blocking, or use weft.Mutex (and hold no lock across a suspension)"
	case state == "sleep":
		return "time.Sleep: use t.Sleep, or run the code that sleeps through weft.Blocking"
	case state == "IO wait":
		return "Go network I/O (IO wait): run the client that waits through weft.Blocking, or use weft's I/O"
	case state == "syscall" || strings.Contains(stack, "syscall.Syscall") || strings.Contains(stack, "syscall.RawSyscall"):
		return "a blocking system call (" + state + "): run it through weft.Blocking, or use weft's I/O"
	case state == "running" || state == "runnable":
		return "CPU work without Checkpoint: call t.Checkpoint() every so often, or Offload it"
	}
	return "blocked in the Go runtime (" + state + "): run the code that waits through weft.Blocking"
}

// inBlockingCall reports whether a stuck task's goroutine waits in a known
// blocking call (not computing, not in an unknown runtime state).
func inBlockingCall(state, stack string) bool {
	switch {
	case stack == "", state == "running", state == "runnable":
		return false
	case strings.HasPrefix(state, "chan "), strings.HasPrefix(state, "select"),
		strings.HasPrefix(state, "sync."), state == "sleep", state == "IO wait", state == "syscall":
		return true
	case state == "semacquire":
		return false // the runtime's own (a GC phase, say), not a call of the task
	}
	return strings.Contains(stack, "syscall.Syscall") || strings.Contains(stack, "syscall.RawSyscall")
}
