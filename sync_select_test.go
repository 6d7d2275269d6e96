package weft_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestSelectFiresTheReadyCase(t *testing.T) {
	run(t, func(wt *weft.Task) {
		a, b := weft.NewChan[int](1), weft.NewChan[string](1)
		b.Send(wt, "hello")
		var av int
		var bv string
		i, err := weft.Select(wt, weft.RecvCase(a, &av), weft.RecvCase(b, &bv))
		if i != 1 || err != nil || bv != "hello" || av != 0 {
			t.Fatalf("Select = %d, %v; a=%d b=%q", i, err, av, bv)
		}
		if a.Len() != 0 || b.Len() != 0 {
			t.Fatalf("lens after Select: %d %d", a.Len(), b.Len())
		}
	})
}

func TestSelectWaitsForTheFirstCaseAndConsumesNothingElse(t *testing.T) {
	run(t, func(wt *weft.Task) {
		a, b := weft.NewChan[int](0), weft.NewChan[int](0)
		out := weft.NewChan[int](0)
		spawn(wt, func(wt *weft.Task) {
			wt.Sleep(10 * time.Millisecond)
			b.Send(wt, 2)
			wt.Sleep(10 * time.Millisecond)
			a.Send(wt, 1) // the Select is over: this waits for a receiver
		})
		var v int
		i, err := weft.Select(wt, weft.RecvCase(a, &v), weft.RecvCase(b, &v), weft.SendCase(out, 99))
		if i != 1 || err != nil || v != 2 {
			t.Fatalf("Select = %d, %v, v=%d", i, err, v)
		}
		if _, ok := out.TryRecv(); ok {
			t.Fatal("the send case that did not fire sent")
		}
		// a's sender is still waiting with its value: nothing was consumed.
		if got, err := a.Recv(wt); got != 1 || err != nil {
			t.Fatalf("a.Recv = %d, %v", got, err)
		}
	}, vt)
}

func TestSelectPicksUniformlyAmongReadyCases(t *testing.T) {
	const rounds = 6000
	counts := make([]int, 3)
	run(t, func(wt *weft.Task) {
		cs := []*weft.Chan[int]{weft.NewChan[int](1), weft.NewChan[int](1), weft.NewChan[int](1)}
		for range rounds {
			for _, c := range cs {
				c.TrySend(1)
			}
			i, err := weft.Select(wt, weft.RecvCase(cs[0], nil), weft.RecvCase(cs[1], nil), weft.RecvCase(cs[2], nil))
			if err != nil {
				t.Fatal(err)
			}
			counts[i]++
		}
	})
	// Each expected 2000; 5 standard deviations is about 183.
	for i, n := range counts {
		if n < 1800 || n > 2200 {
			t.Fatalf("case %d fired %d times of %d: %v", i, n, rounds, counts)
		}
	}
}

func TestSelectOnClosedChannels(t *testing.T) {
	errUpstream := errors.New("upstream failed")
	run(t, func(wt *weft.Task) {
		a := weft.NewChan[int](0)
		a.Close()
		var v int
		if i, err := weft.Select(wt, weft.RecvCase(a, &v)); i != 0 || err != io.EOF {
			t.Errorf("receive on closed = %d, %v", i, err)
		}
		b := weft.NewChan[int](0)
		b.CloseWithError(errUpstream)
		if i, err := weft.Select(wt, weft.RecvCase(b, &v)); i != 0 || err != errUpstream {
			t.Errorf("receive on CloseWithError = %d, %v", i, err)
		}
		if i, err := weft.Select(wt, weft.SendCase(a, 1)); i != 0 || !errors.Is(err, weft.ErrClosed) {
			t.Errorf("send on closed = %d, %v", i, err)
		}
		// Closed while the Select waits.
		c, d := weft.NewChan[int](0), weft.NewChan[int](0)
		spawn(wt, func(wt *weft.Task) { wt.Yield(); c.Close() })
		if i, err := weft.Select(wt, weft.SendCase(d, 1), weft.RecvCase(c, &v)); i != 1 || err != io.EOF {
			t.Errorf("receive on channel closed meanwhile = %d, %v", i, err)
		}
	})
}

