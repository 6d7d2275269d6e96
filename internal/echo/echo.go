// Package echo is weft's echo server and client. Serve serves each
// connection in bursts: a task reads into a small pooled buffer (a larger
// one while the socket keeps filling it) and writes back what it read,
// and once a read drains the socket the task ends and the connection waits
// for its next bytes in TaskGroup.GoWhenReadable, holding no task and no
// buffer. Conn is the same server as one task per connection. The
// example program and the bench module's echo and convoy benchmarks share
// it.
package echo

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

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

// landings holds the LandingSize buffers of Serve's connections that wait
// in GoWhenReadable.
var landings = sync.Pool{New: func() any { b := make([]byte, LandingSize); return &b }}

// Serve accepts connections on ln until ln is closed or the task is
// cancelled, serving each inside a Group in bursts (Burst): an idle
// connection waits in GoWhenReadable with no task. It returns when every
// connection has ended. A connection's failure is logged and ends that
// connection only (the group's handler takes it). Closing ln ends Serve
// cleanly (nil error); connections still open are cancelled (their waits
// end, and each task closes its connection).
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
			var serve func(t *weft.Task) error
			serve = func(t *weft.Task) error { return Burst(t, g, c, serve) }
			g.GoWhenReadable(c, serve)
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

// Burst echoes what c's client sends while it keeps sending: from a pooled
// LandingSize buffer, or a BufferSize one while reads fill the landing
// buffer. After a read that drained the socket (it returned less than its
// buffer) it waits for more in the task; after ParkAfter (up to twice
// that) without bytes it gives its buffers back, hands c to
// g.GoWhenReadable with next (which calls Burst again) and returns: the
// connection then waits with no task. It closes c when the stream ends or
// fails.
func Burst(t *weft.Task, g *weft.TaskGroup, c *weft.Conn, next func(t *weft.Task) error) error {
	land := landings.Get().(*[]byte)
	buf := *land
	var big *[]byte // taken from buffers for a burst, nil otherwise
	release := func() {
		if big != nil {
			buffers.Put(big)
			big = nil
		}
		if land != nil {
			landings.Put(land)
			land = nil
		}
	}
	defer release()
	// The linger: once a read has drained the socket, a read deadline
	// ParkAfter away is armed, and left armed while messages keep coming
	// (a deadline set and cleared per message would cost two timer
	// operations each). When it passes, the connection parks if no bytes
	// came since it was armed, and otherwise it is armed again: a
	// connection parks after ParkAfter to twice that of quiet.
	lingering := false
	came := false // bytes arrived since the linger was (re)armed
	for {
		n, err := c.Read(t, buf)
		if lingering && n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			if came {
				came = false
				c.SetReadDeadline(t.Now().Add(ParkAfter))
				continue
			}
			// Idle for ParkAfter: wait for the next bytes with no task.
			c.SetReadDeadline(time.Time{})
			release()
			g.GoWhenReadable(c, next)
			return nil
		}
		if n > 0 {
			came = true
			if _, werr := c.Write(t, buf[:n]); werr != nil {
				c.Close()
				return quiet(werr)
			}
		}
		if err != nil {
			c.Close()
			return quiet(err)
		}
		switch {
		case n == len(buf) && big == nil: // more may be waiting: a burst
			big = buffers.Get().(*[]byte)
			buf = *big
		case n < len(buf): // drained: the next bytes may take a while
			if big != nil {
				buffers.Put(big)
				big, buf = nil, *land
			}
			// A busy client's next message comes within moments: wait
			// for it here, and park only when none came for ParkAfter
			// (a task per message would cost a busy connection more
			// than the wait saves).
			if !lingering {
				c.SetReadDeadline(t.Now().Add(ParkAfter))
				lingering, came = true, false
			}
		}
	}
}

// ParkAfter is how long Burst waits for a connection's next bytes in its
// task before it hands the connection to GoWhenReadable.
const ParkAfter = 5 * time.Millisecond

// quiet drops the errors that only say the peer went away.
func quiet(err error) error {
	if err == io.EOF || errors.Is(err, net.ErrClosed) || isReset(err) {
		return nil
	}
	return err
}
