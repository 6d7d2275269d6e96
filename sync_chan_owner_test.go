package weft_test

import (
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// TestGoroutineAskingForAnOwnedChannelAsItsRunEndsIsServed: a goroutine's
// first use of a channel that a loop owns asks that loop to share it; if
// the Run ends just then, the request must still be served (it was dropped
// with the loop's inbox, and the goroutine blocked for good).
func TestGoroutineAskingForAnOwnedChannelAsItsRunEndsIsServed(t *testing.T) {
	for i := range 300 {
		c := weft.NewChan[int](1)
		start := make(chan struct{})
		sent := make(chan bool)
		go func() {
			<-start
			sent <- c.TrySend(1)
		}()
		run(t, func(wt *weft.Task) {
			for range 1100 { // past ownThreshold: the loop owns c
				c.Send(wt, 0)
				c.Recv(wt)
			}
			close(start) // the goroutine asks as main returns
		}, oneLoop)
		select {
		case ok := <-sent:
			if !ok {
				t.Fatalf("round %d: TrySend on an empty channel of capacity 1 failed", i)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: the goroutine's TrySend never returned", i)
		}
	}
}
