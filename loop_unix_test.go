//go:build unix

package weft_test

import (
	"testing"
	"time"

	"github.com/weft-go/weft"
	"golang.org/x/sys/unix"
)

func TestIdleLoopUsesNoCPU(t *testing.T) {
	if raceEnabled {
		t.Skip("CPU accounting is meaningless under the race detector")
	}
	var before, after unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &before)
	run(t, func(wt *weft.Task) { wt.Sleep(400 * time.Millisecond) })
	unix.Getrusage(unix.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	if cpu > 60*time.Millisecond {
		t.Fatalf("a 400 ms sleep cost %v of CPU", cpu)
	}
}
