package weft_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

// Each weft benchmark sits beside its Go-native twin; `cd bench && go run .
// core` prints them side by side with the ratios.

func BenchmarkManySleeps(b *testing.B) { benchmarks.ManySleeps(b) }

func TestHundredThousandCancelledSleepsLeaveNothing(t *testing.T) {
	const n = 100_000
	run(t, func(wt *weft.Task) {
		ps := make([]*weft.Promise[int], n)
		for i := range ps {
			ps[i] = weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) })
		}
		for _, p := range ps {
			p.Cancel()
		}
		for _, p := range ps {
			if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
		}
		if pending := weft.PendingTimers(wt); pending != 0 {
			t.Fatalf("%d timers left after cancelling every sleep", pending)
		}
	})
}

func TestSleepTiesWakeInFIFOOrder(t *testing.T) {
	var log []int
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[struct{}]
		for i := 0; i < 10; i++ {
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				wt.Sleep(time.Hour)
				log = append(log, i)
			}))
		}
		weft.All(wt, ps...)
	}, weft.WithVirtualTime(time.Unix(0, 0)), oneLoop)
	for i, v := range log {
		if v != i {
			t.Fatalf("equal deadlines woke out of order: %v", log)
		}
	}
}

func TestSleepWakesInDeadlineOrder(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // it checks one loop's order (and shares log without a lock)
	var log []int
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[struct{}]
		for _, ms := range []int{50, 10, 40, 20, 30} {
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				wt.Sleep(time.Duration(ms) * time.Millisecond)
				log = append(log, ms)
			}))
		}
		weft.All(wt, ps...)
	})
	for i := 1; i < len(log); i++ {
		if log[i] < log[i-1] {
			t.Fatalf("wake order %v", log)
		}
	}
}
