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

// TestDeadlockReportNamesStartAndTheGroupLimit: a task blocked in
// TaskGroup.Start (its function never calls ready) and one blocked in
// TaskGroup.Go under SetLimit are reported as such, at their lines.
func TestDeadlockReportNamesStartAndTheGroupLimit(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		c := weft.NewChan[int](0)
		return struct{}{}, weft.Group(wt, func(g *weft.TaskGroup) error {
			g.SetLimit(1)
			g.Go(func(wt *weft.Task) error {
				wt.SetName("holder")
				_, err := c.Recv(wt)
				return err
			})
			g.Go(func(wt *weft.Task) error { // limitWait
				return nil
			})
			return nil
		})
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v", err)
	}
	if op, site := blockedOp(d, "main"); op != "TaskGroup.Go (limit)" || site != siteOf(t, "limitWait") {
		t.Errorf("main: %s at %s\n%v", op, site, err)
	}

	_, err = weft.Run(func(wt *weft.Task) (struct{}, error) {
		c := weft.NewChan[int](0)
		return struct{}{}, weft.Group(wt, func(g *weft.TaskGroup) error {
			return g.Start(func(wt *weft.Task, ready func()) error { // startWait
				_, err := c.Recv(wt)
				return err
			})
		})
	})
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v", err)
	}
	if op, site := blockedOp(d, "main"); op != "TaskGroup.Start" || site != siteOf(t, "startWait") {
		t.Errorf("main: %s at %s\n%v", op, site, err)
	}
}

func TestDeadlockAcrossLoopsNamesChannelAndLockWaits(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		c := weft.NewChan[int](0)
		var m weft.Mutex
		m.Lock(wt)
		// The two waits on the other loop than main's Select.
		weft.Go(wt, func(wt *weft.Task) (struct{}, error) { weft.PinTo(wt, 1); return struct{}{}, m.Lock(wt) })
		weft.Go(wt, func(wt *weft.Task) (int, error) { weft.PinTo(wt, 1); return c.Recv(wt) })
		_, err := weft.Select(wt, weft.SendCase(weft.NewChan[int](0), 1))
		return struct{}{}, err
	}, weft.WithLoops(2))
	var d *weft.DeadlockError
	if !errors.As(err, &d) || len(d.Blocked) != 3 {
		t.Fatalf("Run = %v, want a deadlock of 3 tasks", err)
	}
	ops := map[string]bool{}
	for _, b := range d.Blocked {
		ops[b.Op] = true
	}
	if !ops["Mutex.Lock"] || !ops["Chan.Recv"] || !ops["Select"] {
		t.Fatalf("blocked ops %v", ops)
	}
}
