package weft

// The state of one Run, shared by its loops (DESIGN.md, "Several loops").
//
// With one loop (multi false) the fields marked "run lock" are touched
// only by that loop's thread of control and the lock is never taken. With
// several, the run lock guards them, as it guards the scope tree, every
// task's innermost scope and every write of a task's loop: see lock.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/weft-go/weft/internal/clock"
)

type runState struct {
	loops []*loop // immutable; loops[0] runs on Run's goroutine
	multi bool    // immutable: len(loops) > 1
	clock clock.Clock

	// Simulation (seed.go, seed_network.go).
	network Network   // immutable: WithNetwork's, nil for the host's
	sim     *simState // a seeded Run's scheduler; nil: FIFO

	mu sync.Mutex // the run lock (multi only)

	ids       uint32        // task ids given out (one loop)
	sharedIDs atomic.Uint32 // ... (several loops)

	root Task // sentinel: every live task's root scope descends from root.root
	main *Task

	ctx    context.Context // values for every task's Context
	labels unsafe.Pointer  // the profiler labels of Run's goroutine (labels.go)
	logger *slog.Logger    // nil: reports are off

	failures []*failureRecord // run lock: the first unobserved failures, in order
	report   *failureReport   // shared with the failure records (unobserved.go)

	layers     map[any]any // run lock: the layers' per-Run state (layerState), by key
	layerClose []func()    // run lock: ... closed when the Run ends, in order
	layerOpts  map[any]any // immutable: the layers' settings (layerOption)

	deadlock atomic.Pointer[DeadlockError] // the first deadlock found; waits fail fast with it after
	aborting atomic.Bool                   // a Goexit passed through a loop: every loop unwinds
	// A deadlock report and a goroutine that satisfies a parked task
	// (deadlock.go: confirmDeadlock, claimWake): deadlocking announces a
	// report about to be made; wakesInFlight counts the wakes goroutines
	// owe parked tasks and have not posted yet.
	deadlocking   atomic.Bool
	wakesInFlight atomic.Int32

	// Idleness (multi only; run lock).
	idle   int  // loops with nothing to run, asleep or about to be
	done   bool // every loop must stop: nothing is left anywhere
	hungry atomic.Int32
	nextFD atomic.Uint32 // round-robin home for accepted connections (homeFor)
	// wakeEpoch counts loops leaving idleness; graceNext and graceLoop
	// are allIdle's hand-off of a virtual-time grace (blockVirtualIOMulti).
	wakeEpoch uint64
	graceNext int64
	graceLoop *loop
	stopped   sync.WaitGroup

	obs runObs // the registry of live tasks and what observers need (observe.go)

	coros coroPool // idle coroutines the loops share (multi only; loop.go)
}

// newID returns the next task id of the Run: 1 for main, then 2, 3...
func (rs *runState) newID() uint32 {
	if rs.multi {
		return rs.sharedIDs.Add(1)
	}
	rs.ids++
	return rs.ids
}

// lock takes the run lock when there are several loops.
func (rs *runState) lock() {
	if rs.multi {
		rs.mu.Lock()
	}
}

func (rs *runState) unlock() {
	if rs.multi {
		rs.mu.Unlock()
	}
}

// loopCount returns n for WithLoops(n): 0 means GOMAXPROCS; without the
// option, 1. The environment is read only when the program asks for it
// (LoopsFromEnv), or in this project's own test runs (envLoopsByDefault,
// a build tag's).
func loopCount(o *options) int {
	if o.seeded() {
		return 1 // a seeded Run steps its simulated loops on one (seed.go)
	}
	n := 1
	if o.loopsSet {
		n = o.loops
	} else if envLoopsByDefault {
		if v, err := envLoops(); err == nil {
			n = v
		}
	}
	if n == 0 {
		n = procsBase() // the program's, not what other Runs reserved (procs.go)
	}
	return n
}

