package weft_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// ledger records what was sent (Send returned nil) and what was received
// (Recv returned a value), from any goroutine.
type ledger struct {
	mu   sync.Mutex
	sent map[int]bool
	got  map[int]int
}

func newLedger() *ledger { return &ledger{sent: map[int]bool{}, got: map[int]int{}} }

func (l *ledger) didSend(v int) { l.mu.Lock(); l.sent[v] = true; l.mu.Unlock() }
func (l *ledger) didGet(v int)  { l.mu.Lock(); l.got[v]++; l.mu.Unlock() }

func (l *ledger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.sent) == 0 {
		t.Fatal("nothing was sent")
	}
	for v, n := range l.got {
		if n != 1 {
			t.Errorf("value %d received %d times", v, n)
		}
		if !l.sent[v] {
			t.Errorf("value %d received but its Send failed", v)
		}
	}
	for v := range l.sent {
		if l.got[v] == 0 {
			t.Errorf("value %d sent but never received", v)
		}
	}
}

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
