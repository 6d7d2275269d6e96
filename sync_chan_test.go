package weft_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

func TestChanDeliversValuesInSendOrder(t *testing.T) {
	for _, capacity := range []int{0, 1, 3, 100} {
		t.Run(fmt.Sprint("cap", capacity), func(t *testing.T) {
			var got []int
			run(t, func(wt *weft.Task) {
				c := weft.NewChan[int](capacity)
				spawn(wt, func(wt *weft.Task) {
					for i := range 50 {
						if err := c.Send(wt, i); err != nil {
							t.Errorf("Send(%d) = %v", i, err)
						}
					}
					c.Close()
				})
				for v, err := range c.All(wt) {
					if err != nil {
						t.Fatalf("All: %v", err)
					}
					got = append(got, v)
				}
			})
			if want := seq(0, 50); !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}

func TestSendSuspendsWhileFullAndRecvWhileEmpty(t *testing.T) {
	var log []string
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](2)
		p := spawn(wt, func(wt *weft.Task) {
			for i := range 3 {
				c.Send(wt, i)
				log = append(log, fmt.Sprint("sent ", i))
			}
		})
		// The child ran first: two values fit, the third waits.
		log = append(log, fmt.Sprint("main: len ", c.Len()))
		for range 3 {
			v, _ := c.Recv(wt)
			log = append(log, fmt.Sprint("got ", v))
		}
		p.Await(wt)
		q := spawn(wt, func(wt *weft.Task) {
			v, _ := c.Recv(wt)
			log = append(log, fmt.Sprint("late got ", v))
		})
		log = append(log, "main: receiver waits")
		c.Send(wt, 9)
		q.Await(wt)
	})
	want := []string{"sent 0", "sent 1", "main: len 2", "got 0", "got 1", "got 2",
		"sent 2", "main: receiver waits", "late got 9"}
	if !slices.Equal(log, want) {
		t.Fatalf("log:\n%v\nwant:\n%v", log, want)
	}
}

func TestRendezvousSendWaitsForTheReceiver(t *testing.T) {
	var log []string
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[string](0)
		p := spawn(wt, func(wt *weft.Task) {
			log = append(log, "send")
			c.Send(wt, "x")
			log = append(log, "sent")
		})
		if c.TrySend("y") {
			t.Error("TrySend on a rendezvous channel with no receiver succeeded")
		}
		log = append(log, "recv")
		v, err := c.Recv(wt)
		log = append(log, "got "+v)
		if err != nil {
			t.Error(err)
		}
		p.Await(wt)
	}, vt)
	if want := []string{"send", "recv", "got x", "sent"}; !slices.Equal(log, want) {
		t.Fatalf("log %v, want %v", log, want)
	}
}

func TestZeroChanIsARendezvous(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var c weft.Chan[int]
		spawn(wt, func(wt *weft.Task) { c.Send(wt, 7) })
		if v, err := c.Recv(wt); v != 7 || err != nil || c.Cap() != 0 {
			t.Fatalf("Recv = %v, %v; cap %d", v, err, c.Cap())
		}
	})
}

func TestWaitingSendersAndReceiversAreServedInArrivalOrder(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // it checks one loop's order
	var got []string
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[string](1)
		c.Send(wt, "pre")
		for _, name := range []string{"a", "b", "c"} {
			spawn(wt, func(wt *weft.Task) { c.Send(wt, name) })
		}
		for range 4 {
			v, _ := c.Recv(wt)
			got = append(got, v)
		}
		// Receivers now: the first to wait gets the first value.
		for _, name := range []string{"r1", "r2", "r3"} {
			spawn(wt, func(wt *weft.Task) {
				v, _ := c.Recv(wt)
				got = append(got, name+"="+v)
			})
		}
		for _, v := range []string{"x", "y", "z"} {
			c.Send(wt, v)
		}
		wt.Yield()
	})
	want := []string{"pre", "a", "b", "c", "r1=x", "r2=y", "r3=z"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestCloseWakesWaitersAndReceiversDrainThenGetEOF(t *testing.T) {
	run(t, func(wt *weft.Task) {
		full := weft.NewChan[int](1)
		full.Send(wt, 1)
		sender := weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
			return struct{}{}, full.Send(wt, 2) // waits: full
		})
		empty := weft.NewChan[int](1)
		receiver := weft.Go(wt, func(wt *weft.Task) (int, error) { return empty.Recv(wt) })
		full.Close()
		empty.Close()
		full.Close() // twice: nothing happens
		if _, err := sender.Await(wt); !errors.Is(err, weft.ErrClosed) {
			t.Errorf("waiting Send after Close = %v, want ErrClosed", err)
		}
		if _, err := receiver.Await(wt); err != io.EOF {
			t.Errorf("waiting Recv after Close = %v, want io.EOF", err)
		}
		if err := full.Send(wt, 3); !errors.Is(err, weft.ErrClosed) {
			t.Errorf("Send after Close = %v", err)
		}
		if full.TrySend(3) {
			t.Error("TrySend after Close succeeded")
		}
		if v, err := full.Recv(wt); v != 1 || err != nil {
			t.Errorf("first Recv after Close = %v, %v; want the buffered 1", v, err)
		}
		if _, err := full.Recv(wt); err != io.EOF {
			t.Errorf("Recv of a drained closed channel = %v", err)
		}
		if _, ok := full.TryRecv(); ok || !full.Closed() {
			t.Error("TryRecv of a drained closed channel succeeded")
		}
	})
}

