package weft_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft"
)

func ExamplePromise_Cancel() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		p := weft.Go(t, func(t *weft.Task) (string, error) {
			if err := t.Sleep(time.Hour); err != nil {
				return "woken early", err
			}
			return "slept", nil
		})
		p.Cancel() // returns at once
		v, err := p.Await(t)
		fmt.Println(v, errors.Is(err, context.Canceled))
		return struct{}{}, nil
	})
	// Output: woken early true
}

func ExampleFirst() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		mirror := func(name string, d time.Duration) func(*weft.Task) (string, error) {
			return func(t *weft.Task) (string, error) {
				if err := t.Sleep(d); err != nil {
					fmt.Println(name, "cancelled")
					return "", err
				}
				return name, nil
			}
		}
		v, err := weft.First(t, mirror("us-east", 80*time.Millisecond), mirror("eu-west", 30*time.Millisecond))
		fmt.Println("fastest:", v, err)
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output:
	// us-east cancelled
	// fastest: eu-west <nil>
}

func ExampleTimeout() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		_, err := weft.Timeout(t, 100*time.Millisecond, func(t *weft.Task) (int, error) {
			err := t.Sleep(time.Second)
			fmt.Println("inside:", errors.Is(err, context.DeadlineExceeded))
			return 0, err
		})
		fmt.Println("Timeout:", err, errors.Is(err, weft.ErrTimeout))
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output:
	// inside: true
	// Timeout: weft: timeout true
}

func ExampleGroup() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		err := weft.Group(t, func(g *weft.TaskGroup) error {
			g.Go(func(t *weft.Task) error {
				if err := t.Sleep(time.Hour); err != nil {
					fmt.Println("worker cancelled")
					return err
				}
				return nil
			})
			g.Go(func(t *weft.Task) error {
				t.Sleep(10 * time.Millisecond)
				return errors.New("disk full")
			})
			return nil
		})
		fmt.Println("Group:", err)
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output:
	// worker cancelled
	// Group: disk full
}

func ExampleTask_Protect() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		p := weft.Go(t, func(t *weft.Task) (int, error) {
			t.Sleep(time.Hour) // cancelled here
			t.Protect(func(t *weft.Task) error {
				err := t.Sleep(10 * time.Millisecond) // a polite goodbye: not interrupted
				fmt.Println("goodbye sent:", err == nil)
				return err
			})
			return 0, t.Yield() // the cancellation shows again here
		})
		p.Cancel()
		_, err := p.Await(t)
		fmt.Println(errors.Is(err, context.Canceled))
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output:
	// goodbye sent: true
	// true
}

// A CPU-bound loop that calls Checkpoint lets a timer task run in the
// middle of it: the computation stops once the ticker has ticked three
// times (bounded, in case the machine is very slow).
func ExampleTask_Checkpoint() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		var ticks atomic.Int32 // atomic: with several loops the ticker may run on another
		weft.Go(t, func(t *weft.Task) (struct{}, error) {
			for i := 0; i < 3; i++ {
				t.Sleep(time.Millisecond)
				ticks.Add(1)
			}
			return struct{}{}, nil
		})
		sum := 0
		for i := 0; i < 1<<30 && ticks.Load() < 3; i++ {
			sum += i
			if i%1000 == 0 {
				t.Checkpoint() // the ticker runs here when its timer is due
			}
		}
		fmt.Println("ticks while computing:", ticks.Load())
		return struct{}{}, nil
	})
	// Output: ticks while computing: 3
}
