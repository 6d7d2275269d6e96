package weft_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestUnawaitedFailuresArePartOfRunsError(t *testing.T) {
	errMain, errLost := errors.New("main failed"), errors.New("lost")
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, errLost })
		weft.Go(wt, func(wt *weft.Task) (int, error) { wt.Sleep(time.Millisecond); panic("lost panic") })
		return 0, errMain
	})
	if !errors.Is(err, errMain) || !errors.Is(err, errLost) {
		t.Fatalf("Run = %v", err)
	}
	var pe *weft.PanicError
	if !errors.As(err, &pe) || pe.Value != "lost panic" {
		t.Fatalf("the unawaited panic is missing from %v", err)
	}
	if !strings.Contains(err.Error(), "failure_test.go") {
		t.Errorf("report does not say where the failed task was started:\n%v", err)
	}
}

func TestAwaitedFailuresAreNotReportedAgain(t *testing.T) {
	errHandled := errors.New("handled")
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, errHandled })
		p.Await(wt)
		q := weft.Go(wt, func(wt *weft.Task) (int, error) { wt.Sleep(time.Millisecond); return 0, errHandled })
		weft.All(wt, q)
		return 3, nil
	})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestDeadlockWhenMainWaitsForever(t *testing.T) {
	var unwound []string
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		never, _ := weft.NewPromise[int]()
		helper := weft.Go(wt, func(wt *weft.Task) (int, error) { // helperLine
			defer func() { unwound = append(unwound, "helper") }()
			return never.Await(wt) // helperWait
		})
		defer func() { unwound = append(unwound, "main") }()
		return helper.Await(wt) // mainWait
	}, oneLoop) // unwound is shared: one loop unwinds both, in order
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v, want a DeadlockError", err)
	}
	const prefix = "weft: deadlock: main is waiting on a promise nothing can resolve"
	if !strings.HasPrefix(err.Error(), prefix) || !d.MainBlocked {
		t.Fatalf("error = %v", err)
	}
	if len(d.Blocked) != 2 || d.Blocked[0].Name != "main" || d.Blocked[1].Name != "task 2" {
		t.Fatalf("blocked = %+v", d.Blocked)
	}
	file := thisFile()
	h := d.Blocked[1]
	if h.Started != file+":"+lineOf(t, "helperLine") || h.Waiting != file+":"+lineOf(t, "helperWait") || h.Op != "Await" {
		t.Errorf("helper described as %+v", h)
	}
	if !strings.Contains(h.Func, "TestDeadlockWhenMainWaitsForever") {
		t.Errorf("helper function = %q", h.Func)
	}
	if m := d.Blocked[0]; m.Waiting != file+":"+lineOf(t, "mainWait") || m.Started != "Run" {
		t.Errorf("main described as %+v", m)
	}
	if !strings.Contains(err.Error(), h.Waiting) {
		t.Errorf("message does not name the wait site:\n%v", err)
	}
	if len(unwound) != 2 {
		t.Errorf("deferred calls run: %v", unwound)
	}
}

func TestDeadlockAfterMainReturnedKeepsMainsValue(t *testing.T) {
	v, err := weft.Run(func(wt *weft.Task) (string, error) {
		never, _ := weft.NewPromise[int]()
		weft.Go(wt, func(wt *weft.Task) (int, error) { return never.Await(wt) })
		return "main's value", nil
	})
	var d *weft.DeadlockError
	if v != "main's value" || !errors.As(err, &d) || d.MainBlocked || len(d.Blocked) != 1 {
		t.Fatalf("Run = %q, %v", v, err)
	}
	if !strings.HasPrefix(err.Error(), "weft: deadlock: main returned") {
		t.Fatalf("error = %v", err)
	}
}

func TestDeadlockUnwindingFailsLaterWaitsAtOnce(t *testing.T) {
	var second error
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		never, _ := weft.NewPromise[int]()
		_, err := never.Await(wt)
		// Unwinding: a new wait must not block again.
		_, second = never.Await(wt)
		return 0, err
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) || !errors.As(second, &d) {
		t.Fatalf("Run = %v, second wait = %v", err, second)
	}
}

func TestNothingPendingIsNotADeadlock(t *testing.T) {
	// A task waiting on a timer, or on a promise a sleeping task will
	// settle, is not deadlocked.
	run(t, func(wt *weft.Task) {
		p, settle := weft.NewPromise[int]()
		spawn(wt, func(wt *weft.Task) { wt.Sleep(20 * time.Millisecond); settle(1, nil) })
		if _, err := p.Await(wt); err != nil {
			t.Error(err)
		}
	})
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

func thisFile() string {
	_, file, _, _ := runtime.Caller(0)
	return file
}

// lineOf returns the line number of the first line in this file carrying
// the comment marker.
func lineOf(t *testing.T, marker string) string {
	t.Helper()
	data, err := readFile(thisFile())
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(data, "\n") {
		if strings.HasSuffix(strings.TrimSpace(line), "// "+marker) {
			return fmt.Sprint(i + 1)
		}
	}
	t.Fatalf("marker %q not found", marker)
	return ""
}

func TestGoexitInATaskEndsRunsGoroutineWithoutLeaks(t *testing.T) {
	// t.FailNow inside a task calls runtime.Goexit. It cannot be stopped;
	// Run must unwind the other tasks on the way out and leave nothing.
	done := make(chan []string)
	go func() {
		var log []string
		defer func() { done <- log }()
		weft.Run(func(wt *weft.Task) (int, error) {
			never, _ := weft.NewPromise[int]()
			spawn(wt, func(wt *weft.Task) {
				defer func() { log = append(log, "waiter unwound") }()
				never.Await(wt)
			})
			spawn(wt, func(wt *weft.Task) {
				defer func() { log = append(log, "sleeper unwound") }()
				wt.Sleep(time.Hour)
			})
			weft.Go(wt, func(wt *weft.Task) (int, error) { runtime.Goexit(); return 0, nil })
			log = append(log, "Run went on after Goexit")
			return 0, nil
		})
		log = append(log, "Run returned")
	}()
	log := <-done
	if strings.Join(log, ",") != "waiter unwound,sleeper unwound" && strings.Join(log, ",") != "sleeper unwound,waiter unwound" {
		t.Fatalf("log = %v", log)
	}
}
