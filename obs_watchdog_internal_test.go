package weft

import (
	"sync/atomic"
	"testing"
	"time"
)

// An idle Run is quiet: while every loop sleeps the watchdog sleeps too,
// instead of sampling every quarter of its limit (it once woke 40 times
// a second with the default limit: 5 to 8 ms of CPU a second and 230
// context switches for a server that had nothing to do).
func TestWatchdogSleepsWhileEveryLoopSleeps(t *testing.T) {
	for _, loops := range []int{1, 2} {
		var samples atomic.Int32
		watchdogSampled = func() { samples.Add(1) }
		var idle, busy int32
		_, err := Run(func(t *Task) (int, error) {
			// Busy: a task that holds its loop is watched.
			for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
				t.Checkpoint()
			}
			busy = samples.Load()
			t.Sleep(20 * time.Millisecond) // the watchdog's last samples
			from := samples.Load()
			t.Sleep(400 * time.Millisecond)
			idle = samples.Load() - from
			return 0, nil
		}, WithWatchdog(40*time.Millisecond), WithLoops(loops))
		watchdogSampled = nil
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d loop(s): %d samples in 100 ms of work, %d in 400 ms of sleep", loops, busy, idle)
		if busy < 3 {
			t.Errorf("%d loop(s): %d samples while a task worked for 100 ms: the watchdog does not watch", loops, busy)
		}
		if idle > 2 {
			t.Errorf("%d loop(s): the watchdog sampled %d times in 400 ms while every loop slept", loops, idle)
		}
	}
}
