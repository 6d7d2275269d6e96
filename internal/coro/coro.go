// Package coro provides the coroutines weft tasks run on.
//
// A Coro is a goroutine driven through iter.Pull, so control moves between
// it and whoever resumes it by a direct runtime switch (coroswitch), never
// through the Go scheduler's run queues. A Coro runs jobs one after another:
// when a job returns, the Coro parks, ready for the next job, which is how
// weft pools coroutines instead of starting a goroutine per task.
//
// Control flow is strictly nested, as iter.Pull requires: Resume switches
// into the Coro and returns when the job calls Suspend or returns. Whoever
// called Resume is the only one Suspend can switch back to.
//
// A Coro is not safe for concurrent use; its owner serialises every call.
// The owner is a Thread, which records the Coro it runs at each switch:
// that record is how Current tells which Coro, if any, calls it.
package coro

import (
	"iter"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
)

// A Job is the work a Coro runs. RunJob runs on the Coro's goroutine.
type Job interface {
	RunJob()
}

// Coro is a pooled coroutine. See the package documentation.
type Coro struct {
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool // set on the Coro's goroutine when it first runs
	job   Job                 // the job running now; nil between jobs
	g     atomic.Uintptr      // the Coro's goroutine; 0 until it first runs (read by owner checks from other goroutines)
}

// New returns a Coro whose goroutine starts on the first Start.
func New() *Coro {
	c := &Coro{}
	c.next, c.stop = iter.Pull(c.body)
	return c
}

// body is the Coro's goroutine. Its frame, like every frame under a job,
// is paid for by each suspended task: a task whose deepest point (the
// switch out of a wait) crosses the first 1 KiB or so of its 2 KiB stack
// doubles it for good (the runtime shrinks a stack only when a quarter of
// it would do), so body keeps its own work in register and unregister.
func (c *Coro) body(yield func(struct{}) bool) {
	c.yield = yield
	c.register()
	defer c.unregister()
	for c.job != nil {
		c.job.RunJob()
		c.job = nil
		if !yield(struct{}{}) {
			return
		}
	}
}

// register records the Coro's goroutine, for G and Current, and counts it
// for PlainCache.
func (c *Coro) register() {
	c.g.Store(Getg())
	if HaveGetg {
		registrations.Add(1)
	}
}

// unregister forgets the goroutine as it ends: a Thread may still name
// the Coro for a moment (the Coro was closed, or its job exited the
// goroutine), and the goroutine's g may already be another's.
func (c *Coro) unregister() {
	c.g.Store(0)
}

// Start runs j on the Coro until j suspends or returns, and reports whether
// it returned. The Coro must be idle (no job).
func (c *Coro) Start(j Job) (done bool) {
	if c.job != nil {
		panic("weft: internal error: coroutine started while busy")
	}
	c.job = j
	c.next()
	return c.job == nil
}

// Resume continues a suspended job until it suspends again or returns, and
// reports whether it returned.
func (c *Coro) Resume() (done bool) {
	c.next()
	return c.job == nil
}

// Suspend switches back to whoever last called Start or Resume. It must be
// called by the job, on the Coro's goroutine. It returns false if the Coro
// was closed meanwhile: the job must then unwind without suspending again.
func (c *Coro) Suspend() bool {
	return c.yield(struct{}{})
}

// Job returns the job running or suspended on the Coro, nil between jobs.
// Only the Coro's owner, or the job itself, may call it.
func (c *Coro) Job() Job { return c.job }

// A Thread is a thread of control that runs Coros: a goroutine that
// resumes them, then the Coro it resumed, which may resume others in
// turn, strictly nested (a weft loop: its goroutine, a driving task, the
// task it drives). It records the Coro that runs for it now, which is how
// Current finds the caller's Coro without a record per Coro. Only the
// thread of control itself calls Switch and Back; any goroutine may call
// Running. The zero value is a Thread running its own goroutine, unknown
// to Current until Register.
type Thread struct {
	_       [64]byte // the record is read by every Current: a line of its own
	running atomic.Pointer[Coro]
	_       [56]byte
}

// Switch records that the thread's control moves to c, which the caller
// is about to Start, Resume or Close, and returns the Coro it leaves (nil:
// the thread's goroutine) for Back. It costs an atomic swap.
func (th *Thread) Switch(c *Coro) (prev *Coro) {
	if !HaveGetg {
		return nil // no Current to answer: nothing reads it but Running
	}
	return th.running.Swap(c)
}

// Back records that control is back on prev, once the Coro given to
// Switch has suspended, returned or ended.
func (th *Thread) Back(prev *Coro) {
	if HaveGetg {
		th.running.Store(prev)
	}
}

// Running returns the Coro the thread of control is on now, nil when on
// the thread's goroutine (or without Getg).
func (th *Thread) Running() *Coro { return th.running.Load() }

