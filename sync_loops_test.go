package weft_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// The sync layer on a Run of several loops: tasks of different loops meet
// on channels, locks and semaphores, and the Run-wide deadlock detection
// sees their waits.

func TestChannelsBetweenTheLoopsOfOneRun(t *testing.T) {
	const producers, per = 8, 500
	led := newLedger()
	var on sync.Map
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](4)
		weft.Group(wt, func(g *weft.TaskGroup) error {
			var left atomic.Int32
			left.Store(producers)
			for p := range producers {
				g.Go(func(wt *weft.Task) error {
					defer func() {
						if left.Add(-1) == 0 {
							c.Close()
						}
					}()
					weft.PinTo(wt, p%2) // senders on both loops
					on.Store(wt.Loop(), true)
					for k := range per {
						v := p*per + k
						if err := c.Send(wt, v); err != nil {
							return err
						}
						led.didSend(v)
						if k%7 == 0 {
							wt.Checkpoint()
						}
					}
					return nil
				})
			}
			for i := range 4 {
				g.Go(func(wt *weft.Task) error {
					weft.PinTo(wt, i%2) // receivers on both loops
					for v, err := range c.All(wt) {
						if err != nil {
							return err
						}
						led.didGet(v)
					}
					return nil
				})
			}
			return nil
		})
	}, weft.WithLoops(2))
	led.check(t)
	if len(led.sent) != producers*per {
		t.Fatalf("%d values sent", len(led.sent))
	}
	if loopsUsed(&on) != 2 {
		t.Fatal("the senders did not run on both loops")
	}
}

func TestDeadlockAcrossLoopsNamesChannelAndLockWaits(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		c := weft.NewChan[int](0)
		var m weft.Mutex
		m.Lock(wt)
		// The two waits on the other loop than main's Select.
		weft.Go(wt, func(wt *weft.Task) (struct{}, error) { weft.PinTo(wt, 1); return struct{}{}, m.Lock(wt) })
		weft.Go(wt, func(wt *weft.Task) (int, error) { weft.PinTo(wt, 1); return c.Recv(wt) })
		_, err := weft.Select(wt, weft.SendCase(weft.NewChan[int](0), 1))
		return struct{}{}, err
	}, weft.WithLoops(2))
	var d *weft.DeadlockError
	if !errors.As(err, &d) || len(d.Blocked) != 3 {
		t.Fatalf("Run = %v, want a deadlock of 3 tasks", err)
	}
	ops := map[string]bool{}
	for _, b := range d.Blocked {
		ops[b.Op] = true
	}
	if !ops["Mutex.Lock"] || !ops["Chan.Recv"] || !ops["Select"] {
		t.Fatalf("blocked ops %v", ops)
	}
}

func TestTickerAndSelectTimeoutsWithSeveralLoopsInVirtualTime(t *testing.T) {
	run(t, func(wt *weft.Task) {
		start := wt.Now()
		weft.Group(wt, func(g *weft.TaskGroup) error {
			for i := range 4 {
				g.Go(func(wt *weft.Task) error {
					weft.PinTo(wt, i%2) // tickers on both loops
					tk := wt.Ticker(time.Second)
					for range 3 {
						if _, err := tk.Recv(wt); err != nil {
							return err
						}
					}
					c := weft.NewChan[int](0)
					i, err := weft.Select(wt, weft.RecvCase(c, nil), weft.AfterCase(time.Second))
					if i != 1 || err != nil {
						return errors.New("the timeout did not fire")
					}
					return nil
				})
			}
			return nil
		})
		if got := wt.Now().Sub(start); got != 4*time.Second {
			t.Errorf("virtual time %v, want 4s", got)
		}
	}, vt, weft.WithLoops(2))
}

// Random cancellations with tasks spread over two loops: every value
// whose Send succeeded is received exactly once.
func TestStressSeveralLoopsDeliverEachSentValueExactlyOnce(t *testing.T) {
	for _, capacity := range []int{0, 2} {
		led := newLedger()
		var next atomic.Int64
		run(t, func(wt *weft.Task) {
			c := weft.NewChan[int](capacity)
			var sem = weft.NewSemaphore(3)
			producer := func(wt *weft.Task) (struct{}, error) {
				for range 40 {
					v := int(next.Add(1))
					if err := c.Send(wt, v); err != nil {
						return struct{}{}, nil
					}
					led.didSend(v)
				}
				return struct{}{}, nil
			}
			consumer := func(wt *weft.Task) (struct{}, error) {
				for {
					if err := sem.Acquire(wt, 1); err != nil {
						return struct{}{}, nil
					}
					v, err := c.Recv(wt)
					sem.Release(1)
					if err != nil {
						return struct{}{}, nil
					}
					led.didGet(v)
				}
			}
			rng := rand.New(rand.NewPCG(uint64(capacity), 3))
			var all []*weft.Promise[struct{}] // every task started
			start := func(f func(*weft.Task) (struct{}, error)) *weft.Promise[struct{}] {
				k := rng.IntN(2) // each task on either loop
				p := weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
					weft.PinTo(wt, k)
					return f(wt)
				})
				all = append(all, p)
				return p
			}
			var live []*weft.Promise[struct{}]
			for range 4 {
				live = append(live, start(producer), start(consumer))
			}
			for range 300 {
				i := rng.IntN(len(live))
				live[i].Cancel()
				if rng.IntN(2) == 0 {
					live[i] = start(producer)
				} else {
					live[i] = start(consumer)
				}
				wt.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
			}
			for _, p := range live {
				p.Cancel()
			}
			for _, p := range all {
				p.Await(wt) // the cancelled ones too: they may still give a value back
			}
			c.Close()
			for {
				v, ok := c.TryRecv()
				if !ok {
					break
				}
				led.didGet(v)
			}
			if sem.Available() != 3 {
				t.Errorf("semaphore: %d permits available, want 3", sem.Available())
			}
		}, weft.WithLoops(2))
		led.check(t)
	}
}

func TestSendWaitIntoARunOfSeveralLoops(t *testing.T) {
	c := weft.NewChan[int](16)
	sum, err := weft.Run(func(wt *weft.Task) (int, error) {
		_, done := weft.NewPromiseExternal[struct{}](wt)
		go func() {
			defer done(struct{}{}, nil)
			for i := 1; i <= 1000; i++ {
				c.SendWait(context.Background(), i)
			}
			c.Close()
		}()
		// The receiver on the other loop than main's.
		return weft.Go(wt, func(wt *weft.Task) (int, error) {
			weft.PinTo(wt, 1)
			s := 0
			for v, err := range c.All(wt) {
				if err != nil {
					return 0, err
				}
				s += v
			}
			return s, nil
		}).Await(wt)
	}, weft.WithLoops(2))
	if sum != 500500 || err != nil {
		t.Fatalf("Run = %d, %v", sum, err)
	}
}
