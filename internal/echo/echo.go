// Package echo is weft's echo server and client: one task per connection,
// each reading into its own buffer and writing back what it read. The
// example program and the bench module's echo and convoy benchmarks share
// it.
package echo

import (
	"errors"
	"io"
	"log/slog"
	"net"

	"github.com/weft-go/weft"
)

// BufferSize is each connection's read buffer. A connection holds no other
// memory: a client that stops reading makes its task wait in Write.
const BufferSize = 16 << 10

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
	buf := make([]byte, BufferSize)
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
	}
}

// quiet drops the errors that only say the peer went away.
func quiet(err error) error {
	if err == io.EOF || errors.Is(err, net.ErrClosed) || isReset(err) {
		return nil
	}
	return err
}
