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

// register records the Coro's goroutine, for G and Current.
func (c *Coro) register() {
	g := Getg()
	c.g.Store(g)
	if HaveGetg {
		registrations.Add(1) // before the Store: see PlainCache
		byG.Store(g, c)
	}
}

// unregister undoes register when the goroutine ends.
func (c *Coro) unregister() {
	if HaveGetg {
		byG.Delete(c.g.Load())
	}
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

// byG maps the goroutine of each live Coro (Getg) to the Coro, for Current.
var byG sync.Map

// Current returns the Coro whose goroutine is the caller, or nil if the
// caller is not running on a Coro (or Getg is not available here). It costs
// a map lookup, about 20 ns: it serves the rarer paths that must find out
// which task, if any, calls them (a settle function of a promise, say).
func Current() *Coro {
	if !HaveGetg {
		return nil
	}
	if c, ok := byG.Load(Getg()); ok {
		return c.(*Coro)
	}
	return nil
}

// registrations counts the goroutines ever registered in byG.
var registrations atomic.Uint64

// A PlainCache remembers the last goroutine found not to be a Coro's, so
// that a path called again and again from one plain goroutine (a channel's
// SendWait) can tell in two atomic loads what Current costs a map lookup
// for. The zero value is empty; it is safe for concurrent use.
//
// A goroutine found plain stays plain while it lives, and its g can only
// become a Coro's after it ends, by a new registration: so an answer
// cached together with the count of registrations before the lookup holds
// as long as that count has not moved. (Two callers may interleave their
// stores and leave one's g with the other's count; the later count is
// still one read before that g was last seen alive, so the reasoning
// stands.)
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
	if _, ok := byG.Load(g); ok {
		return false
	}
	pc.g.Store(g)
	pc.epoch.Store(e)
	return true
}

// Busy reports whether a job is running or suspended on the Coro.
func (c *Coro) Busy() bool { return c.job != nil }

// G identifies the Coro's goroutine (see Getg); 0 before its first Start.
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
