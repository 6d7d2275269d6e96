package weft_test

// Benchmarks of several loops (issue 10), each beside its Go-native twin or
// its one-loop self, run in the same process:
//
//	go test -run '^$' -bench 'Loops' -count 5 .
//	go test -run '^$' -bench 'Loops.*/all' -cpu 1,2,4,8 .   # loops = GOMAXPROCS
//
// The "all" variants use WithLoops(0): one loop per GOMAXPROCS, so -cpu
// sets the loop count and oversubscription shows.

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weft-go/weft"
)

// loopVariants are the loop counts a benchmark runs with: one, two, and
// GOMAXPROCS.
var loopVariants = []struct {
	name string
	n    int
}{{"1loop", 1}, {"2loops", 2}, {"all", 0}}

// cpuWork is one CPU-bound task's share: units of 1000 iterations, with a
// Checkpoint after each.
func cpuWork(units int) func(*weft.Task) (int, error) {
	return func(t *weft.Task) (int, error) {
		n := 0
		for range units {
			for i := 0; i < 1000; i++ {
				n++
				n ^= i
			}
			if err := t.Checkpoint(); err != nil {
				return n, err
			}
		}
		return n, nil
	}
}

// BenchmarkLoopsCPUSpread runs 2, 3 or 4 CPU-bound tasks to completion
// per op, started by main, which then waits: with two loops, hand-over
// should spread them and take about half the time of one loop (goal: one
// loop's time / two loops' >= 1.8 for each count).
func BenchmarkLoopsCPUSpread(b *testing.B) {
	for _, tasks := range []int{2, 3, 4} {
		for _, v := range loopVariants {
			b.Run(fmt.Sprintf("tasks=%d/%s", tasks, v.name), func(b *testing.B) {
				weft.Run(func(t *weft.Task) (struct{}, error) {
					b.ResetTimer()
					for range b.N {
						var ps []*weft.Promise[int]
						for range tasks {
							ps = append(ps, weft.Go(t, cpuWork(60000/tasks)))
						}
						weft.All(t, ps...)
					}
					return struct{}{}, nil
				}, weft.WithLoops(v.n))
			})
		}
	}
}

// BenchmarkLoopsCPUSpreadMainReturns is the same with main returning at
// once: the tasks finish after it, and Run waits for them.
func BenchmarkLoopsCPUSpreadMainReturns(b *testing.B) {
	for _, tasks := range []int{2, 3, 4} {
		for _, v := range loopVariants[:2] {
			b.Run(fmt.Sprintf("tasks=%d/%s", tasks, v.name), func(b *testing.B) {
				for range b.N {
					weft.Run(func(t *weft.Task) (struct{}, error) {
						for range tasks {
							weft.Go(t, cpuWork(60000/tasks))
						}
						return struct{}{}, nil
					}, weft.WithLoops(v.n))
				}
			})
		}
	}
}

// BenchmarkLoopsFanOut starts b.N trivial tasks and then awaits them all,
// per task (run it with -benchtime 1000000x for the 1M); its twin
// is BenchmarkGoroutinesFanOut.
func BenchmarkLoopsFanOut(b *testing.B) {
	for _, v := range loopVariants[1:] {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			weft.Run(func(t *weft.Task) (struct{}, error) {
				f := func(*weft.Task) (int, error) { return 1, nil }
				ps := make([]*weft.Promise[int], b.N)
				b.ResetTimer()
				for i := range ps {
					ps[i] = weft.Go(t, f)
				}
				for _, p := range ps {
					p.Await(t)
				}
				return struct{}{}, nil
			}, weft.WithLoops(v.n))
		})
	}
}

// BenchmarkLoopsFanOutGroup is the fan-out as a TaskGroup, the shape of
// its WaitGroup twin: b.N trivial tasks started in one Group, which waits
// for them all; nothing holds a task once it has finished.
func BenchmarkLoopsFanOutGroup(b *testing.B) {
	for _, v := range loopVariants[1:] {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			weft.Run(func(t *weft.Task) (struct{}, error) {
				var sum atomic.Int64
				f := func(*weft.Task) error { sum.Add(1); return nil }
				b.ResetTimer()
				err := weft.Group(t, func(g *weft.TaskGroup) error {
					for range b.N {
						g.Go(f)
					}
					return nil
				})
				return struct{}{}, err
			}, weft.WithLoops(v.n))
		})
	}
}

// BenchmarkGoroutinesFanOut is the fan-out with goroutines and a
// WaitGroup, per goroutine.
func BenchmarkGoroutinesFanOut(b *testing.B) {
	b.ReportAllocs()
	var wg sync.WaitGroup
	var sum atomic.Int64
	b.ResetTimer()
	for range b.N {
		wg.Add(1)
		go func() {
			sum.Add(1)
			wg.Done()
		}()
	}
	wg.Wait()
}

// BenchmarkLoopsCrossLoopPingPong bounces a promise between a task on
// loop 0 and one kept on loop 1, per round trip (two cross-loop wakes);
// its twin is BenchmarkChannelPingPong (two goroutines, unbuffered
// channels).
func BenchmarkLoopsCrossLoopPingPong(b *testing.B) {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		type pair struct {
			p      *weft.Promise[int]
			settle func(int, error) bool
		}
		mk := func(n int) []pair {
			ps := make([]pair, n)
			for i := range ps {
				ps[i].p, ps[i].settle = weft.NewPromise[int]()
			}
			return ps
		}
		ping, pong := mk(b.N), mk(b.N)
		other := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			weft.PinTo(t, 1)
			for i := range ping {
				v, _ := ping[i].p.Await(t)
				pong[i].settle(v, nil)
			}
			return struct{}{}, nil
		})
		weft.PinTo(t, 0)
		b.ResetTimer()
		for i := range ping {
			ping[i].settle(i, nil)
			pong[i].p.Await(t)
		}
		b.StopTimer()
		other.Await(t)
		return struct{}{}, nil
	}, weft.WithLoops(2))
}
