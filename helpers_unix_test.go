//go:build unix

package weft_test

// Helpers that the unix-only tests of more than one feature use.

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/weft-go/weft"
)

// mustListen listens on address, or fails the test.
func mustListen(t *testing.T, wt *weft.Task, network, address string) *weft.Listener {
	t.Helper()
	ln, err := weft.Listen(wt, network, address)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// mustDial dials address, or fails the test.
func mustDial(t *testing.T, wt *weft.Task, network, address string) *weft.Conn {
	t.Helper()
	c, err := weft.Dial(wt, network, address)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// connPair returns the two ends of a loopback TCP connection on wt's loop.
func connPair(t *testing.T, wt *weft.Task) (a, b *weft.Conn) {
	t.Helper()
	ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
	defer ln.Close()
	b = mustDial(t, wt, "tcp", ln.Addr().String())
	a, err := ln.Accept(wt)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// dialEcho runs n clients, each of which sends and reads back rounds
// messages, from plain goroutines.
func dialEcho(addr string, n, rounds int) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := []byte("ping")
			got := make([]byte, len(msg))
			for range rounds {
				if _, err := c.Write(msg); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, got); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
