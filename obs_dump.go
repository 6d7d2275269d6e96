package weft

// Dump: every live task of every running Run, from the published records
// (observe.go), without asking any loop for anything.

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/weft-go/weft/internal/poller"
)

// taskSnap is one task as a dump sees it.
type taskSnap struct {
	id, parent uint32
	loop       int
	name       string
	fn         uintptr
	spawnPC    uintptr
	how        spawnOp
	state      taskView
	rec        obsWaitRec    // valid if state is viewWaiting
	ran        time.Duration // if running: how long it has held its loop at least (0: not known)
	since      int64         // if runnable: when it became so, plus one (0: not known)
}

type taskView uint8

const (
	viewRunnable taskView = iota // not running and not waiting: queued (or about to be)
	viewRunning
	viewWaiting
)

// runSnap is a Run as a dump sees it.
type runSnap struct {
	num   int
	loops int
	now   int64     // the Run's clock when the snapshot was taken
	wall  time.Time // the Run's clock as a time, for deadlines
	tasks []taskSnap
}

// snapshot copies what observers may see of rs's live tasks. It holds the
// run lock (with several loops) and the registry's lock for the copy
// only: about 50 ns a task.
func (rs *runState) snapshot() runSnap {
	s := runSnap{num: rs.obs.num, loops: rs.shownLoops()}
	running := make([]uint32, len(rs.loops))
	ran := make([]time.Duration, len(rs.loops))
	for i, l := range rs.loops {
		w := l.obs.run.Load()
		running[i] = uint32(w)
		if seen := l.obs.seen.Load(); seen != nil && seen.word == w {
			ran[i] = time.Since(seen.since)
		}
	}
	rs.lock()
	o := &rs.obs
	o.mu.Lock()
	s.tasks = make([]taskSnap, 0, o.count)
	for t := o.head; t != nil; t = t.obs.next {
		ts := taskSnap{id: t.id, parent: t.parent, loop: t.loopIndex(), fn: t.job.funcPC(), spawnPC: t.spawnPC, how: t.how}
		home := t.loop.id // the loop that runs it (one for all simulated loops)
		tok := t.waitTok.Load()
		if r := t.obs.rec.Load(); r != nil {
			r.mu.Lock()
			ts.name = t.nameLocked()
			if r.w.have && tok != 0 && r.w.gen == tok {
				ts.state, ts.rec = viewWaiting, r.w
			}
			r.mu.Unlock()
			ts.since = r.runnableSince.Load()
		}
		if ts.state != viewWaiting && running[home] == t.id {
			ts.state, ts.ran = viewRunning, ran[home]
		}
		s.tasks = append(s.tasks, ts)
	}
	o.mu.Unlock()
	rs.unlock()
	s.now = rs.clock.Nanotime()
	s.wall = rs.clock.Now()
	slices.SortFunc(s.tasks, func(a, b taskSnap) int { return int(a.id) - int(b.id) })
	return s
}

// Dump writes every live task of every running Run to w, as a tree per
// loop: for each task its id, name, function, parent, state (running,
// runnable, or waiting and on what: a promise, a channel or lock, a timer
// and its deadline, an fd and its direction, off-loop work), how long it
// has waited, where it waits and where it was started (file:line in the
// caller's code). Dump does not suspend: any goroutine may call it at any
// time, a task included, and it never waits for a loop. It writes nothing
// if no Run is running; a nil w panics.
//
// Dump reads what the loops publish as they go (each task's
// record is taken under a lock the loop holds only while it starts a
// wait), so the picture is consistent per task, and a task that is
// switching as Dump looks may show its previous state. The durations are
// on each Run's clock (virtual under WithVirtualTime), but for a running
// task's: with the watchdog on, a task that has held its loop since the
// watchdog's last look shows "running for at least" the wall time since
// then (a quarter of the watchdog's limit is the resolution); a shorter
// or unwatched run shows just "running". A runnable task shows for how
// long it has been runnable if it has waited or been named before (the
// record it is published in is made then); a task that has done neither
// shows just "runnable". Wait and runnable start times reuse the loop's
// last clock reading, so they may be early by what the loop ran since
// (microseconds, unless a task held the loop).
func Dump(w io.Writer) {
	if w == nil {
		panic("weft: Dump with a nil writer")
	}
	bw := bufio.NewWriter(w)
	for _, rs := range runningRuns() {
		writeRunSnap(bw, rs.snapshot())
	}
	bw.Flush()
}

// writeRunSnap writes one Run's tasks, a tree per loop.
func writeRunSnap(w *bufio.Writer, s runSnap) {
	plural := func(n int, what string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, what)
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	fmt.Fprintf(w, "weft run %d: %s, %s\n", s.num, plural(s.loops, "loop"), plural(len(s.tasks), "task"))
	byLoop := make([][]*taskSnap, s.loops)
	for i := range s.tasks {
		ts := &s.tasks[i]
		byLoop[ts.loop] = append(byLoop[ts.loop], ts)
	}
	sites := siteCache{pcs: map[uintptr]string{}, stacks: map[[8]uintptr]string{}}
	for li, tasks := range byLoop {
		fmt.Fprintf(w, "loop %d: %s\n", li, plural(len(tasks), "task"))
		here := map[uint32]bool{}
		children := map[uint32][]*taskSnap{}
		for _, ts := range tasks {
			here[ts.id] = true
		}
		var roots []*taskSnap
		for _, ts := range tasks {
			if ts.parent != 0 && here[ts.parent] {
				children[ts.parent] = append(children[ts.parent], ts)
			} else {
				roots = append(roots, ts)
			}
		}
		var walk func(ts *taskSnap, depth int)
		walk = func(ts *taskSnap, depth int) {
			w.WriteString(strings.Repeat("  ", depth+1))
			writeTaskLine(w, s, ts, &sites)
			for _, c := range children[ts.id] {
				walk(c, depth+1)
			}
		}
		for _, ts := range roots {
			walk(ts, 0)
		}
	}
}

