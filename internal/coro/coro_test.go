package coro

import (
	"runtime"
	"slices"
	"sync"
	"testing"
)

type countJob struct {
	c     *Coro
	steps int
	seen  []int
}

func (j *countJob) RunJob() {
	for i := 0; i < j.steps; i++ {
		j.seen = append(j.seen, i)
		if !j.c.Suspend() {
			return
		}
	}
}

func TestCoroRunsJobsInTurnAndIsReused(t *testing.T) {
	c := New()
	defer c.Close()
	for round := 0; round < 3; round++ {
		j := &countJob{c: c, steps: 2}
		if c.Start(j) {
			t.Fatal("job finished before its first suspension")
		}
		if c.Resume() {
			t.Fatal("job finished before its second suspension")
		}
		if !c.Resume() {
			t.Fatal("job did not finish")
		}
		if len(j.seen) != 2 || c.Busy() {
			t.Fatalf("round %d: seen %v busy %v", round, j.seen, c.Busy())
		}
	}
}

func TestCloseUnwindsSuspendedJob(t *testing.T) {
	c := New()
	j := &countJob{c: c, steps: 10}
	c.Start(j)
	c.Close()
	if len(j.seen) != 1 {
		t.Fatalf("job kept running after Close: %v", j.seen)
	}
}

// A thread is a registered Thread with a goroutine's helpers to run a
// Coro on it as a weft loop does: Switch, Start or Resume, Back.
type thread struct{ Thread }

func newThread(t *testing.T) *thread {
	th := &thread{}
	th.Register()
	t.Cleanup(th.Unregister)
	return th
}

func (th *thread) start(c *Coro, j Job) bool {
	prev := th.Switch(c)
	defer th.Back(prev)
	return c.Start(j)
}

func (th *thread) resume(c *Coro) bool {
	prev := th.Switch(c)
	defer th.Back(prev)
	return c.Resume()
}

type plainJob struct {
	pc    *PlainCache
	plain []bool
}

func (j *plainJob) RunJob() { j.plain = append(j.plain, j.pc.Plain(), j.pc.Plain()) }

func TestPlainCacheTellsPlainGoroutinesFromCoroutines(t *testing.T) {
	if !HaveGetg {
		t.Skip("without a goroutine identifier Plain cannot tell (it is Current's answer, nil)")
	}
	th := newThread(t)
	var pc PlainCache
	if first, cached := pc.Plain(), pc.Plain(); !first || !cached {
		t.Fatal("the test's goroutine is not a Coro's, but Plain said it was")
	}
	// A Coro asks after the plain goroutine has filled the cache.
	c := New()
	defer c.Close()
	j := &plainJob{pc: &pc}
	th.start(c, j)
	if len(j.plain) != 2 || j.plain[0] || j.plain[1] {
		t.Fatalf("inside a Coro Plain said %v, want false twice", j.plain)
	}
	// Another plain goroutine, and back: each is told the truth.
	done := make(chan bool)
	go func() { done <- pc.Plain() }()
	if !<-done || !pc.Plain() {
		t.Fatal("a plain goroutine was taken for a Coro's")
	}
}

// currentJob records Current at each step, suspending in between.
type currentJob struct {
	c    *Coro
	seen []*Coro
}

func (j *currentJob) RunJob() {
	j.seen = append(j.seen, Current())
	if j.c.Suspend() {
		j.seen = append(j.seen, Current())
	}
}

func TestCurrentIsTheCoroTheThreadRuns(t *testing.T) {
	if !HaveGetg {
		t.Skip("no goroutine identifier on " + runtime.GOARCH)
	}
	th := newThread(t)
	if c := Current(); c != nil {
		t.Fatalf("Current in the test's goroutine = %p, want nil", c)
	}
	c := New()
	defer c.Close()
	j := &currentJob{c: c}
	th.start(c, j)
	if got := Current(); got != nil || th.Running() != nil {
		t.Fatalf("between switches Current = %p, Running = %p; want nil", got, th.Running())
	}
	th.resume(c)
	if len(j.seen) != 2 || j.seen[0] != c || j.seen[1] != c {
		t.Fatalf("inside the Coro Current said %v, want %p twice", j.seen, c)
	}
}

