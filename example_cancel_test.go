package weft_test

import (
	"context"
	"errors"
	"fmt"
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
