package main

import (
	"context"
	"net"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/weft-go/weft/internal/echo"
)

// runGoCase runs one case of the Go reference: a goroutine-per-connection
// echo server on the net package and k goroutines spinning units, all with
// GOMAXPROCS set to 1 for the case, while drive applies the load. When
// drive returns, the spinners are told to stop, the listener and every
// connection are closed, and runGoCase waits for all its goroutines.
func runGoCase(k int, drive driver) (measure, error) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return measure{}, err
	}
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		conns    []net.Conn // guarded by mu
		closed   bool       // guarded by mu: conns have been closed
		spinners = make([]spinner, k)
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			if closed {
				c.Close()
			}
			mu.Unlock()
			wg.Go(func() { goEcho(c) })
		}
	})
	for i := range spinners {
		wg.Go(func() { spinners[i].spinUntil(&stop) })
	}
	m, err := drive(context.Background(), ln.Addr().String(), func() probe { return takeProbe(spinners) })
	stop.Store(true)
	ln.Close()
	mu.Lock()
	closed = true
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	return m, err
}

// goEcho echoes c until the peer closes it or an error occurs, with a
// buffer the size of weft's echo server's.
func goEcho(c net.Conn) {
	defer c.Close()
	buf := make([]byte, echo.BufferSize)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // the peer closed it, or it broke: either way, done
		}
	}
}
