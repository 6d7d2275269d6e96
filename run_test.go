package weft_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

// Each weft benchmark sits beside its Go-native twin; `cd bench && go run .
// core` prints them side by side with the ratios.

func BenchmarkEmptyRun(b *testing.B) { benchmarks.EmptyRun(b) }

func TestRunContextCancelsMain(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	errStop := errors.New("stop")
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		child := weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) })
		go cancel(errStop)
		if _, err := child.Await(wt); !errors.Is(err, errStop) {
			t.Errorf("child = %v", err)
		}
		return 0, wt.Sleep(time.Hour)
	}, weft.WithContext(ctx))
	if !errors.Is(err, errStop) {
		t.Fatalf("Run = %v", err)
	}
}

func TestRunInsideATaskReturnsAnError(t *testing.T) {
	run(t, func(wt *weft.Task) {
		_, err := weft.Run(func(*weft.Task) (int, error) { return 1, nil })
		if !errors.Is(err, weft.ErrNestedRun) {
			t.Errorf("nested Run = %v", err)
		}
	})
}

func TestRunWithNilMainReturnsAnError(t *testing.T) {
	if _, err := weft.Run[int](nil); err == nil {
		t.Fatal("no error")
	}
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

func TestRunContextCancelledWithACauseIsACancellationNotAFailure(t *testing.T) {
	why := errors.New("operator said stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	var mu sync.Mutex // the tasks may be on several loops (CI's pass)
	var waitErrs []error
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		for range 3 {
			weft.Go(wt, func(wt *weft.Task) (int, error) {
				err := wt.Sleep(time.Hour)
				mu.Lock()
				waitErrs = append(waitErrs, err)
				mu.Unlock()
				return 0, err
			})
		}
		cancel(why)
		err := wt.Sleep(time.Hour)
		mu.Lock()
		waitErrs = append(waitErrs, err)
		mu.Unlock()
		return 0, err
	}, weft.WithContext(ctx))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, why) {
		t.Fatalf("Run = %v", err)
	}
	if strings.Contains(err.Error(), "nothing awaited") {
		t.Fatalf("cancelled tasks were reported as failures: %v", err)
	}
	for _, e := range waitErrs {
		if !errors.Is(e, context.Canceled) || !errors.Is(e, why) {
			t.Fatalf("a wait returned %v", e)
		}
	}
	if len(waitErrs) != 4 {
		t.Fatalf("%d waits ended", len(waitErrs))
	}
}