// threads holds the registered Threads, copied on write: Current reads
// the slice without a lock. Each Run adds its loops and removes them as
// it ends, so that several Runs may be alive at once.
var threads struct {
	mu   sync.Mutex
	live atomic.Pointer[[]*Thread]
}

// Register makes the thread's Coros known to Current until Unregister.
// Every Coro that runs a job calling Current or PlainCache.Plain must be
// run through a registered Thread (Switch before its Start and Resume).
func (th *Thread) Register() {
	if !HaveGetg {
		return
	}
	threads.mu.Lock()
	defer threads.mu.Unlock()
	var live []*Thread
	if p := threads.live.Load(); p != nil {
		live = *p
	}
	live = append(live[:len(live):len(live)], th)
	threads.live.Store(&live)
}

// Unregister undoes Register, once the thread runs no more Coros.
func (th *Thread) Unregister() {
	if !HaveGetg {
		return
	}
	threads.mu.Lock()
	defer threads.mu.Unlock()
	p := threads.live.Load()
	if p == nil {
		return
	}
	live := make([]*Thread, 0, len(*p))
	for _, t := range *p {
		if t != th {
			live = append(live, t)
		}
	}
	threads.live.Store(&live)
}

// Current returns the Coro whose goroutine is the caller, or nil if the
// caller is not running on a Coro (or Getg is not available here). It
// serves the rarer paths that must find out which task, if any, calls them
// (a settle function of a promise, say).
//
// It asks each registered Thread which Coro it runs: the caller's Coro, if
// any, is the one whose goroutine it is, since a Coro runs only while the
// Thread that switched to it records it. The answer is exact: a Thread
// names a Coro that has ended only for a moment, and its g then reads 0
// (unregister), so that a goroutine given the dead one's g is not taken
// for it. It costs two loads per registered Thread, a few nanoseconds for
// a Run or two; more when many loops' records are written by other
// processors at every switch.
func Current() *Coro {
	if !HaveGetg {
		return nil
	}
	g := Getg()
	if p := threads.live.Load(); p != nil {
		for _, th := range *p {
			if c := th.running.Load(); c != nil && c.g.Load() == g {
				return c
			}
		}
	}
	return nil
}

// registrations counts the goroutines of Coros ever started.
var registrations atomic.Uint64

// A PlainCache remembers the last goroutine found not to be a Coro's, so
// that a path called again and again from one plain goroutine (a channel's
// SendWait) can tell in two atomic loads what Current looks through every
// Thread for. The zero value is empty; it is safe for concurrent use.
//
// A goroutine found plain stays plain while it lives, and its g can only
// become a Coro's after it ends, by a new registration: so an answer
// cached together with the count of registrations before the lookup holds
// as long as that count has not moved. (Two callers may interleave their
// stores and leave one's g with the other's count; the later count is
// still one read before that g was last seen alive, so the reasoning
// stands.) A Coro run outside any registered Thread would be found plain,
// and cached so: see Register.
type PlainCache struct {
	g     atomic.Uintptr
	epoch atomic.Uint64
}

// Plain reports whether the caller runs on no Coro. It is exact, and fast
// when the caller was the last plain goroutine to ask and no Coro has
// started since; without Getg it is Current's answer.
func (pc *PlainCache) Plain() bool {
	if !HaveGetg {
		return Current() == nil
	}
	g, e := Getg(), registrations.Load()
	if pc.g.Load() == g && pc.epoch.Load() == e {
		return true
	}
	if Current() != nil {
		return false
	}
	pc.g.Store(g)
	pc.epoch.Store(e)
	return true
}

// Busy reports whether a job is running or suspended on the Coro.
func (c *Coro) Busy() bool { return c.job != nil }

// G identifies the Coro's goroutine (see Getg); 0 before its first Start
// and after the goroutine ends.
func (c *Coro) G() uintptr { return c.g.Load() }

// Close ends the Coro's goroutine. An idle Coro simply exits. A Coro with a
// suspended job has Suspend return false inside that job, which must then
// return; Close returns once it has.
func (c *Coro) Close() {
	c.stop()
}

// Running reports whether the calling goroutine is a Coro's: whether the
// caller runs inside a job. It walks the stack's program counters and looks
// each up in the function table, without symbolizing frames (a few hundred
// nanoseconds for a shallow stack); it serves checks such as refusing a
// nested Run.
func Running() bool {
	var pcs [32]uintptr
	for skip := 1; ; skip += len(pcs) {
		n := runtime.Callers(skip, pcs[:])
		for _, pc := range pcs[:n] {
			// FuncForPC names the innermost function at pc, inlined or not.
			if f := runtime.FuncForPC(pc - 1); f != nil && f.Name() == bodyName {
				return true
			}
		}
		if n < len(pcs) {
			return false
		}
	}
}

var bodyName = runtime.FuncForPC(reflect.ValueOf((*Coro).body).Pointer()).Name()