func TestCloseWithErrorReachesReceiversAfterTheValues(t *testing.T) {
	errBroken := errors.New("broken pipe upstream")
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](4)
		c.Send(wt, 1)
		c.Send(wt, 2)
		c.CloseWithError(errBroken)
		c.CloseWithError(errors.New("second")) // ignored
		var got []int
		var last error
		for v, err := range c.All(wt) {
			if err != nil {
				last = err
				continue
			}
			got = append(got, v)
		}
		if !slices.Equal(got, []int{1, 2}) || last != errBroken {
			t.Errorf("All: %v then %v", got, last)
		}
		err := c.Send(wt, 3)
		if !errors.Is(err, weft.ErrClosed) || !errors.Is(err, errBroken) {
			t.Errorf("Send after CloseWithError = %v", err)
		}
	})
}

func TestTrySendAndTryRecvNeverWait(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](2)
		if _, ok := c.TryRecv(); ok {
			t.Error("TryRecv on an empty channel succeeded")
		}
		if !c.TrySend(1) || !c.TrySend(2) || c.TrySend(3) {
			t.Error("TrySend: want true, true, false on capacity 2")
		}
		if v, ok := c.TryRecv(); v != 1 || !ok {
			t.Errorf("TryRecv = %v, %v", v, ok)
		}
		// TryRecv from a full buffer lets a waiting sender in.
		c.TrySend(3)
		spawn(wt, func(wt *weft.Task) { c.Send(wt, 4) })
		var got []int
		for range 3 {
			v, _ := c.TryRecv()
			got = append(got, v)
		}
		if !slices.Equal(got, []int{2, 3, 4}) {
			t.Errorf("drained %v", got)
		}
	})
}

func TestNewChanWithNegativeCapacityPanics(t *testing.T) {
	msg := panicMessage(func() { weft.NewChan[int](-1) })
	if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "negative") {
		t.Fatalf("panic %q", msg)
	}
}

func TestCancelledSendSentNothing(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](1)
		c.Send(wt, 1)
		p := weft.Go(wt, func(wt *weft.Task) (struct{}, error) { return struct{}{}, c.Send(wt, 2) })
		p.Cancel()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Send = %v", err)
		}
		c.Close()
		var got []int
		for v := range c.All(wt) {
			got = append(got, v)
		}
		if !slices.Equal(got, []int{1}) {
			t.Fatalf("received %v, want only [1]", got)
		}
	})
}

func TestCancelledRecvReceivedNothing(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](1)
		p := weft.Go(wt, func(wt *weft.Task) (int, error) { return c.Recv(wt) })
		p.Cancel()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Recv = %v", err)
		}
		c.Send(wt, 5)
		if v, ok := c.TryRecv(); v != 5 || !ok {
			t.Fatalf("the value after a cancelled Recv: %v, %v", v, ok)
		}
	})
}

