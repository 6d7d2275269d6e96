package weft_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestFirstReturnsTheWinnerAndCancelsTheRest(t *testing.T) {
	var finished []string
	run(t, func(wt *weft.Task) {
		racer := func(name string, d time.Duration) func(*weft.Task) (string, error) {
			return func(wt *weft.Task) (string, error) {
				defer func() { finished = append(finished, name) }()
				if err := wt.Sleep(d); err != nil {
					return "", err
				}
				return name, nil
			}
		}
		start := time.Now()
		v, err := weft.First(wt, racer("tortoise", time.Hour), racer("hare", 10*time.Millisecond), racer("snail", time.Hour))
		if v != "hare" || err != nil {
			t.Fatalf("First = %q, %v", v, err)
		}
		if len(finished) != 3 {
			t.Fatalf("First returned before every child finished: %v", finished)
		}
		if el := time.Since(start); el > time.Second {
			t.Fatalf("losers were not cancelled: %v", el)
		}
	}, oneLoop)
}

func TestFirstErrorWinsToo(t *testing.T) {
	errFast := errors.New("fast failure")
	run(t, func(wt *weft.Task) {
		_, err := weft.First(wt,
			func(wt *weft.Task) (int, error) { return 1, wt.Sleep(time.Hour) },
			func(wt *weft.Task) (int, error) { wt.Sleep(time.Millisecond); return 0, errFast })
		if err != errFast {
			t.Fatalf("First = %v", err)
		}
		if _, err := weft.First[int](wt); err == nil {
			t.Fatal("First() returned no error")
		}
	})
}

func TestFirstDoesNotStartFunctionsAfterAnImmediateWinner(t *testing.T) {
	started := 0
	run(t, func(wt *weft.Task) {
		v, _ := weft.First(wt,
			func(*weft.Task) (int, error) { started++; return 1, nil },
			func(wt *weft.Task) (int, error) { started++; return 2, wt.Sleep(time.Hour) })
		if v != 1 || started != 1 {
			t.Fatalf("First = %d with %d started", v, started)
		}
	})
}

func TestCancellingTheCallerOfFirstCancelsItsChildren(t *testing.T) {
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) {
			return weft.First(wt,
				func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) },
				func(wt *weft.Task) (int, error) { return 0, wt.Sleep(time.Hour) })
		})
		p.Cancel()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("First in a cancelled task = %v", err)
		}
	})
}

func TestFirstStartsNothingAfterAnEarlierFunctionFinished(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // its tasks share state without locks, as tasks of one loop may
	run(t, func(wt *weft.Task) {
		started := 0
		v, err := weft.First(wt,
			func(wt *weft.Task) (string, error) {
				started++
				wt.Yield() // suspends; finishes while the second one runs
				return "first", nil
			},
			func(wt *weft.Task) (string, error) {
				started++
				wt.Yield() // lets the first finish
				wt.Yield()
				return "second", nil
			},
			func(wt *weft.Task) (string, error) {
				started++
				return "third", nil
			})
		if v != "first" || err != nil || started != 2 {
			t.Fatalf("First = %q, %v with %d started", v, err, started)
		}
	})
}