func TestSelectSendHandsTheValueToAWaitingReceiver(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[string](0)
		r := weft.Go(wt, func(wt *weft.Task) (string, error) { return c.Recv(wt) })
		if i, err := weft.Select(wt, weft.SendCase(c, "x"), weft.AfterCase(time.Hour)); i != 0 || err != nil {
			t.Fatalf("Select = %d, %v", i, err)
		}
		if v, _ := r.Await(wt); v != "x" {
			t.Fatalf("receiver got %q", v)
		}
		// And the other way: Select waits in a send, a receiver comes.
		spawn(wt, func(wt *weft.Task) {
			if v, _ := c.Recv(wt); v != "y" {
				t.Errorf("receiver got %q", v)
			}
		})
		if i, err := weft.Select(wt, weft.SendCase(c, "y")); i != 0 || err != nil {
			t.Fatalf("Select = %d, %v", i, err)
		}
	}, vt)
}

func TestSelectTimesOutOnTheLoopsClock(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](0)
		start := wt.Now()
		i, err := weft.Select(wt, weft.RecvCase(c, nil), weft.AfterCase(3*time.Second), weft.AfterCase(time.Second))
		if i != 2 || err != nil || wt.Now().Sub(start) != time.Second {
			t.Fatalf("Select = %d, %v after %v", i, err, wt.Now().Sub(start))
		}
		if n := weft.PendingTimers(wt); n != 0 {
			t.Fatalf("%d timers left behind", n)
		}
		if i, _ := weft.Select(wt, weft.RecvCase(c, nil), weft.AfterCase(0)); i != 1 {
			t.Fatalf("AfterCase(0) is ready at once; Select = %d", i)
		}
		// A channel that wins removes the timer.
		spawn(wt, func(wt *weft.Task) { c.Send(wt, 1) })
		if i, _ := weft.Select(wt, weft.AfterCase(time.Hour), weft.RecvCase(c, nil)); i != 1 || weft.PendingTimers(wt) != 0 {
			t.Fatalf("Select = %d, timers %d", i, weft.PendingTimers(wt))
		}
	}, vt)
}

func TestCancelledSelectFiresNoCase(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](0)
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.Select(wt, weft.RecvCase(c, nil), weft.SendCase(c, 5), weft.AfterCase(time.Hour))
		})
		p.Cancel()
		if i, err := p.Await(wt); i != -1 || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Select = %d, %v", i, err)
		}
		if c.TrySend(1) || weft.PendingTimers(wt) != 0 {
			t.Fatal("the cancelled Select left a case behind")
		}
	}, vt)
}

// A value a Select received as it was cancelled goes to the next receiver.
func TestValueHandedToACancelledSelectGoesToTheNextReceiver(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](0)
		var got int
		sel := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.Select(wt, weft.RecvCase(c, &got))
		})
		next := weft.Go(wt, func(wt *weft.Task) (int, error) { return c.Recv(wt) })
		c.Send(wt, 42) // handed to the Select
		sel.Cancel()
		if i, err := sel.Await(wt); i != -1 || !errors.Is(err, context.Canceled) || got != 0 {
			t.Fatalf("Select = %d, %v, stored %d", i, err, got)
		}
		if v, err := next.Await(wt); v != 42 || err != nil {
			t.Fatalf("next receiver = %d, %v", v, err)
		}
	})
}

func TestSelectWithSendAndReceiveOnOneChannelDoesNotMatchItself(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](0)
		var v int
		i, err := weft.Select(wt, weft.SendCase(c, 1), weft.RecvCase(c, &v), weft.AfterCase(time.Second))
		if i != 2 || err != nil {
			t.Fatalf("Select = %d, %v", i, err)
		}
	}, vt)
}

func TestSelectsOnBothEndsMeet(t *testing.T) {
	run(t, func(wt *weft.Task) {
		a, b := weft.NewChan[int](0), weft.NewChan[int](0)
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			var v int
			i, err := weft.Select(wt, weft.RecvCase(a, &v), weft.RecvCase(b, &v))
			return i*100 + v, err
		})
		i, err := weft.Select(wt, weft.SendCase(b, 7), weft.AfterCase(time.Second))
		if got, _ := p.Await(wt); i != 0 || err != nil || got != 107 {
			t.Fatalf("sender Select = %d, %v; receiver %d", i, err, got)
		}
	}, vt)
}