func TestCancelledTaskSendAndRecvFailAtOnce(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // it checks one loop's order
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](1)
		p := weft.Go(wt, func(wt *weft.Task) (string, error) {
			wt.Yield() // cancelled meanwhile
			serr := c.Send(wt, 1)
			_, rerr := c.Recv(wt)
			return fmt.Sprint(errors.Is(serr, context.Canceled), errors.Is(rerr, context.Canceled)), nil
		})
		p.Cancel()
		if v, _ := p.Await(wt); v != "true true" || c.Len() != 0 {
			t.Fatalf("Send and Recv in a cancelled task: %s, len %d", v, c.Len())
		}
	})
}

// A value handed to a receiver that is cancelled before it resumes goes to
// the next receiver: the cancelled one returns the cancellation.
func TestValueHandedToACancelledReceiverGoesToTheNext(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[string](0)
		first := weft.Go(wt, func(wt *weft.Task) (string, error) { return c.Recv(wt) })
		second := weft.Go(wt, func(wt *weft.Task) (string, error) { return c.Recv(wt) })
		c.Send(wt, "v") // handed to first, which has not resumed yet
		first.Cancel()  // reaches first before it resumes
		wt.Yield()
		if v, err := first.Await(wt); v != "" || !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled receiver returned %q, %v", v, err)
		}
		if v, err := second.Await(wt); v != "v" || err != nil {
			t.Errorf("next receiver got %q, %v", v, err)
		}
	})
}

// With no other receiver, the values go back to the channel, ahead of the
// buffered ones and in their send order.
func TestValuesHandedToCancelledReceiversGoBackInOrder(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](1)
		var rs []*weft.Promise[int]
		for range 3 {
			rs = append(rs, weft.Go(wt, func(wt *weft.Task) (int, error) { return c.Recv(wt) }))
		}
		for i := 1; i <= 4; i++ {
			c.Send(wt, i) // 1, 2, 3 handed to the receivers; 4 buffered
		}
		for _, r := range rs {
			r.Cancel()
		}
		for _, r := range rs {
			if _, err := r.Await(wt); !errors.Is(err, context.Canceled) {
				t.Fatalf("receiver returned %v", err)
			}
		}
		c.Close()
		var got []int
		for v := range c.All(wt) {
			got = append(got, v)
		}
		if !slices.Equal(got, []int{1, 2, 3, 4}) {
			t.Fatalf("drained %v, want [1 2 3 4]", got)
		}
	})
}

func TestDeadlockNamesChannelWaitsAndTheirLines(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		c := weft.NewChan[int](0)
		d := weft.NewChan[int](0)
		weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
			return struct{}{}, d.Send(wt, 1) // sendWait
		})
		return c.Recv(wt) // recvWait
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) || !d.MainBlocked {
		t.Fatalf("Run = %v, want a deadlock", err)
	}
	if op, site := blockedOp(d, "main"); op != "Chan.Recv" || site != siteOf(t, "recvWait") {
		t.Errorf("main: %s at %s", op, site)
	}
	if op, site := blockedOp(d, "task 2"); op != "Chan.Send" || site != siteOf(t, "sendWait") {
		t.Errorf("task 2: %s at %s", op, site)
	}
	if !strings.Contains(err.Error(), "Chan.Recv at "+siteOf(t, "recvWait")) {
		t.Errorf("message: %v", err)
	}
}

func TestDeadlockInsideAllNamesTheUsersLoop(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		c := weft.NewChan[int](0)
		for v, err := range c.All(wt) { // rangeWait
			return v, err
		}
		return 0, nil
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v", err)
	}
	if op, site := blockedOp(d, "main"); op != "Chan.Recv" || site != siteOf(t, "rangeWait") {
		t.Errorf("main: %s at %s", op, site)
	}
}

func TestAllYieldsTheCancellationLast(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](4)
		c.Send(wt, 1)
		p := weft.Go(wt, func(wt *weft.Task) ([]string, error) {
			var got []string
			for v, err := range c.All(wt) {
				got = append(got, fmt.Sprint(v, " ", errors.Is(err, context.Canceled)))
			}
			return got, nil
		})
		p.Cancel()
		got, _ := p.Await(wt)
		if want := []string{"1 false", "0 true"}; !slices.Equal(got, want) {
			t.Fatalf("All yielded %v, want %v", got, want)
		}
	})
}

