//go:build linux

package weft_test

import (
	"runtime"
	"testing"

	"github.com/weft-go/weft"
	"golang.org/x/sys/unix"
)

func niceOfThisThread() int {
	p, _ := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	return 20 - p
}

func TestOffloadWorkersRunBelowTheLoop(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base := niceOfThisThread()
	if base > 9 {
		t.Skipf("the test already runs at nice %d", base)
	}
	var inWorker, off int
	run(t, func(wt *weft.Task) {
		inWorker, _ = weft.Offload(wt, func() (int, error) { return niceOfThisThread(), nil })
	})
	run(t, func(wt *weft.Task) {
		off, _ = weft.Offload(wt, func() (int, error) { return niceOfThisThread(), nil })
	}, weft.WithLoopPriority(false))
	if inWorker != base+10 {
		t.Errorf("worker at nice %d, the caller at %d", inWorker, base)
	}
	if off != base {
		t.Errorf("with WithLoopPriority(false) the worker is at nice %d, the caller at %d", off, base)
	}
	if got := niceOfThisThread(); got != base {
		t.Errorf("the caller's thread went from nice %d to %d", base, got)
	}
}
