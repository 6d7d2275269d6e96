//go:build unix

package weft_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// The README's echo server: a client that resets its connection must not
// stop it.
func TestREADMEServerSurvivesAClientReset(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		var failures int
		logger := slog.New(slog.DiscardHandler)
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			server := weft.Go(wt, func(t *weft.Task) (struct{}, error) {
				return struct{}{}, weft.Group(t, func(g *weft.TaskGroup) error {
					g.Handle(func(err error) { failures++; logger.Warn("connection failed", "err", err) })
					for {
						c, err := ln.Accept(t)
						if err != nil {
							return err
						}
						g.Go(func(t *weft.Task) error {
							defer c.Close()
							_, err := io.Copy(c.ReadWriter(t), c.ReadWriter(t))
							return err
						})
					}
				})
			})
			_, err := weft.Offload(wt, func() (struct{}, error) {
				// A client that resets: unread data plus SO_LINGER 0.
				bad, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					return struct{}{}, err
				}
				bad.Write(bytes.Repeat([]byte("x"), 1<<20))
				bad.(*net.TCPConn).SetLinger(0)
				bad.Close()
				// Then a good client, twice.
				for range 2 {
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						return struct{}{}, err
					}
					c.Write([]byte("still there?"))
					got := make([]byte, 12)
					_, err = io.ReadFull(c, got)
					c.Close()
					if err != nil || string(got) != "still there?" {
						return struct{}{}, errors.New("the server stopped echoing after a client reset")
					}
				}
				return struct{}{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ln.Close()
			if _, err := server.Await(wt); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("server ended with %v", err)
			}
		}, opts...)
		if failures != 1 {
			t.Logf("%d connection failures handled (the reset may race the echo)", failures)
		}
	})
}

// A client that connects and resets before the server's Accept returns:
// the accepted Conn still has the peer's address (accept4 gave it; asking
// getpeername afterwards fails with ENOTCONN), never a nil RemoteAddr.
func TestAcceptAfterPeerResetKeepsRemoteAddr(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			badAddr, err := weft.Offload(wt, func() (string, error) {
				bad, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					return "", err
				}
				addr := bad.LocalAddr().String()
				bad.(*net.TCPConn).SetLinger(0)
				bad.Close() // RST while the connection waits in the backlog
				return addr, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			wt.Sleep(50 * time.Millisecond) // let the reset reach the server's socket
			c, err := ln.Accept(wt)
			if err != nil {
				t.Fatalf("Accept: %v", err)
			}
			defer c.Close()
			ra := c.RemoteAddr()
			if ra == nil {
				t.Fatal("RemoteAddr of a connection reset before Accept is nil")
			}
			if got := ra.String(); got != badAddr {
				t.Fatalf("RemoteAddr = %q, want the client's address %q", got, badAddr)
			}
			if c.LocalAddr() == nil {
				t.Fatal("LocalAddr is nil")
			}
		}, opts...)
	})
}
