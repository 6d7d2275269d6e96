package weft_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// TestStatsCountAKnownProgram: main starts tasks that wait in known ways
// and reads the statistics.
func TestStatsCountAKnownProgram(tt *testing.T) {
	tt.Setenv("WEFT_LOOPS", "1")
	var s weft.Stats
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		release := make(chan struct{})
		var started atomic.Bool
		off := weft.Go(t, func(t *weft.Task) (int, error) {
			return weft.Offload(t, func() (int, error) { started.Store(true); <-release; return 0, nil })
		})
		for !started.Load() {
			if err := t.Sleep(time.Millisecond); err != nil {
				return 0, err
			}
		}
		ch := weft.NewChan[int](0)
		var mu weft.Mutex
		mu.Lock(t)
		var ps []*weft.Promise[int]
		for range 3 {
			ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) { return 0, t.Sleep(time.Hour) }))
		}
		for range 2 {
			ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) { return ch.Recv(t) }))
		}
		ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) {
			if err := mu.Lock(t); err != nil {
				return 0, err
			}
			mu.Unlock()
			return 0, nil
		}))
		ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) { return 0, t.Yield() }))
		s = weft.RunStats(t)
		close(release)
		off.Await(t)
		mu.Unlock()
		for _, p := range ps[:5] {
			p.Cancel()
		}
		for _, p := range ps {
			p.Await(t)
		}
		return 0, nil
	})
	if err != nil {
		tt.Fatal(err)
	}
	tt.Logf("%+v", s)
	want := weft.WaitingCounts{Timer: 3, Channel: 2, Lock: 1, Offload: 1}
	if s.Waiting != want {
		tt.Errorf("Waiting = %+v, want %+v", s.Waiting, want)
	}
	if s.Live != 9 || s.Spawned != 9 || s.Running != 1 || s.Runnable != 1 {
		tt.Errorf("Live %d, Spawned %d, Running %d, Runnable %d; want 9, 9, 1, 1", s.Live, s.Spawned, s.Running, s.Runnable)
	}
	// Each of the 8 spawns resumed the child and then main.
	if s.Switches < 17 {
		tt.Errorf("Switches = %d, want at least 17", s.Switches)
	}
	if s.OffloadBusy != 1 || s.OffloadQueued != 0 {
		tt.Errorf("OffloadBusy %d, OffloadQueued %d; want 1, 0", s.OffloadBusy, s.OffloadQueued)
	}
	if s.Loops != 1 || len(s.PerLoop) != 1 || s.PerLoop[0].LoopCounts != s.LoopCounts {
		tt.Errorf("one loop's figures are not the totals: %+v", s)
	}
}

// TestStatsCountTimersAndPolls: a loop that sleeps 10 times has fired 10
// timers and polled the kernel.
func TestStatsCountTimersAndPolls(tt *testing.T) {
	tt.Setenv("WEFT_LOOPS", "1")
	var s weft.Stats
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		for range 10 {
			if err := t.Sleep(time.Millisecond); err != nil {
				return 0, err
			}
		}
		s = weft.RunStats(t)
		return 0, nil
	})
	if err != nil {
		tt.Fatal(err)
	}
	if s.TimersFired != 10 || s.Polls < 10 || s.PollTime < 5*time.Millisecond {
		tt.Errorf("TimersFired %d, Polls %d, PollTime %v: want 10, >= 10, >= 5ms", s.TimersFired, s.Polls, s.PollTime)
	}
}

// TestStatsOnSeveralLoopsAddUp: the totals are the sums of the loops.
func TestStatsOnSeveralLoopsAddUp(tt *testing.T) {
	var s weft.Stats
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		var ps []*weft.Promise[int]
		for i := range 20 {
			ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) {
				weft.PinTo(t, i%3) // sleepers on every loop
				return 0, t.Sleep(50 * time.Millisecond)
			}))
		}
		if err := t.Sleep(10 * time.Millisecond); err != nil {
			return 0, err
		}
		s = weft.RunStats(t)
		for _, p := range ps {
			p.Await(t)
		}
		return 0, nil
	}, weft.WithLoops(3))
	if err != nil {
		tt.Fatal(err)
	}
	var live, timers, busy int
	for _, l := range s.PerLoop {
		live += l.Live
		timers += l.Waiting.Timer
		if l.Waiting.Timer > 0 {
			busy++
		}
	}
	if busy != 3 {
		tt.Errorf("sleepers on %d loops, want 3: %+v", busy, s.PerLoop)
	}
	if s.Loops != 3 || live != s.Live || timers != s.Waiting.Timer || s.Live != 21 || s.Waiting.Timer != 20 {
		tt.Errorf("the loops' figures do not add up to 21 live tasks, 20 sleeping: %+v", s)
	}
}
