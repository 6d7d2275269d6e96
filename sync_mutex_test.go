package weft_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

func TestMutexSuspendsTheTaskNotTheLoop(t *testing.T) {
	var log []string
	run(t, func(wt *weft.Task) {
		var m weft.Mutex
		holder := spawn(wt, func(wt *weft.Task) {
			m.Lock(wt)
			log = append(log, "holder locked")
			wt.Sleep(10 * time.Millisecond) // holds the lock across a suspension
			log = append(log, "holder unlocks")
			m.Unlock()
		})
		waiter := spawn(wt, func(wt *weft.Task) {
			m.Lock(wt)
			log = append(log, "waiter locked")
			m.Unlock()
		})
		other := spawn(wt, func(wt *weft.Task) { log = append(log, "other runs meanwhile") })
		holder.Await(wt)
		waiter.Await(wt)
		other.Await(wt)
	}, vt)
	want := []string{"holder locked", "other runs meanwhile", "holder unlocks", "waiter locked"}
	if !slices.Equal(log, want) {
		t.Fatalf("log %v, want %v", log, want)
	}
}

func TestMutexServesWaitersInOrderAndNoOneBarges(t *testing.T) {
	var order []string
	run(t, func(wt *weft.Task) {
		var m weft.Mutex
		m.Lock(wt)
		var ps []*weft.Promise[struct{}]
		for _, name := range []string{"a", "b", "c"} {
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				m.Lock(wt)
				order = append(order, name)
				wt.Yield()
				m.Unlock()
			}))
		}
		m.Unlock() // handed to a, which has not run yet
		if m.TryLock() {
			t.Error("TryLock took a lock handed to a waiter")
		}
		late := spawn(wt, func(wt *weft.Task) {
			m.Lock(wt)
			order = append(order, "late")
			m.Unlock()
		})
		for _, p := range append(ps, late) {
			p.Await(wt)
		}
		if !m.TryLock() {
			t.Error("TryLock of a free Mutex failed")
		}
	})
	if want := []string{"a", "b", "c", "late"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

func TestUnlockOfAnUnlockedMutexPanics(t *testing.T) {
	var m weft.Mutex
	msg := panicMessage(m.Unlock)
	if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "unlocked") {
		t.Fatalf("panic %q", msg)
	}
}

func TestCancelledLockDoesNotHoldTheLock(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var m weft.Mutex
		m.Lock(wt)
		p := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, m.Lock(wt) })
		p.Cancel()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Lock = %v", err)
		}
		m.Unlock()
		if !m.TryLock() {
			t.Fatal("the lock is held after the cancelled Lock")
		}
	})
}

// A lock handed to a waiter cancelled before it resumes goes to the next.
func TestLockHandedToACancelledWaiterGoesToTheNext(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var m weft.Mutex
		m.Lock(wt)
		first := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, m.Lock(wt) })
		second := weft.Go(wt, func(wt *weft.Task) (bool, error) {
			if err := m.Lock(wt); err != nil {
				return false, err
			}
			m.Unlock()
			return true, nil
		})
		m.Unlock()     // handed to first
		first.Cancel() // before it resumes
		if _, err := first.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("first = %v", err)
		}
		if ok, err := second.Await(wt); !ok || err != nil {
			t.Fatalf("second = %v, %v", ok, err)
		}
		if !m.TryLock() {
			t.Fatal("the lock leaked")
		}
	})
}

func TestDeadlockNamesMutexLock(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		var a, b weft.Mutex
		a.Lock(wt)
		weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
			b.Lock(wt)
			wt.Yield()
			return struct{}{}, a.Lock(wt) // taskLock
		})
		return struct{}{}, b.Lock(wt) // mainLock
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v", err)
	}
	if op, site := blockedOp(d, "main"); op != "Mutex.Lock" || site != siteOf(t, "mainLock") {
		t.Errorf("main: %s at %s", op, site)
	}
	if op, site := blockedOp(d, "task 2"); op != "Mutex.Lock" || site != siteOf(t, "taskLock") {
		t.Errorf("task 2: %s at %s", op, site)
	}
}

// Tasks of two Runs exclude each other; Unlock works from a goroutine too.
func TestMutexExcludesTasksOfTwoRuns(t *testing.T) {
	var m weft.Mutex
	counter := 0
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
				weft.NewPromiseExternal[struct{}](wt) // the other Run is outside this loop
				return struct{}{}, weft.Group(wt, func(g *weft.TaskGroup) error {
					for range 4 {
						g.Go(func(wt *weft.Task) error {
							for range 200 {
								if err := m.Lock(wt); err != nil {
									return err
								}
								v := counter
								wt.Yield() // another task may run; none may enter
								counter = v + 1
								m.Unlock()
							}
							return nil
						})
					}
					return nil
				})
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if counter != 2*4*200 {
		t.Fatalf("counter = %d", counter)
	}
	run(t, func(wt *weft.Task) {
		m.Lock(wt)
		done := make(chan struct{})
		go func() { m.Unlock(); close(done) }()
		<-done
		if !m.TryLock() {
			t.Fatal("Unlock from a goroutine did not release")
		}
	})
}

// The lock beside its Go twin.

func BenchmarkWeftMutex(b *testing.B) { benchmarks.WeftMutex(b) }

func BenchmarkSyncMutex(b *testing.B) { benchmarks.SyncMutex(b) }
