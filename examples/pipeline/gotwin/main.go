// Command gotwin is examples/pipeline written with goroutines, Go
// channels, a time.Ticker and signal.NotifyContext, for comparison.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	n := flag.Int("n", 2000, "numbers to process")
	workers := flag.Int("workers", 8, "squaring goroutines")
	delay := flag.Duration("delay", 5*time.Millisecond, "work per number")
	every := flag.Duration("every", time.Second, "progress period")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r := pipeline(ctx, *n, *workers, *delay, *every, func(done int64) {
		fmt.Printf("pipeline: %d of %d done\n", done, *n)
	})
	if r.interrupted {
		fmt.Printf("pipeline: interrupted after %d numbers, sum so far %d\n", r.done, r.sum)
	} else {
		fmt.Printf("pipeline: sum of the %d squares: %d\n", r.done, r.sum)
	}
}

type result struct {
	sum, done   int64
	interrupted bool
}

func pipeline(ctx context.Context, n, workers int, delay, every time.Duration, progress func(done int64)) result {
	var r result
	var done atomic.Int64 // read by the progress goroutine
	numbers := make(chan int, 16)
	var wg sync.WaitGroup // the generator and the workers
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(numbers)
		for i := 1; i <= n; i++ {
			select {
			case numbers <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	squares := make(chan int, 16)
	var workersWG sync.WaitGroup
	for range workers {
		workersWG.Add(1)
		go func() {
			defer workersWG.Done()
			for v := range numbers {
				select {
				case <-time.After(delay):
				case <-ctx.Done():
					return
				}
				select {
				case squares <- v * v:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { workersWG.Wait(); close(squares) }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case sq, ok := <-squares:
			if !ok {
				wg.Wait()
				r.interrupted = ctx.Err() != nil
				r.done = done.Load()
				return r
			}
			r.sum += int64(sq)
			done.Add(1)
		case <-tick.C:
			progress(done.Load())
		}
	}
}
