package weft_test

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestManyDetachedFailuresKeepMemoryBoundedAndTheCountExact(t *testing.T) {
	const n = 200_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		for i := range n {
			weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, fmt.Errorf("failure %d", i) })
			if i%10_000 == 0 {
				runtime.GC()
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		return struct{}{}, nil
	}, weft.WithLogger(nil))
	if growth := int64(after.HeapInuse) - int64(before.HeapInuse); growth > 20<<20 {
		t.Errorf("heap grew by %d MB for %d failures", growth>>20, n)
	}
	if err == nil {
		t.Fatal("Run reported nothing")
	}
	msg := err.Error()
	if !strings.Contains(msg, fmt.Sprintf("and %d more failures", n-64)) {
		t.Fatalf("Run's error does not count the rest exactly: ...%s", msg[max(0, len(msg)-300):])
	}
	if got := strings.Count(msg, "failed and nothing awaited it"); got != 64 {
		t.Fatalf("%d failures kept in full, want 64", got)
	}
	if !strings.Contains(msg, "failure 0\n") || !strings.Contains(msg, "failure 63\n") || strings.Contains(msg, "failure 64\n") {
		t.Fatal("the first 64 failures are not the ones kept in full")
	}
}

func TestLateAwaitsLowerTheCountOfUnobservedFailures(t *testing.T) {
	var ps []*weft.Promise[int]
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		for i := range 100 {
			ps = append(ps, weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, fmt.Errorf("f%d", i) }))
		}
		for _, p := range ps[50:] { // 14 kept ones and the 36 only counted are awaited late
			p.Await(wt)
		}
		return struct{}{}, nil
	}, weft.WithLogger(nil))
	if err == nil || strings.Contains(err.Error(), "more failures") {
		t.Fatalf("Run = %v", err)
	}
	if got := strings.Count(err.Error(), "failed and nothing awaited it"); got != 50 {
		t.Fatalf("%d reported in full, want the 50 never awaited", got)
	}
}

func TestDroppedFailedPromiseIsLoggedBeforeRunEnds(t *testing.T) {
	var log lockedBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	boom := errors.New("nobody will ever see this")
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		kept := weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, errors.New("awaited late") })
		weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, boom }) // promise dropped
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(log.String(), boom.Error()) {
			if time.Now().After(deadline) {
				return struct{}{}, errors.New("the dropped failure was never logged")
			}
			runtime.GC()
			wt.Sleep(time.Millisecond)
		}
		kept.Await(wt) // awaited late: must not have been logged
		return struct{}{}, nil
	}, weft.WithLogger(logger))
	if err == nil || !errors.Is(err, boom) {
		t.Fatalf("Run = %v (the dropped failure must still be part of it)", err)
	}
	out := log.String()
	if strings.Contains(out, "awaited late") {
		t.Fatalf("a failure awaited late was logged: %s", out)
	}
	if !strings.Contains(out, "level=ERROR") {
		t.Fatalf("not logged at Error level: %s", out)
	}
}

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
	if !strings.Contains(err.Error(), "unobserved_test.go") {
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

// TestUnobservedFailureNamesTheTask: Run's report of a failure nobody
// awaited shows the task's name.
func TestUnobservedFailureNamesTheTask(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		weft.Go(wt, func(wt *weft.Task) (int, error) {
			wt.SetName("flaky")
			return 0, errors.New("boom")
		})
		return struct{}{}, nil
	}, weft.WithLogger(nil))
	if err == nil || !regexp.MustCompile(`task \d+ "flaky" \(github\.com/weft-go/weft_test\.TestUnobservedFailureNamesTheTask\.func1\.1, started at .*unobserved_test\.go:\d+\) failed`).MatchString(err.Error()) {
		t.Fatalf("Run = %v", err)
	}
}
