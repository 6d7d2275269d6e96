package weft

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// A portable Conn's read and write check the deadline before each call on
// the helper goroutine, as netFD.wait does before each wait: a deadline's
// timer interrupts only the tasks waiting when it fires, so a task that
// was runnable then (a TLSConn reader just handed its lock, which calls
// the Conn's read directly) must find it passed, or its call, which no
// timer interrupts any more, waits for ever. (nettest's ConcurrentMethods
// over a TLSConn hung so, a few times in a hundred.) Here the deadline
// has passed before the calls, with no timer armed: each must fail at
// once. If one waited instead, the peer ends it after 2 s (a byte written,
// a byte read), and the test fails rather than hangs.
func TestPortablePassedDeadlineEndsACallBeforeItStarts(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	_, err := Run(func(wt *Task) (struct{}, error) {
		pc := newPortableConn(a, "pipe")
		c := newConn(wt.loop, pc, "pipe")
		defer c.Close()
		if err := c.SetDeadline(aLongTimeAgo); err != nil {
			return struct{}{}, err
		}

		rescue := time.AfterFunc(2*time.Second, func() { b.Write([]byte{1}) })
		n, err := pc.read(wt, make([]byte, 8))
		if !rescue.Stop() {
			t.Error("read waited until the peer wrote")
		}
		if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("read past the deadline: %d, %v; want 0, os.ErrDeadlineExceeded", n, err)
		}

		rescue = time.AfterFunc(2*time.Second, func() { io.ReadFull(b, make([]byte, 1)) })
		n, err = pc.write(wt, []byte{2})
		if !rescue.Stop() {
			t.Error("write waited until the peer read")
		}
		if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("write past the deadline: %d, %v; want 0, os.ErrDeadlineExceeded", n, err)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
