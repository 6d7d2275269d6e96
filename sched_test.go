package weft_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// run is Run for tests whose main returns nothing: it fails the test on an
// error.
func run(t *testing.T, main func(t *weft.Task), opts ...weft.Option) {
	t.Helper()
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		main(wt)
		return struct{}{}, nil
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
}

// oneLoop marks a test that checks one loop's exact order (or shares state
// between tasks without locks, as tasks of one loop may): it runs on one
// loop whatever WEFT_LOOPS says.
var oneLoop = weft.WithLoops(1)

// spawn starts f as a task that returns nothing.
func spawn(t *weft.Task, f func(t *weft.Task)) *weft.Promise[struct{}] {
	return weft.Go(t, func(t *weft.Task) (struct{}, error) {
		f(t)
		return struct{}{}, nil
	})
}

func TestRunReturnsMainsValueAndError(t *testing.T) {
	v, err := weft.Run(func(t *weft.Task) (string, error) { return "hello", nil })
	if v != "hello" || err != nil {
		t.Fatalf("Run = %q, %v", v, err)
	}
}

func TestRunWaitsForTasksNobodyAwaited(t *testing.T) {
	var log []string
	run(t, func(wt *weft.Task) {
		spawn(wt, func(wt *weft.Task) {
			wt.Sleep(30 * time.Millisecond)
			log = append(log, "orphan done")
		})
		log = append(log, "main done")
	})
	if strings.Join(log, ",") != "main done,orphan done" {
		t.Fatalf("log = %v", log)
	}
}

func TestGoRunsTheChildFirst(t *testing.T) {
	var log []string
	run(t, func(wt *weft.Task) {
		log = append(log, "parent before")
		spawn(wt, func(*weft.Task) { log = append(log, "child") })
		log = append(log, "parent after")
	})
	if got := strings.Join(log, ","); got != "parent before,child,parent after" {
		t.Fatalf("order = %s", got)
	}
}

func TestRunQueueIsFIFOAndYieldGoesToTheBack(t *testing.T) {
	var log []string
	worker := func(name string) func(*weft.Task) {
		return func(wt *weft.Task) {
			for i := 1; i <= 3; i++ {
				log = append(log, name+string(rune('0'+i)))
				wt.Yield()
			}
		}
	}
	run(t, func(wt *weft.Task) {
		a := spawn(wt, worker("a"))
		b := spawn(wt, worker("b"))
		a.Await(wt)
		b.Await(wt)
	}, oneLoop)
	// The OCaml runtime's order: a is queued again before b starts.
	if got := strings.Join(log, " "); got != "a1 a2 b1 a3 b2 b3" {
		t.Fatalf("order = %s", got)
	}
}

func TestManyTasksRoundRobinInSpawnOrder(t *testing.T) {
	const n, rounds = 50, 4
	var log []int
	run(t, func(wt *weft.Task) {
		ps := make([]*weft.Promise[struct{}], n)
		for i := range ps {
			ps[i] = spawn(wt, func(wt *weft.Task) {
				for r := 0; r < rounds; r++ {
					wt.Yield()
					log = append(log, i)
				}
			})
		}
		weft.All(wt, ps...)
	}, oneLoop)
	if len(log) != n*rounds {
		t.Fatalf("%d steps, want %d", len(log), n*rounds)
	}
	// FIFO: tasks take their last step in the order they were spawned.
	last := make([]int, n)
	for pos, i := range log {
		last[i] = pos
	}
	for i := 1; i < n; i++ {
		if last[i] < last[i-1] {
			t.Fatalf("task %d finished before task %d: %v", i, i-1, log)
		}
	}
}

func TestSleepTiesWakeInFIFOOrder(t *testing.T) {
	var log []int
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[struct{}]
		for i := 0; i < 10; i++ {
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				wt.Sleep(time.Hour)
				log = append(log, i)
			}))
		}
		weft.All(wt, ps...)
	}, weft.WithVirtualTime(time.Unix(0, 0)), oneLoop)
	for i, v := range log {
		if v != i {
			t.Fatalf("equal deadlines woke out of order: %v", log)
		}
	}
}