func TestSelectMisusePanics(t *testing.T) {
	if msg := panicMessage(func() { weft.RecvCase[int](nil, nil) }); !strings.HasPrefix(msg, "weft: ") {
		t.Errorf("RecvCase(nil): %q", msg)
	}
	if msg := panicMessage(func() { weft.SendCase[int](nil, 1) }); !strings.HasPrefix(msg, "weft: ") {
		t.Errorf("SendCase(nil): %q", msg)
	}
	run(t, func(wt *weft.Task) {
		msg := panicMessage(func() { weft.Select(wt, weft.SelectCase{}) })
		if !strings.HasPrefix(msg, "weft: ") {
			t.Errorf("zero SelectCase: %q", msg)
		}
	})
}

func TestDeadlockNamesSelect(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		c := weft.NewChan[int](0)
		return weft.Select(wt, weft.RecvCase(c, nil)) // selectWait
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v", err)
	}
	if op, site := blockedOp(d, "main"); op != "Select" || site != siteOf(t, "selectWait") {
		t.Errorf("main: %s at %s", op, site)
	}
}

func TestEmptySelectWaitsUntilCancelled(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) { return weft.Select(wt) })
		spawn(wt, func(wt *weft.Task) { wt.Sleep(time.Second); p.Cancel() })
		if i, err := p.Await(wt); i != -1 || !errors.Is(err, context.Canceled) {
			t.Fatalf("empty Select = %d, %v", i, err)
		}
	}, vt)
}

// Select's fairness when several of its cases are on one channel, ported
// from Go's runtime/chan_test.go (TestPseudoRandomSend, TestSelectFairness,
// TestSelectDuplicateChannel, TestSelfSelect) and extended to the cases
// Go's tests leave to its runtime: a partner that arrives while the Select
// waits (a task of the same or another loop, a goroutine, another Select),
// and a seeded Run that must replay its choices.

// TestSelectPseudoRandomSend is Go's TestPseudoRandomSend: a Select with
// two send cases on one channel must send each value at least a tenth of
// the time, whether the receiver finds the Select parked on both cases
// (capacity 0), finds room at once (capacity n) or refills a full buffer
// from the Select's waiting cases (capacity 1).
func TestSelectPseudoRandomSend(t *testing.T) {
	const n = 100
	for _, m := range loopModes {
		for _, capacity := range []int{0, 1, n} {
			t.Run(fmt.Sprintf("%s/cap%d", m.name, capacity), func(t *testing.T) {
				got, apart := sendSelectPartner(t, m.loops, capacity, n)
				if len(got) != n {
					t.Fatalf("received %d values", len(got))
				}
				var ones int
				for _, v := range got {
					ones += v
				}
				if zeros := n - ones; zeros < n/10 || ones < n/10 {
					t.Errorf("want pseudo-random, got %d zeros and %d ones (capacity %d)", zeros, ones, capacity)
				}
				if m.loops > 1 && apart == 0 {
					t.Errorf("the receiver never ran on another loop than the Select")
				}
			})
		}
	}
}

