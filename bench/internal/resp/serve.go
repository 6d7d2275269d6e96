package resp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"

	"github.com/weft-go/weft"
)

// Serve accepts connections on ln until ln is closed or the task is
// cancelled, serving each in a task of its own inside a Group, with
// keyspace st (from NewWeftStore), and returns once every connection task
// has finished. Closing ln ends Serve cleanly (nil); connections still
// open are cancelled. A connection's failure is logged and ends that
// connection only.
func Serve(t *weft.Task, ln *weft.Listener, st *Store) error {
	err := weft.Group(t, func(g *weft.TaskGroup) error {
		g.Handle(func(err error) { slog.Warn("resp: connection failed", "err", err) })
		for {
			c, err := ln.Accept(t)
			if errors.Is(err, net.ErrClosed) {
				return errStop
			}
			if err != nil {
				return err
			}
			g.Go(func(t *weft.Task) error {
				defer c.Close()
				return quiet(serveConn(weftRW{c: c, t: t}, st.weftSession(t)))
			})
		}
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// errStop ends Serve's group (cancelling the open connections) when the
// listener closes; Serve reports it as a clean end.
var errStop = errors.New("resp: listener closed")

// weftRW reads and writes a weft Conn on behalf of its task, so that the
// two servers share serveConn (one interface call per read or write in
// either).
type weftRW struct {
	c *weft.Conn
	t *weft.Task
}

func (rw weftRW) Read(b []byte) (int, error)  { return rw.c.Read(rw.t, b) }
func (rw weftRW) Write(b []byte) (int, error) { return rw.c.Write(rw.t, b) }

// ServeNet is Serve's twin on the net package, one goroutine per
// connection, with keyspace st (from NewNetStore). It serves until ln is
// closed (by another goroutine), then closes the connections still open,
// waits for their goroutines and returns nil; another accept error is
// returned after the same clean-up.
func ServeNet(ln net.Listener, st *Store) error {
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
			mu.Unlock()
			c.Close()
			continue
		}
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := quiet(serveConn(c, st.netSession())); err != nil {
				slog.Warn("resp: connection failed", "err", err)
			}
			c.Close()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
	mu.Lock()
	closed = true
	for c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	return err
}

// quiet drops the errors that only say the peer went away or the server
// is closing the connection (a cancelled task's cause matches
// context.Canceled).
func quiet(err error) error {
	if err == nil || err == io.EOF || errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}