func TestSendWaitAndRecvWaitFromGoroutines(t *testing.T) {
	const n = 1000
	c := weft.NewChan[int](8)
	out := weft.NewChan[int](0)
	var got []int
	run(t, func(wt *weft.Task) {
		p, done := weft.NewPromiseExternal[struct{}](wt)
		go func() {
			defer done(struct{}{}, nil)
			for i := range n {
				if err := c.SendWait(context.Background(), i); err != nil {
					panic(err)
				}
			}
			c.Close()
		}()
		// A second goroutine receives what the task forwards.
		q, qdone := weft.NewPromiseExternal[[]int](wt)
		go func() {
			var back []int
			for {
				v, err := out.RecvWait(context.Background())
				if err != nil {
					qdone(back, nil)
					return
				}
				back = append(back, v)
			}
		}()
		for v, err := range c.All(wt) {
			if err != nil {
				t.Fatal(err)
			}
			out.Send(wt, v)
		}
		out.Close()
		p.Await(wt)
		got, _ = q.Await(wt)
	})
	if !slices.Equal(got, seq(0, n)) {
		t.Fatalf("round trip through goroutines: %d values, first %v", len(got), got[:min(len(got), 10)])
	}
}

func TestSendWaitHonoursItsContext(t *testing.T) {
	c := weft.NewChan[int](0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.SendWait(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SendWait with nobody receiving = %v", err)
	}
	if _, err := c.RecvWait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RecvWait with a done context = %v", err)
	}
	if _, ok := c.TryRecv(); ok {
		t.Fatal("the abandoned SendWait left its value behind")
	}
	c.Close()
	if _, err := c.RecvWait(context.Background()); err != io.EOF {
		t.Fatalf("RecvWait on a closed channel = %v", err)
	}
	if err := c.SendWait(context.Background(), 1); !errors.Is(err, weft.ErrClosed) {
		t.Fatalf("SendWait on a closed channel = %v", err)
	}
}

func TestSendWaitFromATaskPanics(t *testing.T) {
	if skipGoroutineCheck() {
		t.Skip("no goroutine identity on this platform: a task's goroutine cannot be told apart")
	}
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](1)
		msg := panicMessage(func() { c.SendWait(context.Background(), 1) })
		if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "Send") {
			t.Errorf("SendWait from a task: %q", msg)
		}
		msg = panicMessage(func() { c.RecvWait(context.Background()) })
		if !strings.HasPrefix(msg, "weft: ") {
			t.Errorf("RecvWait from a task: %q", msg)
		}
		// The channel remembers the last plain goroutine it checked: a
		// task is still told apart after one has used it.
		done := make(chan error)
		go func() { done <- c.SendWait(context.Background(), 2) }()
		if err := <-done; err != nil {
			t.Fatalf("SendWait from a goroutine: %v", err)
		}
		msg = panicMessage(func() { c.SendWait(context.Background(), 3) })
		if !strings.HasPrefix(msg, "weft: ") {
			t.Errorf("SendWait from a task after a goroutine's: %q", msg)
		}
	})
}