// TestSelectParkedOnOneChannelTwiceFiresEitherCase checks the receive side:
// a Select parked on {RecvCase(c), RecvCase(c), RecvCase(d)} is satisfied
// by a sender on c in case 0 or 1, each about half of the time, never 2.
// The senders are a task (of main's loop, or of another loop) and a plain
// goroutine (SendWait, from outside every loop).
func TestSelectParkedOnOneChannelTwiceFiresEitherCase(t *testing.T) {
	const rounds = 2000
	check := func(t *testing.T, counts [3]int) {
		t.Helper()
		// Each of cases 0 and 1 is expected rounds/2 times; 5 standard
		// deviations are about 112.
		if counts[2] != 0 || counts[0] < rounds/2-120 || counts[1] < rounds/2-120 {
			t.Errorf("cases fired %v times in %d rounds: want about %d each for cases 0 and 1, none for 2", counts, rounds, rounds/2)
		}
	}
	for _, m := range loopModes {
		t.Run(m.name+"/Task", func(t *testing.T) {
			var counts [3]int
			apart := 0
			run(t, func(wt *weft.Task) {
				c, d := weft.NewChan[int](0), weft.NewChan[int](0)
				var mainLoop atomic.Int32
				var moving atomic.Bool
				moving.Store(true)
				var selectLoop atomic.Int32
				p := spawn(wt, func(pt *weft.Task) {
					moveApart(wt, pt, m.loops, &mainLoop)
					moving.Store(false)
					for i := range rounds {
						pt.Yield()
						if err := c.Send(pt, i); err != nil {
							t.Errorf("Send: %v", err)
							return
						}
						if int32(pt.Loop()) != selectLoop.Load() {
							apart++
						}
					}
				})
				for moving.Load() {
					mainLoop.Store(int32(wt.Loop()))
					wt.Yield()
				}
				for i := range rounds {
					selectLoop.Store(int32(wt.Loop()))
					var a, b, e int = -1, -1, -1
					k, err := weft.Select(wt, weft.RecvCase(c, &a), weft.RecvCase(c, &b), weft.RecvCase(d, &e))
					if err != nil {
						t.Errorf("Select: %v", err)
						return
					}
					counts[k]++
					if got := [3]int{a, b, e}; got[k] != i {
						t.Fatalf("round %d: case %d fired with %v", i, k, got)
					}
				}
				p.Await(wt)
			}, weft.WithLoops(m.loops))
			check(t, counts)
			if m.loops > 1 && apart == 0 {
				t.Errorf("the sender never ran on another loop than the Select")
			}
		})
		t.Run(m.name+"/Goroutine", func(t *testing.T) {
			var counts [3]int
			var sender sync.WaitGroup
			ctx, cancel := context.WithCancel(context.Background())
			defer sender.Wait()
			defer cancel()
			run(t, func(wt *weft.Task) {
				c, d := weft.NewChan[int](0), weft.NewChan[int](0)
				// The goroutine keeps Run alive until it is done: between two
				// SendWaits nothing else would.
				done, settle := weft.NewPromiseExternal[struct{}](wt)
				sender.Go(func() {
					defer settle(struct{}{}, nil)
					for i := range rounds {
						if err := c.SendWait(ctx, i); err != nil {
							t.Errorf("SendWait: %v", err)
							return
						}
					}
				})
				for range rounds {
					k, err := weft.Select(wt, weft.RecvCase(c, nil), weft.RecvCase(c, nil), weft.RecvCase(d, nil))
					if err != nil {
						t.Errorf("Select: %v", err)
						return
					}
					counts[k]++
				}
				done.Await(wt)
			}, weft.WithLoops(m.loops))
			check(t, counts)
		})
	}
}

// TestSelectMeetsASelectParkedOnOneChannelTwice: the arriving partner is
// itself a Select, which finds the other parked on two cases of its channel.
func TestSelectMeetsASelectParkedOnOneChannelTwice(t *testing.T) {
	const rounds = 1000
	var counts [2]int
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](0)
		p := spawn(wt, func(pt *weft.Task) {
			for range rounds {
				pt.Yield()
				if k, err := weft.Select(pt, weft.RecvCase(c, nil), weft.AfterCase(time.Hour)); k != 0 || err != nil {
					t.Errorf("receiving Select = %d, %v", k, err)
					return
				}
			}
		})
		for range rounds {
			k, err := weft.Select(wt, weft.SendCase(c, 0), weft.SendCase(c, 1))
			if err != nil {
				t.Fatal(err)
			}
			counts[k]++
		}
		p.Await(wt)
	})
	// 5 standard deviations of rounds/2 are about 80.
	if counts[0] < rounds/2-80 || counts[1] < rounds/2-80 {
		t.Errorf("cases fired %v times in %d rounds", counts, rounds)
	}
}

// TestSelectFairness is Go's TestSelectFairness: two of four receive cases
// always ready, on channels of their own; each fires about half of the
// time (within 4 standard deviations).
func TestSelectFairness(t *testing.T) {
	const trials = 10000
	var cnt1, cnt2 int
	run(t, func(wt *weft.Task) {
		c1, c2 := weft.NewChan[byte](trials+1), weft.NewChan[byte](trials+1)
		for range trials + 1 {
			c1.TrySend(1)
			c2.TrySend(2)
		}
		c3, c4 := weft.NewChan[byte](0), weft.NewChan[byte](0)
		out, done := weft.NewChan[byte](0), weft.NewChan[byte](0)
		p := spawn(wt, func(wt *weft.Task) {
			for {
				var b byte
				if _, err := weft.Select(wt, weft.RecvCase(c3, &b), weft.RecvCase(c4, &b), weft.RecvCase(c1, &b), weft.RecvCase(c2, &b)); err != nil {
					t.Errorf("Select: %v", err)
					return
				}
				if k, _ := weft.Select(wt, weft.SendCase(out, b), weft.RecvCase(done, nil)); k == 1 {
					return
				}
			}
		})
		for range trials {
			switch b, _ := out.Recv(wt); b {
			case 1:
				cnt1++
			case 2:
				cnt2++
			default:
				t.Fatalf("unexpected value %d on channel", b)
			}
		}
		done.Close()
		p.Await(wt)
	})
	r := float64(cnt1) / trials
	if e := math.Abs(r - 0.5); e > 4.0*math.Sqrt(0.25/trials) {
		t.Errorf("unfair select: in %d trials, results were %d, %d", trials, cnt1, cnt2)
	}
}

