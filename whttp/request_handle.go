package whttp

// A request's handle (reqHandle) is what a handler gets of its request
// besides r: the http.ResponseWriter w, and r.Context(). It is the one
// object allocated for every request (everything else is reused), and it
// stays valid for what it promises after the request ends: as a
// ResponseWriter it refuses to write (the response state it points to is
// reused by the next request), as a context it is done, with Err
// context.Canceled.
//
// The context costs nothing until it is asked to wait: Done creates a
// real context (context.WithCancelCause) for the request, which the end of
// the request (or the drain timeout) cancels; Err, Value and Deadline need
// none. Its values are those of Serve's task's context, the connection's
// task (TaskOf) and http.LocalAddrContextKey.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// reqHandle is one request's ResponseWriter and context (see above).
type reqHandle struct {
	c   *conn
	gen uint64 // the request's number on c
	// c.mu: the request's context, made by the first Done.
	real   context.Context
	cancel context.CancelCauseFunc
	notify chan bool // c.mu: CloseNotify's channel, made by its first call
}

// live returns the response of h's request, or nil once it has ended. Only
// the connection's task calls it (the writer's methods), and only that
// task changes c.gen and c.active: no lock.
func (h *reqHandle) live() *response {
	if c := h.c; c.gen == h.gen && c.active {
		return &c.st.resp
	}
	return nil
}

// Header returns the response header (see response.Header). After the
// handler returned it is a throwaway header.
func (h *reqHandle) Header() http.Header {
	if w := h.live(); w != nil {
		return w.Header()
	}
	return http.Header{}
}

// Write writes body bytes (see response.Write).
func (h *reqHandle) Write(p []byte) (int, error) {
	if w := h.live(); w != nil {
		return w.Write(p)
	}
	return 0, errWriteAfterHandler
}

// WriteString is Write for a string, without copying it.
func (h *reqHandle) WriteString(s string) (int, error) {
	if w := h.live(); w != nil {
		return w.WriteString(s)
	}
	return 0, errWriteAfterHandler
}

// ReadFrom copies src to the body, with sendfile(2) from a file where it
// can (see response.ReadFrom): io.ReaderFrom, for io.Copy and
// http.ServeContent.
func (h *reqHandle) ReadFrom(src io.Reader) (int64, error) {
	if w := h.live(); w != nil {
		return w.ReadFrom(src)
	}
	return 0, errWriteAfterHandler
}

