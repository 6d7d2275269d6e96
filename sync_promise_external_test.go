package weft_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestExternalPromiseSettledLaterByAGoroutineIsNotADeadlock(t *testing.T) {
	v, err := weft.Run(func(wt *weft.Task) (string, error) {
		p, settle := weft.NewPromiseExternal[string](wt)
		go func() {
			time.Sleep(20 * time.Millisecond)
			if !settle("from outside", nil) {
				panic("first settle reported false")
			}
			if settle("again", nil) {
				panic("second settle reported true")
			}
		}()
		return p.Await(wt)
	})
	if v != "from outside" || err != nil {
		t.Fatalf("Run = %q, %v", v, err)
	}
}

func TestExternalPromiseStopsKeepingRunAliveWhenItsTaskFinishes(t *testing.T) {
	release := make(chan struct{})
	done := make(chan struct{})
	_, err := weft.Run(func(wt *weft.Task) (int, error) {
		maker := weft.Go(wt, func(wt *weft.Task) (*weft.Promise[int], error) {
			p, settle := weft.NewPromiseExternal[int](wt)
			go func() {
				defer close(done)
				<-release
				settle(1, nil)
			}()
			return p, nil // the maker finishes: the promise no longer keeps Run alive
		})
		p, _ := maker.Await(wt)
		return p.Await(wt)
	})
	close(release)
	<-done
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v, want a deadlock once the maker finished", err)
	}
}

func TestExternalPromiseSettledOnItsOwnLoop(t *testing.T) {
	errNo := errors.New("no")
	v, err := weft.Run(func(wt *weft.Task) (int, error) {
		p, settle := weft.NewPromiseExternal[int](wt)
		spawn(wt, func(wt *weft.Task) { wt.Sleep(time.Millisecond); settle(0, errNo) })
		_, err := p.Await(wt)
		return 7, err
	}) // real time: a pending external promise holds virtual time still
	if v != 7 || err != errNo {
		t.Fatalf("Run = %v, %v", v, err)
	}
}

// The documented pattern: a goroutine that will send later holds an
// external promise, so the task waiting on the channel is not deadlocked.
func TestExternalPromiseKeepsATaskWaitingOnAChannelAlive(t *testing.T) {
	c := weft.NewChan[int](1)
	v, err := weft.Run(func(wt *weft.Task) (int, error) {
		_, done := weft.NewPromiseExternal[struct{}](wt)
		go func() {
			defer done(struct{}{}, nil)
			time.Sleep(20 * time.Millisecond)
			c.SendWait(context.Background(), 5)
		}()
		return c.Recv(wt)
	})
	if v != 5 || err != nil {
		t.Fatalf("Run = %v, %v", v, err)
	}
}
