package weft

import (
	"strings"
	"testing"

	"github.com/weft-go/weft/internal/coro"
)

// The owner checks catch a loop's timer heap touched from a task of
// another loop, at the access (under -race or weft_debug).
func TestOwnerChecksCatchATimerHeapTouchedFromAnotherLoop(t *testing.T) {
	if !ownerChecks || !coro.HaveGetg {
		t.Skip("owner checks are on only under -race or -tags weft_debug, with goroutine identity")
	}
	var msg string
	_, err := Run(func(wt *Task) (struct{}, error) {
		home := wt.loop
		// The child moves to the other loop (as a Conn's task does).
		p := Go(wt, func(ct *Task) (struct{}, error) {
			ct.migrate(ct.rs.loops[1], "a test")
			if ct.loop == home {
				t.Error("the child never moved to the other loop")
				return struct{}{}, nil
			}
			func() {
				defer func() { msg, _ = recover().(string) }()
				home.timers.push(&timer{index: -1, when: 1 << 62, fn: func() {}})
			}()
			return struct{}{}, nil
		})
		p.Await(wt)
		return struct{}{}, nil
	}, WithLoops(2))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "timer heap of loop 0 touched from another goroutine") {
		t.Fatalf("pushing on loop 0's timer heap from loop 1: panic %q", msg)
	}
}
