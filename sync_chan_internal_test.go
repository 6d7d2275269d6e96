package weft

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitGoWaits polls until c counts n goroutine waits.
func waitGoWaits[T any](c *Chan[T], n int) {
	for {
		c.mu.lock()
		k := c.goWaits
		c.mu.unlock()
		if k == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// A goroutine blocked in SendWait keeps alive the loop of a task waiting
// on the same channel; when it gives up, the loop looks again and reports
// the task as deadlocked.
func TestGoroutineInSendWaitKeepsTheLoopAliveUntilItGivesUp(t *testing.T) {
	c := NewChan[int](1)
	c.TrySend(0) // full
	ctx, cancel := context.WithCancel(context.Background())
	gave := make(chan error, 1)
	go func() { gave <- c.SendWait(ctx, 1) }()
	waitGoWaits(c, 1)
	go func() {
		time.Sleep(30 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err := Run(func(wt *Task) (struct{}, error) {
		return struct{}{}, c.Send(wt, 2)
	})
	var d *DeadlockError
	if !errors.As(err, &d) || d.Blocked[0].Op != "Chan.Send" {
		t.Fatalf("Run = %v, want a deadlock in Chan.Send", err)
	}
	// The goroutine waits until ctx ends: a deadlock reported before
	// that was reported while it still waited. (Measured against ctx, not
	// a clock started later: on a loaded machine the set-up eats into its
	// 30 ms.)
	if ctx.Err() == nil {
		t.Fatalf("deadlock reported after %v, while the goroutine still waited (its context not yet done)", time.Since(start))
	}
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("SendWait = %v", err)
	}
	if v, _ := c.TryRecv(); v != 0 || c.Len() != 0 {
		t.Fatalf("channel holds %d more values", c.Len())
	}
}

// The same through Select: a goroutine in RecvWait on one of its channels
// keeps the selecting task alive, until it gives up.
func TestGoroutineInRecvWaitKeepsASelectAliveUntilItGivesUp(t *testing.T) {
	a, b := NewChan[int](0), NewChan[int](0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	gave := make(chan error, 1)
	go func() {
		_, err := b.RecvWait(ctx)
		gave <- err
	}()
	waitGoWaits(b, 1)
	start := time.Now()
	_, err := Run(func(wt *Task) (int, error) {
		return Select(wt, RecvCase(a, nil), RecvCase(b, nil))
	})
	var d *DeadlockError
	if !errors.As(err, &d) || d.Blocked[0].Op != "Select" {
		t.Fatalf("Run = %v, want a deadlock in Select", err)
	}
	// The goroutine waits until ctx ends: a deadlock reported before
	// that was reported while it still waited. (Measured against ctx, not
	// a clock started later: on a loaded machine the set-up eats into its
	// 30 ms.)
	if ctx.Err() == nil {
		t.Fatalf("deadlock reported after %v, while the goroutine still waited (its context not yet done)", time.Since(start))
	}
	if err := <-gave; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RecvWait = %v", err)
	}
}
