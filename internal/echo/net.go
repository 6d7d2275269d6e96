package echo

import (
	"errors"
	"net"
	"sync"
)

// ServeNet is the Go-native twin of Serve, for comparisons: an echo server
// on the net package, one goroutine per connection, each with a buffer of
// BufferSize. It serves until ln is closed (by another goroutine), then
// closes the connections still open, waits for their goroutines and
// returns nil; another accept error is returned the same way, after the
// clean-up.
func ServeNet(ln net.Listener) error {
	var (
		mu     sync.Mutex
		conns  = make(map[net.Conn]struct{}) // guarded by mu
		closed bool                          // guarded by mu: the server is stopping
		wg     sync.WaitGroup
	)
	var err error
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			if !errors.Is(aerr, net.ErrClosed) {
				err = aerr
			}
			break
		}
		mu.Lock()
		if closed {
			c.Close()
		}
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Go(func() {
			netConn(c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		})
	}
	ln.Close()
	mu.Lock()
	closed = true
	for c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	return err
}

// netConn echoes c until the peer closes it or it breaks, then closes it.
func netConn(c net.Conn) {
	defer c.Close()
	buf := make([]byte, BufferSize)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
