//go:build unix

package weft_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

func TestReadsUnderARacingTimeoutLoseNoBytes(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		const total = 2 << 20
		sent := make([]byte, total)
		for i := range sent {
			sent[i] = byte(rand.IntN(256))
		}
		var got bytes.Buffer
		timeouts := 0
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			// The writer is a plain goroutine, writing in bursts.
			weft.Go(wt, func(wt *weft.Task) (int, error) {
				return weft.Offload(wt, func() (int, error) {
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						return 0, err
					}
					defer c.Close()
					for off := 0; off < total; {
						n := min(total-off, 1+rand.IntN(64<<10))
						if _, err := c.Write(sent[off : off+n]); err != nil {
							return 0, err
						}
						off += n
						time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
					}
					return 0, nil
				})
			})
			c, err := ln.Accept(wt)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, 32<<10)
			for {
				d := time.Duration(rand.IntN(200)) * time.Microsecond
				n, err := weft.Timeout(wt, d, func(wt *weft.Task) (int, error) { return c.Read(wt, buf) })
				got.Write(buf[:n])
				switch {
				case err == nil:
				case err == weft.ErrTimeout:
					if n != 0 {
						t.Fatalf("ErrTimeout with %d bytes", n)
					}
					timeouts++
				case errors.Is(err, io.EOF):
					return
				default:
					t.Fatal(err)
				}
			}
		}, opts...)
		if !bytes.Equal(got.Bytes(), sent) {
			t.Fatalf("received %d bytes of %d, or not the same ones (%d timeouts)", got.Len(), total, timeouts)
		}
		if timeouts == 0 {
			t.Log("no read timed out: the deadlines never raced")
		}
	})
}
