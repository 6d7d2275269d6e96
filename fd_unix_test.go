//go:build unix

package weft_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/fdutil"
	"golang.org/x/sys/unix"
)

func nonblockingPipe(t *testing.T) (r, w int) {
	t.Helper()
	r, w, err := fdutil.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(r); unix.Close(w) })
	return r, w
}

func TestReadableWaitsForData(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		r, w := nonblockingPipe(t)
		var log []string
		run(t, func(wt *weft.Task) {
			spawn(wt, func(wt *weft.Task) {
				for _, msg := range []string{"one", "two"} {
					wt.Sleep(10 * time.Millisecond)
					log = append(log, "write "+msg)
					unix.Write(w, []byte(msg))
				}
				unix.Close(w)
			})
			buf := make([]byte, 16)
			for {
				if err := weft.Readable(wt, r); err != nil {
					t.Fatal(err)
				}
				n, err := unix.Read(r, buf)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					log = append(log, "eof")
					return
				}
				log = append(log, "read "+string(buf[:n]))
			}
		}, opts...)
		if got := strings.Join(log, ","); got != "write one,read one,write two,read two,eof" {
			t.Fatalf("log = %s", got)
		}
	})
}

func TestWritableWaitsForRoom(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		r, w := nonblockingPipe(t)
		run(t, func(wt *weft.Task) {
			// Fill the pipe.
			chunk := make([]byte, 4096)
			for {
				if _, err := unix.Write(w, chunk); err == unix.EAGAIN {
					break
				}
			}
			drained := false
			spawn(wt, func(wt *weft.Task) {
				wt.Sleep(10 * time.Millisecond)
				drained = true
				for {
					if _, err := unix.Read(r, chunk); err != nil {
						return
					}
				}
			})
			if err := weft.Writable(wt, w); err != nil {
				t.Fatal(err)
			}
			if !drained {
				t.Fatal("Writable returned while the pipe was full")
			}
		}, opts...)
	})
}

func TestReadableOnABadFDFailsWithEBADF(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			for _, fd := range []int{-1, 1 << 20} {
				if err := weft.Readable(wt, fd); !errors.Is(err, syscall.EBADF) {
					t.Errorf("Readable(%d) = %v", fd, err)
				}
				if err := weft.Writable(wt, fd); !errors.Is(err, syscall.EBADF) {
					t.Errorf("Writable(%d) = %v", fd, err)
				}
			}
		}, opts...)
	})
}

func TestManyTasksWaitOnOneFD(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		r, w := nonblockingPipe(t)
		var woken atomic.Int32
		run(t, func(wt *weft.Task) {
			var ps []*weft.Promise[struct{}]
			for i := 0; i < 5; i++ {
				ps = append(ps, spawn(wt, func(wt *weft.Task) {
					if err := weft.Readable(wt, r); err == nil {
						woken.Add(1)
					}
				}))
			}
			wt.Sleep(5 * time.Millisecond)
			unix.Write(w, []byte("x"))
			weft.All(wt, ps...)
		}, opts...)
		if woken.Load() != 5 {
			t.Fatalf("%d of 5 readers woke", woken.Load())
		}
	})
}

func TestCancelWakesReadableAndDisarmsTheFD(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		r, w := nonblockingPipe(t)
		run(t, func(wt *weft.Task) {
			p := weft.Go(wt, func(wt *weft.Task) (int, error) { return 0, weft.Readable(wt, r) })
			p.Cancel()
			if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
				t.Fatalf("Readable after Cancel = %v", err)
			}
			// The fd wait is gone: data arriving now wakes nobody, and a new
			// wait works.
			unix.Write(w, []byte("x"))
			if err := weft.Readable(wt, r); err != nil {
				t.Fatal(err)
			}
		}, opts...)
	})
}
