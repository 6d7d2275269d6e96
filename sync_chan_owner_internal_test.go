package weft

import (
	"sync"
	"testing"
	"time"
)

// takeOwnership makes c owned by the calling task's loop, by a run of
// operations (Len) from it.
func takeOwnership[T any](t *testing.T, c *Chan[T]) {
	t.Helper()
	for range ownThreshold + 1 {
		c.Len()
	}
	if o := c.own.Load(); o == nil || o == sharedOwner {
		t.Fatal("a run of operations from one loop did not make the channel its own")
	}
}

func TestChannelIsOwnedByItsFirstLoopUntilAGoroutineUsesIt(t *testing.T) {
	c := NewChan[int](4)
	got := make(chan int, 1)
	_, err := Run(func(wt *Task) (struct{}, error) {
		if c.own.Load() != nil {
			t.Error("a new channel has an owner")
		}
		c.Send(wt, 7)
		if c.own.Load() != nil {
			t.Error("one operation made the channel owned")
		}
		takeOwnership(t, c)
		if c.own.Load() != wt.loop {
			t.Error("the first task's loop does not own the channel")
		}
		p, done := NewPromiseExternal[struct{}](wt)
		go func() {
			v, _ := c.TryRecv() // blocks until the loop hands the channel over
			got <- v
			done(struct{}{}, nil)
		}()
		p.Await(wt) // a scheduling point: the hand-over is served here
		if c.own.Load() != sharedOwner {
			t.Error("the channel is not shared after a goroutine used it")
		}
		c.Send(wt, 8) // now under the lock
		if v, ok := c.TryRecv(); v != 8 || !ok {
			t.Errorf("TryRecv = %v, %v", v, ok)
		}
		return struct{}{}, nil
	})
	if err != nil || <-got != 7 {
		t.Fatalf("Run = %v", err)
	}
}

func TestChannelOfARunThatEndedIsTakenOverByAGoroutine(t *testing.T) {
	c := NewChan[int](1)
	Run(func(wt *Task) (struct{}, error) { takeOwnership(t, c); return struct{}{}, c.Send(wt, 1) })
	done := make(chan int)
	go func() {
		v, _ := c.TryRecv()
		done <- v
	}()
	select {
	case v := <-done:
		if v != 1 || c.own.Load() != sharedOwner {
			t.Fatalf("TryRecv = %d", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the goroutine waits for a Run that has ended")
	}
}

// Two loops that each want the other's channel at the same moment, from
// operations that block the loop's goroutine, both get it: each serves the
// other's request while it waits.
func TestTwoLoopsHandChannelsToEachOtherAtOnce(t *testing.T) {
	ca, cb := NewChan[int](1), NewChan[int](1)
	var ready, wg sync.WaitGroup
	ready.Add(2)
	both := make(chan struct{})
	go func() { ready.Wait(); close(both) }()
	runOne := func(mine, theirs *Chan[int], v int, got *bool) {
		defer wg.Done()
		Run(func(wt *Task) (struct{}, error) {
			takeOwnership(t, mine)
			ready.Done()
			<-both // both loops hold their channel; now each asks for the other's
			*got = theirs.TrySend(v)
			return struct{}{}, nil
		})
	}
	var gotA, gotB bool
	wg.Add(2)
	go runOne(ca, cb, 1, &gotA)
	go runOne(cb, ca, 2, &gotB)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("the loops deadlocked handing channels to each other")
	}
	if !gotA || !gotB {
		t.Fatalf("TrySend: %v %v", gotA, gotB)
	}
	if v, _ := ca.TryRecv(); v != 2 {
		t.Errorf("ca holds %d", v)
	}
	if v, _ := cb.TryRecv(); v != 1 {
		t.Errorf("cb holds %d", v)
	}
}

// A task that needs a channel owned by another Run's loop parks until that
// loop hands it over, and its own loop does not take the wait for a
// deadlock.
func TestTaskWaitsForAHandOverWithoutADeadlock(t *testing.T) {
	c := NewChan[int](1)
	owned := make(chan struct{})
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		Run(func(wt *Task) (struct{}, error) {
			takeOwnership(t, c)
			close(owned)
			p, done := NewPromiseExternal[struct{}](wt)
			go func() { <-release; time.Sleep(20 * time.Millisecond); done(struct{}{}, nil) }()
			p.Await(wt) // serves the hand-over when the other Run asks
			return struct{}{}, nil
		})
	}()
	<-owned
	_, err := Run(func(wt *Task) (struct{}, error) {
		close(release)
		return struct{}{}, c.Send(wt, 5) // parks for the hand-over
	})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.TryRecv(); v != 5 {
		t.Fatalf("channel holds %d", v)
	}
}

// A task of a new Run takes over a channel owned by a Run that has ended.
func TestChannelOfARunThatEndedIsTakenOverByANewRun(t *testing.T) {
	c := NewChan[int](2)
	Run(func(wt *Task) (struct{}, error) { takeOwnership(t, c); return struct{}{}, c.Send(wt, 1) })
	v, err := Run(func(wt *Task) (int, error) {
		if err := c.Send(wt, 2); err != nil { // parks for the hand-over, served at once
			return 0, err
		}
		a, _ := c.Recv(wt)
		b, _ := c.Recv(wt)
		return a*10 + b, nil
	})
	if v != 12 || err != nil || c.own.Load() != sharedOwner {
		t.Fatalf("Run = %d, %v", v, err)
	}
}

// A channel that a task used a little and then handed to a goroutine is
// not owned: the goroutine does not wait for the loop, even if the loop
// is blocked (here on purpose, on a Go channel).
func TestChannelUsedAFewTimesIsNotOwned(t *testing.T) {
	c := NewChan[int](8)
	Run(func(wt *Task) (struct{}, error) {
		for i := range 8 {
			c.Send(wt, i)
		}
		done := make(chan int)
		go func() {
			s := 0
			for range 8 {
				v, _ := c.TryRecv()
				s += v
			}
			done <- s
		}()
		select { // blocks the loop: the goroutine must not need it
		case s := <-done:
			if s != 28 {
				t.Errorf("sum %d", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the goroutine waited for the blocked loop")
		}
		return struct{}{}, nil
	})
}

// A second loop's task on an unowned channel makes it shared.
func TestSecondLoopMakesAnUnownedChannelShared(t *testing.T) {
	c := NewChan[int](1)
	Run(func(wt *Task) (struct{}, error) { return struct{}{}, c.Send(wt, 1) })
	Run(func(wt *Task) (int, error) { return c.Recv(wt) })
	if c.own.Load() != sharedOwner {
		t.Fatal("used by two loops, the channel is not shared")
	}
}
