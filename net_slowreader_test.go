//go:build unix

package weft_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// Many connections send while their readers hold back: on io_uring the
// received data waits in the ring's provided buffers, a connection stops
// receiving when it holds its share, and when the ring runs dry reads fall
// back to single receives. Every byte must still arrive, in order, and
// connections made afterwards must work.
func TestSlowReadersOnManyConnectionsLoseNothing(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		const conns, size = 60, 200 << 10
		payloads := make([][]byte, conns)
		for i := range payloads {
			payloads[i] = make([]byte, size)
			for j := range payloads[i] {
				payloads[i][j] = byte(rand.IntN(256))
			}
		}
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			addr := ln.Addr().String()
			var wg sync.WaitGroup
			for i := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Error(err)
						return
					}
					defer c.Close()
					c.Write([]byte{byte(i)})
					c.Write(payloads[i])
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			err := weft.Group(wt, func(g *weft.TaskGroup) error {
				for range conns {
					c, err := ln.Accept(wt)
					if err != nil {
						return err
					}
					g.Go(func(wt *weft.Task) error {
						defer c.Close()
						wt.Sleep(100 * time.Millisecond) // hold back while the data arrives
						got, err := io.ReadAll(c.ReadWriter(wt))
						if err != nil {
							return err
						}
						if len(got) != size+1 || !bytes.Equal(got[1:], payloads[got[0]]) {
							t.Errorf("connection %d: %d bytes, or not the ones sent", got[0], len(got))
						}
						return nil
					})
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			<-done
			// The buffers went back: new connections still echo.
			echoLn := listenEcho(t, wt, "tcp", "127.0.0.1:0")
			defer echoLn.Close()
			for range 3 {
				c := mustDial(t, wt, "tcp", echoLn.Addr().String())
				if err := roundTrip(wt, c, bytes.Repeat([]byte("after"), 1000)); err != nil {
					t.Fatal(err)
				}
				c.Close()
			}
			return struct{}{}, nil
		}, opts...)
		if err != nil {
			t.Fatal(err)
		}
	})
}
