//go:build unix

package weft_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// A read that drained the socket makes the next one wait for an edge
// first (fd.go). Neither later data, nor a close that came with the
// data already read, may be lost by that.
func TestReadAfterDrainSeesLaterDataAndTheEnd(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		for _, closeAtOnce := range []bool{false, true} {
			_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
				ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
				defer ln.Close()
				addr := ln.Addr().String()
				done := make(chan error, 1)
				go func() {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						done <- err
						return
					}
					defer c.Close()
					c.Write([]byte("abc"))
					if closeAtOnce {
						done <- nil
						return // the close follows the data at once
					}
					time.Sleep(20 * time.Millisecond)
					c.Write([]byte("def"))
					time.Sleep(20 * time.Millisecond)
					done <- nil
				}()
				c, err := ln.Accept(wt)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if closeAtOnce {
					// Let the data and the end both arrive before the
					// first read.
					wt.Sleep(20 * time.Millisecond)
				}
				var got []byte
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(wt, buf)
					got = append(got, buf[:n]...)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				want := "abcdef"
				if closeAtOnce {
					want = "abc"
				}
				if string(got) != want {
					t.Errorf("read %q, want %q", got, want)
				}
				// At the end, reads keep returning EOF.
				if n, err := c.Read(wt, buf); n != 0 || err != io.EOF {
					t.Errorf("read after EOF: %d, %v", n, err)
				}
				return struct{}{}, <-done
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
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
