package weft_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/weft-go/weft"
)

// A goroutine's SendWait hands a value to a task parked in Recv just as
// another goroutine settles the Run's last external promise: whatever the
// order, the value is received or SendWait returns an error, never both
// lost and accepted. The deadlock check that the settle triggers used to
// find the task parked with no goroutine waiting on the channel (the
// handing goroutine had already left it, its wake not yet posted), report
// a deadlock and give the value back to a channel nobody would read again:
// 56 of 20,000 Runs here.
func TestSendWaitToAParkedTaskAsTheLastExternalPromiseSettles(t *testing.T) {
	for _, loops := range []int{1, 2} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) { sendWaitAsTheLastPromiseSettles(t, loops) })
	}
}

func sendWaitAsTheLastPromiseSettles(t *testing.T, loops int) {
	runs := 20000 // about 1% of them lost the value before the fix
	if raceEnabled {
		runs = 4000
	}
	if testing.Short() {
		runs = 2000
	}
	lost, deadlocks := 0, 0
	for range runs {
		ctx, cancel := context.WithCancel(context.Background())
		var sendErr error
		var wg sync.WaitGroup
		got, err := weft.Run(func(wt *weft.Task) (int, error) {
			c := weft.NewChan[int](0)
			_, settle := weft.NewPromiseExternal[struct{}](wt)
			start := make(chan struct{})
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				sendErr = c.SendWait(ctx, 42)
			}()
			go func() {
				defer wg.Done()
				<-start
				settle(struct{}{}, nil)
			}()
			close(start)
			return c.Recv(wt)
		}, weft.WithLoops(loops))
		cancel() // a SendWait that found no receiver gives up
		wg.Wait()
		var d *weft.DeadlockError
		switch {
		case err == nil && got == 42:
			if sendErr != nil {
				t.Fatalf("the value was received but SendWait returned %v", sendErr)
			}
		case errors.As(err, &d):
			deadlocks++
			if sendErr == nil {
				lost++
			}
		default:
			t.Fatalf("Run: %d, %v", got, err)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d Runs: SendWait returned nil but the value was never received (the Run reported a deadlock)", lost, runs)
	}
	t.Logf("%d Runs, %d deadlocks (the send came too late: SendWait gave up)", runs, deadlocks)
}
