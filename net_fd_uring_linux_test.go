//go:build linux

package weft_test

import (
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// Close while a Write waits for room (its peer reads nothing) wakes the
// writer with an error matching net.ErrClosed, as Conn.Close promises, on
// every backend, whether Close comes from a task or a plain goroutine. On
// io_uring a Close from a goroutine (the loop asleep in io_uring_enter)
// used to let the pending send complete with EPIPE first (the close shuts
// the socket down), and Write returned "send: broken pipe".
func TestCloseWakesAWriterWaitingForRoomWithErrClosed(t *testing.T) {
	big := make([]byte, 64<<20)
	for _, from := range []string{"task", "goroutine"} {
		t.Run(from, func(t *testing.T) {
			backends(t, func(t *testing.T, opts ...weft.Option) {
				run(t, func(wt *weft.Task) {
					ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
					defer ln.Close()
					c := mustDial(t, wt, "tcp", ln.Addr().String())
					s, err := ln.Accept(wt)
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close() // the peer: it reads nothing
					writer := weft.Go(wt, func(wt *weft.Task) (int, error) {
						return c.Write(wt, big)
					})
					// Let the writer fill the socket's buffers and wait.
					if err := wt.Sleep(50 * time.Millisecond); err != nil {
						t.Fatal(err)
					}
					closed := make(chan error, 1)
					if from == "task" {
						closed <- c.Close()
					} else {
						go func() {
							// The loop is asleep meanwhile (in io_uring_enter,
							// on the ring): the close reaches the kernel first.
							time.Sleep(5 * time.Millisecond)
							closed <- c.Close()
						}()
					}
					n, err := writer.Await(wt)
					if !errors.Is(err, net.ErrClosed) {
						t.Errorf("Write after Close: %d bytes, %v; want an error matching net.ErrClosed", n, err)
					}
					if n >= len(big) {
						t.Errorf("Write wrote everything (%d bytes) to a peer that reads nothing", n)
					}
					if err := <-closed; err != nil {
						t.Error(err)
					}
				}, opts...)
			})
		})
	}
}

// An accepted Unix connection from an unnamed client has the remote
// address "@" on every backend, as the net package gives (io_uring's
// accept gave "").
func TestAcceptedUnixConnOfAnUnnamedClientIsAt(t *testing.T) {
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			path := filepath.Join(t.TempDir(), "s")
			ln := mustListen(t, wt, "unix", path)
			defer ln.Close()
			c := mustDial(t, wt, "unix", path)
			defer c.Close()
			s, err := ln.Accept(wt)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.RemoteAddr().String(); got != "@" {
				t.Errorf("accepted conn's RemoteAddr().String() = %q, want %q (as net gives)", got, "@")
			}
			if got := s.RemoteAddr().Network(); got != "unix" {
				t.Errorf("accepted conn's RemoteAddr().Network() = %q, want unix", got)
			}
		}, opts...)
	})
	// The net package's own answer, the reference.
	path := filepath.Join(t.TempDir(), "n")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.RemoteAddr().String(); got != "@" {
		t.Errorf("net: accepted conn's RemoteAddr().String() = %q; this test's reference changed", got)
	}
}
