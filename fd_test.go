package weft_test

import (
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// A Run that touches no descriptor opens none: the readiness backends
// (epoll, poll) open their kernel objects on first use, which is most of
// an empty Run's cost. Spawns, sleeps, timers, channels and wakes from
// other goroutines all work without them. (A loop that sleeps for less
// than a millisecond opens its backend: its timeout is precise.)
func TestARunWithoutIOOpensNoDescriptor(t *testing.T) {
	before := openFDs(t)
	if before < 0 {
		t.Skip("no /proc/self/fd")
	}
	for _, loops := range []int{1, 2} {
		var during int
		var backend weft.Backend
		_, err := weft.Run(func(wt *weft.Task) (int, error) {
			backend = weft.RunStats(wt).Backend
			ch := weft.NewChan[int](0)
			weft.Go(wt, func(wt *weft.Task) (int, error) {
				wt.Sleep(2 * time.Millisecond)
				return 0, ch.Send(wt, 1)
			})
			if _, err := ch.Recv(wt); err != nil {
				return 0, err
			}
			p, settle := weft.NewPromiseExternal[int](wt)
			go func() { time.Sleep(time.Millisecond); settle(1, nil) }()
			if _, err := p.Await(wt); err != nil {
				return 0, err
			}
			during = openFDs(t)
			return 0, nil
		}, weft.WithLoops(loops))
		if err != nil {
			t.Fatal(err)
		}
		if backend == "io_uring" {
			t.Skip("io_uring opens its ring at once (it is never lazy)")
		}
		if during != before {
			t.Errorf("%d loops, %s: %d descriptors open during a Run without I/O, %d before", loops, backend, during, before)
		}
	}
}