// TestSelectDuplicateChannel is Go's TestSelectDuplicateChannel: a Select
// queued twice on c, woken by d, must leave c's queue intact for the
// receiver queued behind it.
func TestSelectDuplicateChannel(t *testing.T) {
	run(t, func(wt *weft.Task) {
		c, d, e := weft.NewChan[int](0), weft.NewChan[int](0), weft.NewChan[int](0)
		a := spawn(wt, func(wt *weft.Task) {
			if k, err := weft.Select(wt, weft.RecvCase(c, nil), weft.RecvCase(c, nil), weft.RecvCase(d, nil)); k != 2 || err != nil {
				t.Errorf("A's Select = %d, %v", k, err)
			}
			e.Send(wt, 9)
		})
		wt.Sleep(time.Millisecond) // A is queued first on c
		var got int
		b := spawn(wt, func(wt *weft.Task) { got, _ = c.Recv(wt) })
		wt.Sleep(time.Millisecond) // B is queued on c behind A
		d.Send(wt, 7)              // wakes A, which takes its nodes off c
		e.Recv(wt)
		c.Send(wt, 8) // must reach B
		a.Await(wt)
		b.Await(wt)
		if got != 8 {
			t.Errorf("B received %d", got)
		}
	}, vt)
}

// TestSelfSelect is Go's TestSelfSelect: two tasks selecting on a send and
// a receive of one channel never receive their own value (capacity 0),
// and never deadlock.
func TestSelfSelect(t *testing.T) {
	for _, capacity := range []int{0, 10} {
		run(t, func(wt *weft.Task) {
			c := weft.NewChan[int](capacity)
			var ps []*weft.Promise[struct{}]
			for p := range 2 {
				ps = append(ps, spawn(wt, func(wt *weft.Task) {
					for i := range 1000 {
						var v int
						var k int
						var err error
						if p == 0 || i%2 == 0 {
							k, err = weft.Select(wt, weft.SendCase(c, p), weft.RecvCase(c, &v))
							k = 1 - k // 0: received
						} else {
							k, err = weft.Select(wt, weft.RecvCase(c, &v), weft.SendCase(c, p))
						}
						if err != nil {
							t.Errorf("Select: %v", err)
							return
						}
						if k == 0 && capacity == 0 && v == p {
							t.Errorf("self receive")
							return
						}
					}
				}))
			}
			weft.All(wt, ps...)
		})
	}
}

// TestSeededSelectPartnerChoicesReplay: in a seeded Run, the choice a
// partner makes among a parked Select's cases comes from the seed, so
// the same seed replays the same values and the same decisions (logged
// as DecidePartner), and the choice is still fair.
func TestSeededSelectPartnerChoicesReplay(t *testing.T) {
	const n = 200
	prog := func(seed uint64, loops int) (string, weft.RunInfo) {
		var got []byte
		info := weft.RunInfo{KeepLog: true}
		run(t, func(wt *weft.Task) {
			c := weft.NewChan[byte](0)
			p := spawn(wt, func(pt *weft.Task) {
				for range n {
					pt.Yield()
					v, _ := c.Recv(pt)
					got = append(got, v)
				}
			})
			for range n {
				weft.Select(wt, weft.SendCase(c, '1'), weft.SendCase(c, '0'))
			}
			p.Await(wt)
		}, weft.WithSeed(seed), weft.WithRunInfo(&info), weft.WithLoops(loops))
		return string(got), info
	}
	for _, loops := range []int{1, 4} {
		a, ia := prog(7, loops)
		b, ib := prog(7, loops)
		if a != b || ia.Hash != ib.Hash {
			t.Fatalf("%d loops: seed 7 did not replay:\n%s\n%s", loops, a, b)
		}
		partner := 0
		for _, d := range ia.Log {
			if d.Kind == weft.DecidePartner {
				partner++
				if d.Options != 2 {
					t.Fatalf("a partner decision among %d options: %s", d.Options, d)
				}
			}
		}
		if partner < n/2 {
			t.Errorf("%d loops: %d partner decisions in %d rounds", loops, partner, n)
		}
		var ones int
		for _, v := range a {
			ones += int(v - '0')
		}
		if ones < n/10 || n-ones < n/10 {
			t.Errorf("%d loops: seed 7 sent %d ones of %d", loops, ones, n)
		}
		if c, _ := prog(8, loops); c == a {
			t.Errorf("%d loops: seeds 7 and 8 chose the same %d values", loops, n)
		}
	}
}

