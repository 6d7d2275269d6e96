package weft_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weft-go/weft"
)

// A producer and a consumer, with back-pressure: the producer waits while
// the buffer of 2 is full.
func ExampleChan() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		c := weft.NewChan[string](2)
		weft.Go(t, func(t *weft.Task) (struct{}, error) {
			for _, w := range strings.Fields("to be or not") {
				if err := c.Send(t, w); err != nil {
					return struct{}{}, err
				}
			}
			c.Close()
			return struct{}{}, nil
		})
		for w, err := range c.All(t) {
			if err != nil {
				return struct{}{}, err
			}
			fmt.Println(w)
		}
		_, err := c.Recv(t)
		fmt.Println("then:", err == io.EOF)
		return struct{}{}, nil
	})
	// Output:
	// to
	// be
	// or
	// not
	// then: true
}

// Select waits for the first of several operations; here a reply races a
// timeout on the loop's (virtual) clock.
func ExampleSelect() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		replies := weft.NewChan[string](0)
		weft.Go(t, func(t *weft.Task) (struct{}, error) {
			t.Sleep(3 * time.Second) // a slow server
			return struct{}{}, replies.Send(t, "pong")
		})
		var reply string
		i, _ := weft.Select(t, weft.RecvCase(replies, &reply), weft.AfterCase(time.Second))
		fmt.Println("case", i, "after", t.Now().Sub(time.Unix(0, 0)))
		i, _ = weft.Select(t, weft.RecvCase(replies, &reply), weft.AfterCase(10*time.Second))
		fmt.Println("case", i, reply, "after", t.Now().Sub(time.Unix(0, 0)))
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output:
	// case 1 after 1s
	// case 0 pong after 3s
}

// A Mutex holds a resource across suspension points: the second task
// waits until the first unlocks.
func ExampleMutex() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		var m weft.Mutex
		weft.Group(t, func(g *weft.TaskGroup) error {
			for _, name := range []string{"a", "b"} {
				g.Go(func(t *weft.Task) error {
					if err := m.Lock(t); err != nil {
						return err
					}
					defer m.Unlock()
					fmt.Println(name, "writes")
					t.Sleep(time.Millisecond) // still holding the lock
					fmt.Println(name, "done")
					return nil
				})
			}
			return nil
		})
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output:
	// a writes
	// a done
	// b writes
	// b done
}

// A Semaphore bounds how many tasks do something at once.
func ExampleSemaphore() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		s := weft.NewSemaphore(2)
		start := t.Now()
		weft.Group(t, func(g *weft.TaskGroup) error {
			for range 5 {
				g.Go(func(t *weft.Task) error {
					if err := s.Acquire(t, 1); err != nil {
						return err
					}
					defer s.Release(1)
					return t.Sleep(time.Second) // a job of one second
				})
			}
			return nil
		})
		fmt.Println("5 jobs, 2 at a time:", t.Now().Sub(start))
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output: 5 jobs, 2 at a time: 3s
}

// An Event lets tasks wait until something has happened once.
func ExampleEvent() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		var ready weft.Event
		w := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			fmt.Println("waiting")
			err := ready.Wait(t)
			fmt.Println("go")
			return struct{}{}, err
		})
		fmt.Println("setting up")
		ready.Set()
		w.Await(t)
		return struct{}{}, nil
	})
	// Output:
	// waiting
	// setting up
	// go
}

// Generate turns a producing function into a stream; the consumer ranges
// over it and stops it by leaving the loop.
func ExampleGenerate() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		squares := weft.Generate(t, 1, func(t *weft.Task, yield func(int) error) error {
			defer fmt.Println("producer stopped")
			for i := 1; ; i++ {
				if err := yield(i * i); err != nil {
					return err // the consumer is gone
				}
			}
		})
		for v, err := range squares.All(t) {
			if err != nil || v > 20 {
				break
			}
			fmt.Println(v)
		}
		t.Yield() // let the producer unwind
		return struct{}{}, nil
	})
	// Output:
	// 1
	// 4
	// 9
	// 16
	// producer stopped
}

// A ticker on virtual time: a progress line every second while work runs.
func ExampleTask_Ticker() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		start := t.Now()
		work := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			return struct{}{}, t.Sleep(3500 * time.Millisecond)
		})
		tick := t.Ticker(time.Second)
		defer tick.Close()
		done := weft.NewChan[struct{}](1)
		weft.Go(t, func(t *weft.Task) (struct{}, error) {
			work.Await(t)
			return struct{}{}, done.Send(t, struct{}{})
		})
		for {
			var now time.Time
			i, _ := weft.Select(t, weft.RecvCase(tick, &now), weft.RecvCase(done, nil))
			if i == 1 {
				fmt.Println("done at", t.Now().Sub(start))
				return struct{}{}, nil
			}
			fmt.Println("working...", now.Sub(start))
		}
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output:
	// working... 1s
	// working... 2s
	// working... 3s
	// done at 3.5s
}

// A goroutine outside weft hands a result to a task: the external promise
// keeps Run alive until the goroutine settles it.
func ExampleNewPromiseExternal() {
	v, err := weft.Run(func(t *weft.Task) (string, error) {
		p, settle := weft.NewPromiseExternal[string](t)
		go func() {
			time.Sleep(10 * time.Millisecond) // a blocking library call, say
			settle("from a goroutine", nil)
		}()
		return p.Await(t)
	})
	fmt.Println(v, err)
	// Output: from a goroutine <nil>
}

// SendWait and RecvWait let plain goroutines use a channel without
// blocking any loop.
func ExampleChan_SendWait() {
	c := weft.NewChan[int](4)
	go func() {
		for i := 1; i <= 3; i++ {
			c.SendWait(context.Background(), i*10)
		}
		c.Close()
	}()
	total, _ := weft.Run(func(t *weft.Task) (int, error) {
		// The goroutine is outside the loop: keep Run alive meanwhile.
		weft.NewPromiseExternal[struct{}](t)
		sum := 0
		for v, err := range c.All(t) {
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	fmt.Println(total)
	// Output: 60
}
