// Package echo is weft's echo server and client: one task per connection,
// each reading into a small buffer of its own (a larger pooled one during
// a burst) and writing back what it read. The
// example program and the bench module's echo and convoy benchmarks share
// it.
package echo

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/weft-go/weft"
)

// BufferSize is the read buffer a connection takes while bytes keep
// coming: a read that fills the landing buffer takes one from a pool, and
// the first read that drains the socket (a short read) gives it back, so
// an idle connection waits with its LandingSize buffer only. A client
// that stops reading makes its task wait in Write, with the buffer.
const BufferSize = 16 << 10

// LandingSize is the buffer an idle connection waits to read into: a
// 64-byte request and its echo never need more.
const LandingSize = 512

// buffers holds the BufferSize buffers of connections not in a burst.
var buffers = sync.Pool{New: func() any { b := make([]byte, BufferSize); return &b }}

// Serve accepts connections on ln until ln is closed or the task is
// cancelled, serving each in a task of its own inside a Group, and returns
// when every connection task has finished. A connection's failure is
// logged and ends that connection only (the group's handler takes it).
// Closing ln ends Serve cleanly (nil error); connections still open are
// cancelled.
func Serve(t *weft.Task, ln *weft.Listener) error {
	err := weft.Group(t, func(g *weft.TaskGroup) error {
		g.Handle(func(err error) { slog.Warn("echo: connection failed", "err", err) })
		for {
			c, err := ln.Accept(t)
			if errors.Is(err, net.ErrClosed) {
				return errStop
			}
			if err != nil {
				return err
			}
			g.Go(func(t *weft.Task) error { t.SetName("echo conn"); return Conn(t, c) })
		}
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// errStop ends the group (cancelling the open connections) when the
// listener closes; Serve reports it as a clean end.
var errStop = errors.New("echo: listener closed")

// Conn echoes c until the peer closes its side, then closes c. A
// cancellation or a connection error ends it too; a peer that simply goes
// away is not an error.
func Conn(t *weft.Task, c *weft.Conn) error {
	defer c.Close()
	landing := make([]byte, LandingSize)
	buf := landing
	var big *[]byte // taken from buffers for a burst, nil otherwise
	defer func() {
		if big != nil {
			buffers.Put(big)
		}
	}()
	for {
		n, err := c.Read(t, buf)
		if n > 0 {
			if _, werr := c.Write(t, buf[:n]); werr != nil {
				return quiet(werr)
			}
		}
		if err != nil {
			return quiet(err)
		}
		switch {
		case n == len(buf) && big == nil: // more may be waiting: a burst
			big = buffers.Get().(*[]byte)
			buf = *big
		case n < len(buf) && big != nil: // drained: the next read may wait
			buffers.Put(big)
			big, buf = nil, landing
		}
	}
}

// quiet drops the errors that only say the peer went away.
func quiet(err error) error {
	if err == io.EOF || errors.Is(err, net.ErrClosed) || isReset(err) {
		return nil
	}
	return err
}