// TestSelectOnOneChannelTwiceClosedFiresEitherCase: Close satisfies every
// waiter; a Select parked on two receive cases of the closed channel
// fires one of them, each about half of the time.
func TestSelectOnOneChannelTwiceClosedFiresEitherCase(t *testing.T) {
	const rounds = 1000
	var counts [2]int
	run(t, func(wt *weft.Task) {
		for range rounds {
			c := weft.NewChan[int](0)
			p := weft.Go(wt, func(wt *weft.Task) (int, error) {
				return weft.Select(wt, weft.RecvCase(c, nil), weft.RecvCase(c, nil))
			})
			c.Close()
			k, err := p.Await(wt)
			if k < 0 || err != io.EOF {
				t.Fatalf("Select on a closed channel = %d, %v", k, err)
			}
			counts[k]++
		}
	})
	if counts[0] < rounds/2-80 || counts[1] < rounds/2-80 {
		t.Errorf("cases fired %v times in %d rounds", counts, rounds)
	}
}

// TestStressSelectOnOneChannelTwiceCancelledWhileSatisfied: Selects on two
// receive cases of one channel, cancelled at random while goroutines send
// on it: every value sent is received exactly once (a value handed to a
// cancelled Select goes on). Run it with -race: the Select reads the node
// that fired only under the channel's lock.
func TestStressSelectOnOneChannelTwiceCancelledWhileSatisfied(t *testing.T) {
	for _, mode := range []struct {
		loops int
		twice bool // both cases on c; else one on c, one on a channel nobody uses
	}{{1, true}, {2, true}, {1, false}, {2, false}} {
		loops := mode.loops
		led := newLedger()
		c, idle := weft.NewChan[int](0), weft.NewChan[int](0)
		ctx, stop := context.WithCancel(context.Background())
		var senders sync.WaitGroup
		for g := range 2 {
			senders.Go(func() {
				for k := 0; ; k++ {
					v := (g+1)*1_000_000 + k
					if c.SendWait(ctx, v) != nil {
						return
					}
					led.didSend(v)
				}
			})
		}
		var loopsSeen [2]atomic.Bool
		run(t, func(wt *weft.Task) {
			// The goroutines keep Run alive between their SendWaits.
			_, settle := weft.NewPromiseExternal[struct{}](wt)
			defer settle(struct{}{}, nil)
			// A first value: the goroutines are sending (and c is shared).
			if v, err := c.Recv(wt); err == nil {
				led.didGet(v)
			}
			var spread atomic.Bool
			var ps []*weft.Promise[struct{}]
			for w := range 4 {
				ps = append(ps, spawn(wt, func(wt *weft.Task) {
					// With several loops, wait until a worker has been
					// handed to another loop than main's.
					for deadline := time.Now().Add(10 * time.Second); loops > 1 && !spread.Load() && time.Now().Before(deadline); {
						if wt.Loop() != 0 {
							spread.Store(true)
						}
						spinFor(20 * time.Microsecond)
						wt.Checkpoint()
						wt.Yield()
					}
					for i := range 300 {
						p := weft.Go(wt, func(wt *weft.Task) (int, error) {
							loopsSeen[wt.Loop()%2].Store(true)
							var v int
							other := weft.RecvCase(idle, &v)
							if mode.twice {
								other = weft.RecvCase(c, &v)
							}
							k, err := weft.Select(wt, weft.RecvCase(c, &v), other)
							if k >= 0 {
								led.didGet(v)
							}
							return k, err
						})
						for range (i + w) % 3 {
							wt.Yield()
						}
						p.Cancel()
						p.Await(wt)
					}
				}))
			}
			weft.All(wt, ps...)
		}, weft.WithLoops(loops))
		stop()
		senders.Wait()
		for {
			v, ok := c.TryRecv()
			if !ok {
				break
			}
			led.didGet(v)
		}
		led.check(t)
		if loops > 1 && !(loopsSeen[0].Load() && loopsSeen[1].Load()) {
			t.Errorf("%d loops: the Selects ran on loop 0: %v, on loop 1: %v", loops, loopsSeen[0].Load(), loopsSeen[1].Load())
		}
	}
}