// A Coro that resumes another (a driver and the task it drives): Current
// follows the nesting, in and back out.
func TestCurrentFollowsNestedCoros(t *testing.T) {
	if !HaveGetg {
		t.Skip("no goroutine identifier on " + runtime.GOARCH)
	}
	th := newThread(t)
	outer, inner := New(), New()
	defer outer.Close()
	defer inner.Close()
	ij := &currentJob{c: inner}
	var seen []*Coro
	th.start(outer, funcJob(func() {
		seen = append(seen, Current())
		th.start(inner, ij) // inner suspends
		seen = append(seen, Current())
		th.resume(inner) // inner returns
		seen = append(seen, Current())
	}))
	if want := []*Coro{outer, outer, outer}; !slices.Equal(seen, want) {
		t.Errorf("the outer Coro was told %v, want %v", seen, want)
	}
	if want := []*Coro{inner, inner}; !slices.Equal(ij.seen, want) {
		t.Errorf("the inner Coro was told %v, want %v", ij.seen, want)
	}
}

// A Coro suspended on one Thread and resumed by another (a coroutine a
// task takes from one loop to the next) is found on the second, and the
// first names it no more.
func TestCurrentFollowsACoroToAnotherThread(t *testing.T) {
	if !HaveGetg {
		t.Skip("no goroutine identifier on " + runtime.GOARCH)
	}
	th1, th2 := newThread(t), newThread(t)
	c := New()
	defer c.Close()
	j := &currentJob{c: c}
	th1.start(c, j)
	done := make(chan struct{})
	go func() {
		defer close(done)
		th2.resume(c)
	}()
	<-done
	if len(j.seen) != 2 || j.seen[0] != c || j.seen[1] != c {
		t.Fatalf("Current said %v, want %p twice", j.seen, c)
	}
	if th1.Running() != nil || th2.Running() != nil {
		t.Fatal("a Thread still names the Coro after it switched back")
	}
	// Idle, then reused by th2 for another job.
	j2 := &currentJob{c: c}
	th2.start(c, j2)
	th2.resume(c)
	if len(j2.seen) != 2 || j2.seen[0] != c || j2.seen[1] != c {
		t.Fatalf("reused, Current said %v, want %p twice", j2.seen, c)
	}
}

// Threads on several goroutines at once: each Coro is told itself, never
// another's (run under -race).
func TestCurrentWithConcurrentThreads(t *testing.T) {
	if !HaveGetg {
		t.Skip("no goroutine identifier on " + runtime.GOARCH)
	}
	const threads, rounds = 4, 2000
	var wg sync.WaitGroup
	errs := make(chan string, threads)
	for range threads {
		th := newThread(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs := []*Coro{New(), New()}
			defer func() {
				for _, c := range cs {
					c.Close()
				}
			}()
			for i := range rounds {
				c := cs[i%2]
				var got *Coro
				th.start(c, funcJob(func() { got = Current() }))
				if got != c {
					errs <- "a Coro was told another's"
					return
				}
				if Current() != nil {
					errs <- "a Thread's goroutine was taken for a Coro's"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A Coro run outside any registered Thread is not found: the contract of
// Register, checked so that a change to it is seen.
func TestCurrentDoesNotSeeUnregisteredThreads(t *testing.T) {
	var th Thread // never registered
	c := New()
	defer c.Close()
	var got *Coro
	prev := th.Switch(c)
	c.Start(funcJob(func() { got = Current() }))
	th.Back(prev)
	if got != nil {
		t.Fatalf("Current in a Coro of an unregistered Thread = %p, want nil", got)
	}
}

// A closed Coro's goroutine is forgotten: a Thread that still named it
// could not have another goroutine taken for it.
func TestClosedCoroForgetsItsGoroutine(t *testing.T) {
	if !HaveGetg {
		t.Skip("no goroutine identifier on " + runtime.GOARCH)
	}
	c := New()
	c.Start(&countJob{c: c, steps: 1})
	if c.G() == 0 {
		t.Fatal("a started Coro has no goroutine")
	}
	c.Close()
	if g := c.G(); g != 0 {
		t.Fatalf("after Close G() = %x, want 0", g)
	}
}

type funcJob func()

func (f funcJob) RunJob() { f() }

// deep calls f at the bottom of n frames.
//
//go:noinline
func deep(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	deep(n-1, f)
}

func TestRunningSeesTheCoroAtAnyDepth(t *testing.T) {
	if Running() {
		t.Fatal("Running in a plain goroutine")
	}
	c := New()
	defer c.Close()
	for _, depth := range []int{0, 31, 32, 33, 100} {
		var got bool
		if !c.Start(funcJob(func() { deep(depth, func() { got = Running() }) })) {
			t.Fatal("job did not finish")
		}
		if !got {
			t.Errorf("Running at depth %d inside a job = false", depth)
		}
	}
	done := make(chan bool)
	go func() { done <- Running() }()
	if <-done {
		t.Error("Running in a goroutine a job did not start")
	}
}