func TestSleepWakesInDeadlineOrder(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // it checks one loop's order (and shares log without a lock)
	var log []int
	run(t, func(wt *weft.Task) {
		var ps []*weft.Promise[struct{}]
		for _, ms := range []int{50, 10, 40, 20, 30} {
			ps = append(ps, spawn(wt, func(wt *weft.Task) {
				wt.Sleep(time.Duration(ms) * time.Millisecond)
				log = append(log, ms)
			}))
		}
		weft.All(wt, ps...)
	})
	for i := 1; i < len(log); i++ {
		if log[i] < log[i-1] {
			t.Fatalf("wake order %v", log)
		}
	}
}

func TestSleepZeroOrNegativeYields(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // it checks one loop's order
	for _, d := range []time.Duration{0, -time.Second} {
		var log []string
		run(t, func(wt *weft.Task) {
			spawn(wt, func(wt *weft.Task) {
				wt.Yield()
				log = append(log, "other")
			})
			wt.Sleep(d)
			log = append(log, "sleeper")
		})
		if strings.Join(log, ",") != "other,sleeper" {
			t.Fatalf("Sleep(%v) did not yield: %v", d, log)
		}
	}
}

func TestSleepLastsAtLeastItsDuration(t *testing.T) {
	run(t, func(wt *weft.Task) {
		start := time.Now()
		wt.Sleep(20 * time.Millisecond)
		if el := time.Since(start); el < 20*time.Millisecond {
			t.Errorf("Sleep(20ms) took %v", el)
		}
	})
}

func TestNowReadsTheLoopClock(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	run(t, func(wt *weft.Task) {
		if !wt.Now().Equal(start) {
			t.Errorf("virtual Now = %v", wt.Now())
		}
		wt.Sleep(90 * time.Minute)
		if got := wt.Now().Sub(start); got != 90*time.Minute {
			t.Errorf("after Sleep(90m) virtual time moved %v", got)
		}
	}, weft.WithVirtualTime(start))
	run(t, func(wt *weft.Task) {
		if d := time.Since(wt.Now()); d < -time.Second || d > time.Second {
			t.Errorf("real Now is %v off", d)
		}
	})
}

func TestHundredThousandTasks(t *testing.T) {
	const n = 100_000
	sum := int64(0)
	run(t, func(wt *weft.Task) {
		ps := make([]*weft.Promise[int], n)
		for i := range ps {
			ps[i] = weft.Go(wt, func(wt *weft.Task) (int, error) {
				wt.Sleep(time.Duration(i%50) * time.Millisecond)
				return i, nil
			})
		}
		vals, err := weft.All(wt, ps...)
		if err != nil {
			t.Error(err)
		}
		for _, v := range vals {
			sum += int64(v)
		}
	})
	if sum != int64(n)*(n-1)/2 {
		t.Fatalf("sum = %d", sum)
	}
}

func TestParallelRunsAreIndependent(t *testing.T) {
	done := make(chan int, 4)
	for r := 0; r < 4; r++ {
		go func() {
			v, _ := weft.Run(func(wt *weft.Task) (int, error) {
				total := 0
				for i := 0; i < 200; i++ {
					p := weft.Go(wt, func(wt *weft.Task) (int, error) { wt.Yield(); return i, nil })
					v, _ := p.Await(wt)
					total += v
				}
				return total, nil
			})
			done <- v
		}()
	}
	for r := 0; r < 4; r++ {
		if v := <-done; v != 199*200/2 {
			t.Fatalf("run %d got %d", r, v)
		}
	}
}

// spinFor burns CPU for d, without suspending.
func spinFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// loopsUsed counts the loops recorded in m (keys: loop indexes).
func loopsUsed(m *sync.Map) int {
	n := 0
	m.Range(func(any, any) bool { n++; return true })
	return n
}