// writeTaskLine writes one task:
//
//	task 3 "fetch" (main.fetch) parent 1: waiting on timer (Sleep, due in 1s) for 2s at x.go:12; started at x.go:30
//	task 4 (main.worker) parent 1: waiting on channel (Chan.Recv) for 1s at x.go:40; started by TaskGroup.Go at x.go:31
//
// The function is the user's, also for a task that weft runs through a
// wrapper (a group's task); "started by" names the operation that started
// it, unless that was Go.
func writeTaskLine(w *bufio.Writer, s runSnap, ts *taskSnap, sites *siteCache) {
	fmt.Fprintf(w, "task %d", ts.id)
	if ts.name != "" {
		fmt.Fprintf(w, " %q", ts.name)
	} else if ts.id == 1 {
		w.WriteString(` "main"`)
	}
	fmt.Fprintf(w, " (%s)", sites.fn(ts.fn))
	if ts.parent != 0 {
		fmt.Fprintf(w, " parent %d", ts.parent)
	}
	w.WriteString(": ")
	switch ts.state {
	case viewRunning:
		w.WriteString("running")
		if ts.ran >= time.Millisecond {
			fmt.Fprintf(w, " for at least %s", fmtDur(int64(ts.ran)))
		}
	case viewRunnable:
		w.WriteString("runnable")
		if ts.since > 0 {
			fmt.Fprintf(w, " for %s", fmtDur(max(0, s.now-(ts.since-1))))
		}
	case viewWaiting:
		r := &ts.rec
		w.WriteString("waiting on ")
		w.WriteString(describeWait(s, r))
		fmt.Fprintf(w, " for %s", fmtDur(s.now-r.since))
		if site := sites.user(r.pcs); site != "?" {
			fmt.Fprintf(w, " at %s", site)
		}
	}
	started := "Run"
	if ts.spawnPC != 0 {
		started = sites.pc(ts.spawnPC)
	}
	if ts.how != spawnGo && ts.how != spawnRun {
		fmt.Fprintf(w, "; started by %s at %s\n", ts.how, started)
		return
	}
	fmt.Fprintf(w, "; started at %s\n", started)
}

// siteCache remembers the sites a dump has rendered: many tasks share
// them, and rendering one costs microseconds.
type siteCache struct {
	pcs    map[uintptr]string
	stacks map[[8]uintptr]string
}

func (c *siteCache) pc(pc uintptr) string {
	s, ok := c.pcs[pc]
	if !ok {
		s = pcSite(pc)
		c.pcs[pc] = s
	}
	return s
}

func (c *siteCache) fn(pc uintptr) string {
	s, ok := c.pcs[^pc] // function entries, kept apart from call sites
	if !ok {
		s = shortFuncName(funcNameOf(pc))
		c.pcs[^pc] = s
	}
	return s
}

func (c *siteCache) user(pcs [8]uintptr) string {
	s, ok := c.stacks[pcs]
	if !ok {
		s = userSite(pcs[:])
		c.stacks[pcs] = s
	}
	return s
}

// describeWait names what a wait waits on.
func describeWait(s runSnap, r *obsWaitRec) string {
	switch r.kind {
	case waitPromise, waitMulti:
		switch r.op {
		case "Group":
			return "its group's tasks (Group)"
		case "First", "Timeout":
			return "its children (" + r.op + ")"
		case "TaskGroup.Start":
			return "the new task to call ready (TaskGroup.Start)"
		}
		if op, ok := strings.CutSuffix(r.op, " (limit)"); ok {
			return "a place under its group's limit (" + op + ")"
		}
		if r.kind == waitPromise {
			return "promise (" + opOr(r.op, "Await") + ")"
		}
		return "promises (" + opOr(r.op, "All") + ")"
	case waitTimer:
		due := r.detail - s.now
		if due < 0 {
			due = 0
		}
		deadline := s.wall.Add(time.Duration(due))
		return fmt.Sprintf("timer (%s, due in %s, at %s)", opOr(r.op, "Sleep"), fmtDur(due), deadline.UTC().Format("15:04:05.000"))
	case waitFD:
		if r.op != "" {
			return fmt.Sprintf("fd %d (%s, %s)", r.detail>>2, fdModeString(poller.Mode(r.detail&3)), r.op)
		}
		return fmt.Sprintf("fd %d (%s)", r.detail>>2, fdModeString(poller.Mode(r.detail&3)))
	case waitExternal:
		return "off-loop work (" + opOr(r.op, "Offload") + ")"
	case waitPark:
		switch {
		case strings.HasPrefix(r.op, "Chan.") || r.op == "Select":
			return "channel (" + r.op + ")"
		case strings.HasPrefix(r.op, "Mutex.") || strings.HasPrefix(r.op, "Semaphore."):
			return "lock (" + r.op + ")"
		case strings.HasPrefix(r.op, "Event."):
			return "event (" + r.op + ")"
		}
		return opOr(r.op, "a wait source")
	}
	return "?"
}

func opOr(op, def string) string {
	if op == "" {
		return def
	}
	return op
}

// fmtDur writes a duration rounded for a human: 1.5s, 20ms, 300µs.
func fmtDur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d >= time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}
