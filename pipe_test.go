//go:build unix

package weft_test

import (
	"errors"
	"io"
	"os"
	"strings"
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
			// Released for good: the writer gets EPIPE. On io_uring with
			// several loops the kernel lets go of the file a little after
			// the cancelled read has woken its task (about 150 µs, more on
			// a loaded machine), so a write meanwhile still succeeds; a
			// file that stays held fails after 5 s.
			for deadline := time.Now().Add(5 * time.Second); ; {
				_, err = w.Write(wt, []byte("x"))
				if err != nil || time.Now().After(deadline) {
					break
				}
				wt.Sleep(time.Millisecond)
			}
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

func TestPipeReadAfterDrainSeesLaterDataAndTheEnd(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			r, w, err := weft.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
				defer w.Close()
				for _, s := range []string{"ab", "cd", "ef"} {
					if _, err := w.Write(wt, []byte(s)); err != nil {
						return struct{}{}, err
					}
					wt.Sleep(5 * time.Millisecond)
				}
				return struct{}{}, nil
			})
			got, err := io.ReadAll(r.ReadWriter(wt))
			if err != nil || string(got) != "abcdef" {
				t.Errorf("read %q, %v", got, err)
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestPipeReadWriteAndEOF(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		r, w, err := weft.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got []string
		run(t, func(wt *weft.Task) {
			weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
				defer w.Close()
				for _, m := range []string{"one", "two"} {
					wt.Sleep(5 * time.Millisecond)
					if _, err := w.Write(wt, []byte(m)); err != nil {
						return struct{}{}, err
					}
				}
				return struct{}{}, nil
			})
			buf := make([]byte, 16)
			for {
				n, err := r.Read(wt, buf)
				if err == io.EOF {
					got = append(got, "eof")
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(buf[:n]))
			}
		}, opts...)
		if strings.Join(got, ",") != "one,two,eof" {
			t.Fatalf("read %v", got)
		}
		if r.Fd() < 0 {
			t.Fatal("no fd")
		}
	})
}

func TestWriteToAPipeWithNoReaderIsEPIPE(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		r, w, err := weft.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		defer w.Close()
		run(t, func(wt *weft.Task) {
			if _, err := w.Write(wt, []byte("nobody listens")); !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("Write = %v", err)
			}
		}, opts...)
	})
}

func TestCloseWakesAPipeReader(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		r, w, err := weft.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		run(t, func(wt *weft.Task) {
			p := weft.Go(wt, func(wt *weft.Task) (int, error) { return r.Read(wt, make([]byte, 8)) })
			go r.Close()
			if _, err := p.Await(wt); !errors.Is(err, os.ErrClosed) {
				t.Fatalf("Read after Close = %v", err)
			}
		}, opts...)
	})
}
