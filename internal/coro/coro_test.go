package coro

import (
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

type plainJob struct {
	pc    *PlainCache
	plain []bool
}

func (j *plainJob) RunJob() { j.plain = append(j.plain, j.pc.Plain(), j.pc.Plain()) }

func TestPlainCacheTellsPlainGoroutinesFromCoroutines(t *testing.T) {
	var pc PlainCache
	if first, cached := pc.Plain(), pc.Plain(); !first || !cached {
		t.Fatal("the test's goroutine is not a Coro's, but Plain said it was")
	}
	// A Coro asks after the plain goroutine has filled the cache.
	c := New()
	defer c.Close()
	j := &plainJob{pc: &pc}
	c.Start(j)
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
