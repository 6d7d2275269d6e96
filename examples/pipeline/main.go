// Command pipeline runs numbers through stages with back-pressure: a
// generator, a pool of workers that square them (each square takes
// -delay, standing for real work), and a sum. It prints its progress every
// -every; ^C stops every stage cleanly and prints what was done so far.
//
//	go run ./examples/pipeline -n 5000 -workers 8
//
// Each stage is a task and each link a bounded channel, so no stage runs
// more than a buffer ahead of the next. gotwin/ is the same program with
// goroutines, Go channels, a time.Ticker and signal.NotifyContext.
// (Lines of code, without comments and blank lines: 77 here, 88 there.)
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/weft-go/weft"
)

func main() {
	n := flag.Int("n", 2000, "numbers to process")
	workers := flag.Int("workers", 8, "squaring tasks")
	delay := flag.Duration("delay", 5*time.Millisecond, "work per number")
	every := flag.Duration("every", time.Second, "progress period")
	flag.Parse()
	r, err := weft.Run(func(t *weft.Task) (result, error) {
		return pipeline(t, *n, *workers, *delay, *every, weft.Signal(t, os.Interrupt), func(done int) {
			fmt.Printf("pipeline: %d of %d done\n", done, *n)
		})
	})
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	case r.interrupted:
		fmt.Printf("pipeline: interrupted after %d numbers, sum so far %d\n", r.done, r.sum)
	default:
		fmt.Printf("pipeline: sum of the %d squares: %d\n", r.done, r.sum)
	}
}

type result struct {
	sum, done   int
	interrupted bool
}

// pipeline squares 1..n with the given number of workers and sums the
// squares, calling progress every period, until done or until a value
// arrives on stop.
func pipeline(t *weft.Task, n, workers int, delay, every time.Duration, stop *weft.Chan[os.Signal], progress func(done int)) (result, error) {
	var r result
	err := weft.Group(t, func(g *weft.TaskGroup) error {
		numbers := weft.Generate(t, 16, func(t *weft.Task, yield func(int) error) error {
			for i := 1; i <= n && yield(i) == nil; i++ {
			}
			return nil // a failed yield: the consumers stopped
		})
		squares := weft.NewChan[int](16)
		for range workers {
			g.Go(func(t *weft.Task) error {
				for v, err := range numbers.All(t) {
					if err == nil {
						err = t.Sleep(delay) // the work
					}
					if err != nil || squares.Send(t, v*v) != nil {
						return err // cancelled: the pipeline stops
					}
				}
				return nil
			})
		}
		tick := t.Ticker(every)
		defer tick.Close()
		for r.done < n {
			var sq int
			switch i, err := weft.Select(t, weft.RecvCase(squares, &sq), weft.RecvCase(tick, nil), weft.RecvCase(stop, nil)); {
			case err != nil:
				return err
			case i == 0:
				r.sum += sq
				r.done++
			case i == 1:
				progress(r.done)
			case i == 2:
				r.interrupted = true
				g.Cancel() // every stage stops
				return nil
			}
		}
		return nil // the workers end as the numbers run out
	})
	return r, err
}