// TestCancelledSelectWithdrawsFromAChannelAboutToBeOwned: a Select's node
// on a channel one operation short of becoming its loop's (ownership,
// sync_chan_owner.go) is withdrawn by a cancellation, under the run lock of a
// Run of several loops. The withdrawal must not take the ownership path,
// which takes the run lock itself: that deadlocked the Run.
func TestCancelledSelectWithdrawsFromAChannelAboutToBeOwned(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(t, func(wt *weft.Task) {
			c, idle := weft.NewChan[int](0), weft.NewChan[int](0)
			for range 1023 { // ownThreshold - 1 operations of this loop
				idle.TryRecv()
			}
			p := weft.Go(wt, func(wt *weft.Task) (int, error) {
				return weft.Select(wt, weft.RecvCase(c, nil), weft.RecvCase(idle, nil))
			})
			p.Cancel()
			if k, err := p.Await(wt); k != -1 || !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled Select = %d, %v", k, err)
			}
			// Both channels still work.
			spawn(wt, func(wt *weft.Task) { idle.Send(wt, 1) })
			if v, err := idle.Recv(wt); v != 1 || err != nil {
				t.Errorf("idle.Recv = %d, %v", v, err)
			}
		}, weft.WithLoops(2))
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the Run hung: the cancelled Select's withdrawal deadlocked")
	}
}

// loopModes are the loop counts the fairness tests run on: one loop, and
// two loops on which the test makes sure the parties really are apart.
var loopModes = []struct {
	name  string
	loops int
}{{"OneLoop", 1}, {"TwoLoops", 2}}

// moveApart makes wt (not main) leave main's loop when the Run has several:
// it spins through Checkpoints while main yields, until a hungry loop takes
// one of them, and reports whether the two ended up apart (10 s at most).
// On one loop it does nothing and reports false.
func moveApart(main, wt *weft.Task, loops int, mainLoop *atomic.Int32) bool {
	if loops < 2 {
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if int32(wt.Loop()) != mainLoop.Load() {
			return true
		}
		spinFor(50 * time.Microsecond)
		wt.Checkpoint()
		wt.Yield()
	}
	return false
}

// sendSelectPartner runs the heart of TestPseudoRandomSend on a Run of the
// given loops: main selects n times on {SendCase(c, 1), SendCase(c, 0)},
// a partner task receives n times, yielding first each time so that the
// Select is (mostly) parked on both cases when it arrives. It returns the
// values received and how many receives happened on another loop than the
// Select.
func sendSelectPartner(t *testing.T, loops, capacity, n int) (got []int, apart int) {
	t.Helper()
	run(t, func(wt *weft.Task) {
		c := weft.NewChan[int](capacity)
		var mainLoop atomic.Int32
		var moving atomic.Bool
		moving.Store(true)
		var selectLoop atomic.Int32
		p := weft.Go(wt, func(pt *weft.Task) ([]int, error) {
			moveApart(wt, pt, loops, &mainLoop)
			moving.Store(false)
			vals := make([]int, 0, n)
			for range n {
				pt.Yield()
				v, err := c.Recv(pt)
				if err != nil {
					return vals, err
				}
				if int32(pt.Loop()) != selectLoop.Load() {
					apart++
				}
				vals = append(vals, v)
			}
			return vals, nil
		})
		for moving.Load() {
			mainLoop.Store(int32(wt.Loop()))
			wt.Yield()
		}
		for range n {
			selectLoop.Store(int32(wt.Loop()))
			if _, err := weft.Select(wt, weft.SendCase(c, 1), weft.SendCase(c, 0)); err != nil {
				t.Errorf("Select: %v", err)
				return
			}
		}
		vals, err := p.Await(wt)
		if err != nil {
			t.Errorf("receiver: %v", err)
		}
		got = vals
	}, weft.WithLoops(loops))
	return got, apart
}