func TestTasksOfTwoRunsShareAChannel(t *testing.T) {
	c := weft.NewChan[int](0)
	const n = 500
	sum := make(chan int, 1)
	go func() {
		s, err := weft.Run(func(wt *weft.Task) (int, error) {
			// The other Run's tasks are outside this loop: keep it alive
			// until main finishes.
			weft.NewPromiseExternal[struct{}](wt)
			s := 0
			for v, err := range c.All(wt) {
				if err != nil {
					return s, err
				}
				s += v
			}
			return s, nil
		})
		if err != nil {
			s = -1
		}
		sum <- s
	}()
	run(t, func(wt *weft.Task) {
		weft.NewPromiseExternal[struct{}](wt)
		for i := 1; i <= n; i++ {
			if err := c.Send(wt, i); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
	})
	if s := <-sum; s != n*(n+1)/2 {
		t.Fatalf("sum = %d", s)
	}
}

// Channels and the goroutine bridge, each beside its Go twin.

func BenchmarkWeftChanPingPong0(b *testing.B) { benchmarks.WeftChanPingPong0(b) }

func BenchmarkGoChanPingPong0(b *testing.B) { benchmarks.GoChanPingPong0(b) }

func BenchmarkWeftChanPingPong1(b *testing.B) { benchmarks.WeftChanPingPong1(b) }

func BenchmarkGoChanPingPong1(b *testing.B) { benchmarks.GoChanPingPong1(b) }

func BenchmarkWeftChanThroughput(b *testing.B) { benchmarks.WeftChanThroughput(b) }

func BenchmarkGoChanThroughput(b *testing.B) { benchmarks.GoChanThroughput(b) }

func BenchmarkWeftSendWait(b *testing.B) { benchmarks.WeftSendWait(b) }

func BenchmarkGoChanSendRecv(b *testing.B) { benchmarks.GoChanSendRecv(b) }

// Producers and consumers (some in Select) are cancelled at random while
// they wait or just after a handoff; every value whose Send succeeded is
// received exactly once, and no other.
func TestStressRandomCancellationsDeliverEachSentValueExactlyOnce(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // its tasks share state without locks, as tasks of one loop may
	for _, capacity := range []int{0, 1, 3} {
		for seed := uint64(1); seed <= 4; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(capacity)))
			led := newLedger()
			run(t, func(wt *weft.Task) {
				c := weft.NewChan[int](capacity)
				next := 0
				producer := func(wt *weft.Task) (struct{}, error) {
					for range 30 { // bounded, or the traffic would hold virtual time still
						next++
						v := next
						if err := c.Send(wt, v); err != nil {
							return struct{}{}, nil
						}
						led.didSend(v)
						if rng.IntN(3) == 0 {
							wt.Yield()
						}
					}
					return struct{}{}, nil
				}
				consumer := func(wt *weft.Task) (struct{}, error) {
					for {
						var v int
						var err error
						if rng.IntN(2) == 0 {
							v, err = c.Recv(wt)
						} else {
							var i int
							i, err = weft.Select(wt, weft.RecvCase(c, &v), weft.AfterCase(time.Duration(1+rng.IntN(2))*time.Millisecond))
							if err == nil && i == 1 {
								continue // timed out: nothing received
							}
						}
						if err != nil {
							return struct{}{}, nil
						}
						led.didGet(v)
					}
				}
				var all []*weft.Promise[struct{}] // every task started
				start := func(f func(*weft.Task) (struct{}, error)) *weft.Promise[struct{}] {
					p := weft.Go(wt, f)
					all = append(all, p)
					return p
				}
				var live []*weft.Promise[struct{}]
				for range 3 {
					live = append(live, start(producer), start(consumer))
				}
				for range 400 {
					switch rng.IntN(4) {
					case 0:
						wt.Yield()
					case 1:
						wt.Sleep(time.Duration(rng.IntN(2)) * time.Millisecond)
					case 2:
						// Cancel someone, start a replacement of either kind.
						i := rng.IntN(len(live))
						live[i].Cancel()
						if rng.IntN(2) == 0 {
							live[i] = start(producer)
						} else {
							live[i] = start(consumer)
						}
					case 3:
						// A handoff and a cancellation before the receiver resumes.
						i := rng.IntN(len(live))
						if c.TrySend(-next - 1) {
							next++
							led.didSend(-next)
						}
						live[i].Cancel()
						live[i] = start(consumer)
					}
				}
				for _, p := range live {
					p.Cancel()
				}
				for _, p := range all {
					p.Await(wt) // the cancelled ones too: they may still give a value back
				}
				c.Close()
				for v, err := range c.All(wt) {
					if err != nil {
						t.Fatal(err)
					}
					led.didGet(v)
				}
			}, vt)
			led.check(t)
			t.Logf("capacity %d seed %d: %d values sent", capacity, seed, len(led.sent))
			if t.Failed() {
				t.Fatalf("capacity %d, seed %d", capacity, seed)
			}
		}
	}
}

