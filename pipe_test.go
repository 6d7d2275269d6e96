//go:build unix

package weft_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// Closing a pipe's read end while a task waits on it must release the
// end for good: the writer then gets EPIPE. (On io_uring the wait is an
// operation in flight that holds the file until it is cancelled.)
func TestClosingAWaitedPipeEndReleasesIt(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			r, w, err := weft.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			reader := weft.Go(wt, func(wt *weft.Task) (int, error) {
				return r.Read(wt, make([]byte, 8))
			})
			wt.Sleep(10 * time.Millisecond) // the reader waits, the loop polled
			r.Close()
			if _, err := reader.Await(wt); err == nil {
				t.Error("read on a closed pipe end succeeded")
			}
			_, err = w.Write(wt, []byte("x"))
			if !errors.Is(err, syscall.EPIPE) {
				t.Errorf("write after the read end closed: %v, want EPIPE", err)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}
