package weft_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft"
)

// Three tasks sleep at once; main awaits all three. The run takes as long
// as the slowest, 300 ms, not the sum. (Virtual time makes the example
// instant and its output exact.)
func Example() {
	start := time.Unix(0, 0)
	total, err := weft.Run(func(t *weft.Task) (int, error) {
		fetch := func(name string, d time.Duration) *weft.Promise[int] {
			return weft.Go(t, func(t *weft.Task) (int, error) {
				fmt.Printf("%-5s start\n", name)
				t.Sleep(d)
				fmt.Printf("%-5s done after %v\n", name, t.Now().Sub(start))
				return len(name), nil
			})
		}
		vals, err := weft.All(t, fetch("alpha", 300*time.Millisecond), fetch("beta", 100*time.Millisecond))
		if err != nil {
			return 0, err
		}
		fmt.Println("total time", t.Now().Sub(start))
		return vals[0] + vals[1], nil
	}, weft.WithVirtualTime(start))
	fmt.Println(total, err)
	// Output:
	// alpha start
	// beta  start
	// beta  done after 100ms
	// alpha done after 300ms
	// total time 300ms
	// 9 <nil>
}

func ExampleRun() {
	v, err := weft.Run(func(t *weft.Task) (string, error) {
		return "hello from main", nil
	})
	fmt.Println(v, err)
	// Output: hello from main <nil>
}

// Go runs the child first: the parent continues when the child suspends.
func ExampleGo() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		fmt.Println("parent: before Go")
		p := weft.Go(t, func(t *weft.Task) (int, error) {
			fmt.Println("child: runs first, then yields")
			t.Yield()
			fmt.Println("child: done")
			return 42, nil
		})
		fmt.Println("parent: after Go")
		v, _ := p.Await(t)
		fmt.Println("parent: got", v)
		return struct{}{}, nil
	})
	// Output:
	// parent: before Go
	// child: runs first, then yields
	// parent: after Go
	// child: done
	// parent: got 42
}

var errNotFound = errors.New("not found")

// A task's error arrives at the Await; errors.Is sees it.
func ExamplePromise_Await() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		p := weft.Go(t, func(t *weft.Task) (int, error) {
			return 0, fmt.Errorf("lookup cobol: %w", errNotFound)
		})
		_, err := p.Await(t)
		fmt.Println(err, errors.Is(err, errNotFound))
		return struct{}{}, nil
	})
	// Output: lookup cobol: not found true
}

// A panic in a task becomes a *PanicError at the Await.
func ExamplePanicError() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		_, err := weft.Go(t, func(t *weft.Task) (int, error) { panic("boom") }).Await(t)
		var pe *weft.PanicError
		fmt.Println(errors.As(err, &pe), pe.Value)
		return struct{}{}, nil
	})
	// Output: true boom
}

// NewPromise turns a callback (here a goroutine) into a promise.
func ExampleNewPromise() {
	weft.Run(func(t *weft.Task) (string, error) {
		p, settle := weft.NewPromise[string]()
		go func() { settle("from a goroutine", nil) }()
		// A promise settled outside the loop keeps nothing alive, so give the
		// loop something to wait on meanwhile.
		weft.Go(t, func(t *weft.Task) (int, error) { return 0, t.Sleep(time.Second) })
		v, _ := p.Await(t)
		fmt.Println(v)
		fmt.Println(settle("again", nil))
		return v, nil
	})
	// Output:
	// from a goroutine
	// false
}

func ExampleAll() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		word := func(s string, d time.Duration) *weft.Promise[string] {
			return weft.Go(t, func(t *weft.Task) (string, error) { t.Sleep(d); return s, nil })
		}
		words, err := weft.All(t, word("a", 20*time.Millisecond), word("b", 10*time.Millisecond), word("c", 15*time.Millisecond))
		fmt.Println(strings.Join(words, " "), err)
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output: a b c <nil>
}

func ExampleRace() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		runner := func(s string, d time.Duration) *weft.Promise[string] {
			return weft.Go(t, func(t *weft.Task) (string, error) { t.Sleep(d); return s, nil })
		}
		winner, _ := weft.Race(t, runner("tortoise", 300*time.Millisecond), runner("hare", 100*time.Millisecond))
		fmt.Println(winner)
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	// Output: hare
}

func ExampleTask_Yield() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		worker := func(name string) *weft.Promise[struct{}] {
			return weft.Go(t, func(t *weft.Task) (struct{}, error) {
				for i := 1; i <= 3; i++ {
					fmt.Printf("%s%d ", name, i)
					t.Yield()
				}
				return struct{}{}, nil
			})
		}
		weft.All(t, worker("a"), worker("b"))
		fmt.Println()
		return struct{}{}, nil
	})
	// Output: a1 a2 b1 a3 b2 b3
}

// Instead of hanging, Run reports a deadlock.
func ExampleDeadlockError() {
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		p, _ := weft.NewPromise[int]() // nothing will ever settle it
		return p.Await(t)
	})
	first, _, _ := strings.Cut(err.Error(), "\n")
	fmt.Println(first)
	// Output: weft: deadlock: main is waiting on a promise nothing can resolve
}

// With virtual time, an hour of sleeping takes no time at all.
func ExampleWithVirtualTime() {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	weft.Run(func(t *weft.Task) (struct{}, error) {
		t.Sleep(time.Hour)
		fmt.Println(t.Now().Format(time.Kitchen))
		return struct{}{}, nil
	}, weft.WithVirtualTime(start))
	// Output: 1:00AM
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

// A task's name shows in Dump, the watchdog's reports, traces and the
// profiler label weft.task.
func ExampleTask_SetName() {
	weft.Run(func(t *weft.Task) (int, error) {
		p := weft.Go(t, func(t *weft.Task) (int, error) {
			fmt.Printf("before: %q\n", t.Name())
			t.SetName("fetch example.com")
			fmt.Printf("after: %q\n", t.Name())
			return 0, nil
		})
		return p.Await(t)
	})
	// Output:
	// before: ""
	// after: "fetch example.com"
}

// Tracing a run on a virtual clock; `weft trace run.json -o run.svg`
// draws the file as a timeline.
func ExampleWithTrace() {
	f, err := os.CreateTemp("", "weft-trace-*.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	_, err = weft.Run(func(t *weft.Task) (int, error) {
		t.SetName("main")
		return 0, t.Sleep(time.Millisecond)
	}, weft.WithTrace(f), weft.WithVirtualTime(time.Unix(0, 0)))
	fmt.Println(err)
	// Output:
	// <nil>
}