// The same across two Runs and plain goroutines, with contexts that
// expire at random: run it with -race.
func TestStressTwoRunsAndGoroutinesDeliverEachSentValueExactlyOnce(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // its tasks share state without locks, as tasks of one loop may
	for _, capacity := range []int{0, 2} {
		led := newLedger()
		c := weft.NewChan[int](capacity)
		const perSender = 300
		var wg sync.WaitGroup
		// Goroutine senders and receivers, with short random deadlines.
		sendersDone := make(chan struct{})
		var senders sync.WaitGroup
		for g := range 2 {
			senders.Add(1)
			go func() {
				defer senders.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 7))
				for k := range perSender {
					v := 1_000_000*(g+1) + k
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(200))*time.Microsecond)
					if c.SendWait(ctx, v) == nil {
						led.didSend(v)
					}
					cancel()
				}
			}()
		}
		for g := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 9))
				for {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(300))*time.Microsecond)
					v, err := c.RecvWait(ctx)
					cancel()
					if err == nil {
						led.didGet(v)
						continue
					}
					if err != context.DeadlineExceeded {
						return // closed
					}
				}
			}()
		}
		// Two Runs: tasks that send and receive, cancelled at random.
		runOne := func(id int) {
			defer wg.Done()
			_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
				// The senders are outside this loop: await them through an
				// external promise, which keeps the Run alive meanwhile.
				allSent, settle := weft.NewPromiseExternal[struct{}](wt)
				go func() { <-sendersDone; settle(struct{}{}, nil) }()
				rng := rand.New(rand.NewPCG(uint64(id), 11))
				next := 0
				var ps []*weft.Promise[struct{}]
				for range 4 {
					ps = append(ps, weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
						for {
							v, err := c.Recv(wt)
							if err != nil {
								return struct{}{}, nil
							}
							led.didGet(v)
						}
					}))
					ps = append(ps, weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
						for range perSender / 4 {
							next++
							v := 10_000_000*(id+1) + next
							if err := c.Send(wt, v); err != nil {
								return struct{}{}, nil
							}
							led.didSend(v)
						}
						return struct{}{}, nil
					}))
				}
				for range 20 {
					wt.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
					ps[rng.IntN(len(ps))].Cancel()
				}
				allSent.Await(wt)
				for _, p := range ps {
					p.Cancel()
					p.Await(wt)
				}
				return struct{}{}, nil
			})
			if err != nil {
				t.Error(err)
			}
		}
		wg.Add(2)
		go runOne(1)
		go runOne(2)
		senders.Wait()
		close(sendersDone)
		c.Close() // ends the goroutine receivers; then drain what is left

		wg.Wait()
		for {
			v, ok := c.TryRecv()
			if !ok {
				break
			}
			led.didGet(v)
		}
		led.check(t)
		t.Logf("capacity %d: %d values sent", capacity, len(led.sent))
	}
}

// Channels on a Run of several loops: tasks of different loops meet on
// them, and goroutines send into them.

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

// A goroutine's SendWait hands a value to a task parked in Recv just as
// another goroutine settles the Run's last external promise: whatever the
// order, the value is received or SendWait returns an error, never both
// lost and accepted. The deadlock check that the settle triggers used to
// find the task parked with no goroutine waiting on the channel (the
// handing goroutine had already left it, its wake not yet posted), report
// a deadlock and give the value back to a channel nobody would read again:
// 56 of 20,000 Runs here.
func TestSendWaitToAParkedTaskAsTheLastExternalPromiseSettles(t *testing.T) {
	for _, loops := range []int{1, 2} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) { sendWaitAsTheLastPromiseSettles(t, loops) })
	}
}

func sendWaitAsTheLastPromiseSettles(t *testing.T, loops int) {
	runs := 20000 // about 1% of them lost the value before the fix
	if raceEnabled {
		runs = 4000
	}
	if testing.Short() {
		runs = 2000
	}
	lost, deadlocks := 0, 0
	for range runs {
		ctx, cancel := context.WithCancel(context.Background())
		var sendErr error
		var wg sync.WaitGroup
		got, err := weft.Run(func(wt *weft.Task) (int, error) {
			c := weft.NewChan[int](0)
			_, settle := weft.NewPromiseExternal[struct{}](wt)
			start := make(chan struct{})
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				sendErr = c.SendWait(ctx, 42)
			}()
			go func() {
				defer wg.Done()
				<-start
				settle(struct{}{}, nil)
			}()
			close(start)
			return c.Recv(wt)
		}, weft.WithLoops(loops))
		cancel() // a SendWait that found no receiver gives up
		wg.Wait()
		var d *weft.DeadlockError
		switch {
		case err == nil && got == 42:
			if sendErr != nil {
				t.Fatalf("the value was received but SendWait returned %v", sendErr)
			}
		case errors.As(err, &d):
			deadlocks++
			if sendErr == nil {
				lost++
			}
		default:
			t.Fatalf("Run: %d, %v", got, err)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d Runs: SendWait returned nil but the value was never received (the Run reported a deadlock)", lost, runs)
	}
	t.Logf("%d Runs, %d deadlocks (the send came too late: SendWait gave up)", runs, deadlocks)
}
