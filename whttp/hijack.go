package whttp

// Hijack: a handler takes the connection over (http.Hijacker, and
// http.ResponseController's Hijack), for WebSockets and other protocols
// that start as HTTP. What the server had buffered is handed over: its
// pending output (the responses to earlier pipelined requests, and a 101
// the handler wrote with WriteHeader) is sent first, and the input it had
// read past the request head is in the returned bufio.Reader. Then the
// server forgets the connection: its task ends after the handler without
// touching it, no timeout of the server applies to it, a graceful stop
// does not wait for it nor close it, and the handler (or whoever it gives
// the connection to) must close it.
//
// The connection's net.Conn (hijackedConn) reads and writes on behalf of
// whichever task of the Run calls it, suspending that task, or of a plain
// goroutine, blocking it: a reader and a writer may share it, over TLS
// too (a weft.TLSConn). A handler run by Blocking hijacks through its
// connection's task (blocking.go).

import (
	"bufio"
	"net"
	"net/http"
	"time"
)

// hijackBufSize is the size of the bufio.Reader and Writer Hijack returns
// (net/http's are 4 KB too).
const hijackBufSize = 4 << 10

// Hijack takes the connection over (http.Hijacker; http.ResponseController
// finds it too). It must be called by the handler, in the connection's
// task; it may suspend it, to send what the server holds and to end the
// connection's watch (see Handler), but is not a cancellation point. It
// returns the connection and a bufio.ReadWriter whose Reader holds what
// the client had sent past the request head (nothing, usually).
// Everything the server had written on the connection (a status and
// header set with WriteHeader, such as a 101 Switching Protocols) is sent
// first. Then the connection is the caller's: see the package doc,
// Hijacking. A second call, or a Write after it, returns
// http.ErrHijacked.
func (h *reqHandle) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w := h.live()
	if w == nil {
		return nil, nil, errWriteAfterHandler
	}
	return h.c.hijack(w)
}

// hijack hands the connection over, in the connection's task.
func (c *conn) hijack(w *response) (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if c.isCut() {
		return nil, nil, errCutOff
	}
	t := c.t
	// The watch reads the connection: it stops before the caller does.
	c.stopWatch(t)
	// What the server holds for the connection goes out first.
	if w.wroteHeader && !w.committed {
		if err := w.commit(false); err != nil {
			return nil, nil, err
		}
	}
	if err := c.st.bw.Flush(); err != nil {
		return nil, nil, err
	}
	w.hijacked = true
	w.done = true
	in := &c.st.in
	var left []byte
	if in.buffered() > 0 {
		left = append([]byte(nil), in.buf[in.r:in.w]...)
	}
	// The buffers go now, not when the handler returns (a WebSocket's
	// handler runs for as long as its connection): the hijacker has its
	// own, and the request (r) the handler still uses stays.
	st := c.st
	in.buf, in.r, in.w = nil, 0, 0
	st.bw = nil
	w.stage = nil
	// The server forgets it: no deadline of its own, no drain, no close.
	c.wc.SetDeadline(time.Time{})
	c.stopIt.Store(true)
	c.mu.Lock()
	c.hijacked = true
	c.mu.Unlock()
	c.sv.forget(c)
	c.setState(http.StateHijacked)

	nc := c.hijackedConn()
	br := bufio.NewReaderSize(&prefixReader{left: left, r: nc}, hijackBufSize)
	if len(left) > 0 {
		br.Peek(len(left)) // Buffered says so, as net/http's does; reads only left
	}
	return nc, bufio.NewReadWriter(br, bufio.NewWriterSize(nc, hijackBufSize)), nil
}

// hijackedConn is the net.Conn a hijacker gets: the connection's GoConn
// (the TLSConn's over TLS), whose every method works from any task of the
// Run (suspending it) and from any goroutine (blocking it): a reader and a
// writer, tasks or goroutines, may share it.
func (c *conn) hijackedConn() net.Conn {
	if c.tls != nil {
		return c.tls.conn.GoConn()
	}
	return c.wc.GoConn()
}

// prefixReader reads left, then r.
type prefixReader struct {
	left []byte
	r    net.Conn
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.left) > 0 {
		n := copy(b, p.left)
		p.left = p.left[n:]
		return n, nil
	}
	return p.r.Read(b)
}

// forget takes a hijacked connection off the server's list: the drain
// neither waits for it nor closes it. It stays in the hijacked list until
// its task ends (see endHijacked).
func (sv *serving) forget(c *conn) {
	sv.mu.Lock()
	delete(sv.conns, c)
	if sv.hijacked == nil {
		sv.hijacked = make(map[*conn]struct{})
	}
	sv.hijacked[c] = struct{}{}
	var idle func(struct{}, error) bool
	if len(sv.conns) == 0 {
		idle = sv.idle
	}
	sv.mu.Unlock()
	if idle != nil {
		idle(struct{}{}, nil)
	}
}

// endHijacked runs after the drain: the handlers still running on
// hijacked connections (and the tasks they started in their
// connection's group) are cancelled, so that Serve can return; their
// connections stay open, theirs to close.
func (sv *serving) endHijacked() {
	sv.mu.Lock()
	list := make([]*conn, 0, len(sv.hijacked))
	for c := range sv.hijacked {
		list = append(list, c)
	}
	sv.mu.Unlock()
	for _, c := range list {
		c.mu.Lock()
		g := c.group
		c.mu.Unlock()
		if g != nil {
			g.Cancel()
		}
	}
}