// WriteHeader sends the status code with the header (see
// response.WriteHeader).
func (h *reqHandle) WriteHeader(code int) {
	if w := h.live(); w != nil {
		w.WriteHeader(code)
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
}

// Flush sends what is written so far (http.Flusher).
func (h *reqHandle) Flush() { h.FlushError() }

// FlushError is Flush, returning the write error if any (for
// http.ResponseController).
func (h *reqHandle) FlushError() error {
	if w := h.live(); w != nil {
		return w.FlushError()
	}
	return errWriteAfterHandler
}

// SetReadDeadline sets the connection's read deadline, for
// http.ResponseController.
func (h *reqHandle) SetReadDeadline(d time.Time) error {
	if h.live() == nil {
		return errWriteAfterHandler
	}
	return h.c.wc.SetReadDeadline(d)
}

// SetWriteDeadline sets the connection's write deadline, for
// http.ResponseController.
func (h *reqHandle) SetWriteDeadline(d time.Time) error {
	if h.live() == nil {
		return errWriteAfterHandler
	}
	return h.c.wc.SetWriteDeadline(d)
}

// CloseNotify returns a channel that receives true if the client goes
// away while the handler runs (http.CloseNotifier, which net/http
// deprecates in favour of r.Context(): the same news, with a cause).
func (h *reqHandle) CloseNotify() <-chan bool {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.notify == nil {
		h.notify = make(chan bool, 1)
		if c.gen == h.gen && c.active && c.cause != nil && errors.Is(c.cause, ErrClientGone) {
			h.notify <- true
		}
	}
	return h.notify
}

// EnableFullDuplex lets the handler read the request body after it has
// begun to write the response, for http.ResponseController: whttp always
// allows it, so it does nothing and returns nil.
func (h *reqHandle) EnableFullDuplex() error { return nil }

// The context.Context methods: from any goroutine.

// Deadline returns the deadline of the connection's base context
// (BaseContext's, ConnContext's): none by default.
func (h *reqHandle) Deadline() (time.Time, bool) { return h.c.base().Deadline() }

// closedDone is the Done channel of a request's context asked for the
// first time after the request ended.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Done returns a channel closed when the request ends (the handler
// returned) or is cut off by the drain timeout.
func (h *reqHandle) Done() <-chan struct{} {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.real == nil {
		if c.gen != h.gen || !c.active {
			return closedDone
		}
		h.real, h.cancel = context.WithCancelCause(c.base())
		if c.cause != nil {
			h.cancel(c.cause)
		}
	}
	return h.real.Done()
}

// Err returns nil while the request runs, then context.Canceled (or the
// base context's error, if that ended first).
func (h *reqHandle) Err() error {
	c := h.c
	c.mu.Lock()
	switch {
	case h.real != nil:
		c.mu.Unlock()
		return h.real.Err()
	case c.gen != h.gen || !c.active || c.cause != nil:
		c.mu.Unlock()
		return context.Canceled
	}
	c.mu.Unlock()
	return c.base().Err()
}

// Value returns the connection's task for TaskOf, the server for
// http.ServerContextKey (a *whttp.Server, not an *http.Server), the local
// address for http.LocalAddrContextKey, and otherwise what the base
// context (BaseContext's, ConnContext's, Serve's task's) holds.
func (h *reqHandle) Value(key any) any {
	c := h.c
	switch key {
	case taskKey{}:
		return c.t
	case http.ServerContextKey:
		return c.sv.s
	case http.LocalAddrContextKey:
		return c.wc.LocalAddr()
	}
	c.mu.Lock()
	real := h.real
	c.mu.Unlock()
	if real != nil {
		return real.Value(key) // context.Cause finds the real context's cause here
	}
	return c.base().Value(key)
}

// endRequest marks the request in flight ended: its handle stops writing,
// its context is done.
func (c *conn) endRequest() {
	c.mu.Lock()
	c.active = false
	c.handling = false
	h := c.cur
	c.cur = nil
	var cancel context.CancelCauseFunc
	if h != nil {
		cancel = h.cancel
	}
	c.mu.Unlock()
	if cancel != nil {
		cancel(context.Canceled)
	}
}

// handleChunk is how many request handles are made in one allocation
// (see beginRequest).
const handleChunk = 16

// beginRequest starts request number c.gen+1 and returns its handle.
//
// A handle cannot be reused (a handler may keep its context after the
// request), so each request takes a new one; they are made handleChunk at
// a time, into the request state (which the connection holds while a
// request is served, and which goes back to its pool between requests),
// so that a request costs no allocation of its own for it. The price: a
// chunk lives while any of its handles is referred to, and its used
// handles refer to their connections, so a pooled state may keep up to
// handleChunk-1 ended connections' records until its chunk is used up or
// the pool drops it (at most two collections later).
func (c *conn) beginRequest() *reqHandle {
	var h *reqHandle
	if st := c.st; st != nil && !checkRetention {
		if len(st.handles) == 0 {
			st.handles = make([]reqHandle, handleChunk)
		}
		h, st.handles = &st.handles[0], st.handles[1:]
		h.c, h.gen = c, c.gen+1
	} else {
		h = &reqHandle{c: c, gen: c.gen + 1}
	}
	c.mu.Lock()
	c.gen = h.gen
	c.active = true
	c.handling = true // until stopWatch
	c.cur = h
	c.mu.Unlock()
	return h
}