// LoopsFromEnv, given to WithLoops, takes the number of loops from the
// WEFT_LOOPS environment variable when the Run starts: unset or empty
// means 1, 0 means GOMAXPROCS, and anything but a number >= 0 makes Run
// return an error. It is how a program lets its operator choose; a Run
// that does not ask never reads the environment, since several loops
// change what a program may assume (tasks of different loops run in
// parallel: see WithLoops). Under WithSeed, the environment is not read
// (one simulated loop), so that it cannot change a seed's schedule.
const LoopsFromEnv = -1 << 20

// envLoops reads WEFT_LOOPS.
func envLoops() (int, error) {
	s := os.Getenv("WEFT_LOOPS")
	if s == "" {
		return 1, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("weft: WEFT_LOOPS=%q: want a number of loops >= 0 (0: GOMAXPROCS)", s)
	}
	return v, nil
}

// WithLoops runs the Run on n loops, each on a goroutine (and so a core)
// of its own; a busy loop hands runnable tasks over to an idle one (see
// Local for tasks that must stay). The default is 1: one loop, one
// deterministic schedule, no two tasks ever running at once. n = 0 means
// GOMAXPROCS (the program's: not the processors that other Runs' Offload
// pools have reserved); n = LoopsFromEnv takes the number from the WEFT_LOOPS
// environment variable (the environment is never read otherwise). Any
// other n < 0 panics with "weft:".
//
// With several loops, what still holds: a task's own code runs in order;
// a settle, a channel send, an Unlock or Set happens before the wait it
// ends returns (promises, channels and weft's locks order memory across
// loops); tasks of one loop never run in parallel with each other, and a
// Local task never leaves its loop. What does not: tasks of different
// loops may run in parallel, so state they share needs weft's or Go's
// synchronisation, and the schedule is no longer one fixed order.
// Accepted connections are spread over the loops (each served where its
// descriptor is registered); CPU-bound tasks spread by hand-over.
// WithVirtualTime: the loops share one clock, which advances only when
// every loop is idle.
func WithLoops(n int) Option {
	if n < 0 && n != LoopsFromEnv {
		panic("weft: WithLoops with a negative number of loops")
	}
	return func(o *options) {
		o.loops, o.loopsSet, o.loopsEnv = n, true, false
		if n == LoopsFromEnv {
			v, err := envLoops()
			if err != nil {
				o.err = err
				return
			}
			o.loops, o.loopsEnv = v, true
		}
	}
}

// Loop returns the index of the loop running the task now, 0 to n-1 for a
// Run of n loops. It does not suspend. A task that is not Local may be on
// another loop after its next suspension point.
func (t *Task) Loop() int {
	t.check("Loop")
	return t.loopIndex()
}

// loopIndex is Loop without the check: the simulated loop of a seeded
// Run's task, else the index of the loop that owns it.
func (t *Task) loopIndex() int {
	if t.loop.sim != nil {
		return int(t.simLoop)
	}
	return t.loop.id
}

// shownLoops is how many loops the Run has as its tasks see them: its
// simulated ones under a seed.
func (rs *runState) shownLoops() int {
	if rs.sim != nil {
		return rs.sim.loops
	}
	return len(rs.loops)
}

// Local starts f as a task that never leaves the loop it starts on, like
// Go otherwise: it suspends t while the child runs first, and is not a
// cancellation point (see Go). The task is never handed to another loop,
// and it runs on the same loop as the task that calls Local. Use it for
// tasks that share state with their siblings on the loop without locks,
// or that must stay with a resource of the loop. A Local task that would
// have to wait on an fd registered on another loop panics with "weft:".
//
//go:noinline
func Local[T any](t *Task, f func(t *Task) (T, error)) *Promise[T] {
	pc := callerPC()
	t.check("Local")
	if f == nil {
		panic("weft: Local called with a nil function")
	}
	return spawnIn(t, t.innermost(), f, pc, spawnLocal, 0, func(c *Task) { c.local = true })
}
