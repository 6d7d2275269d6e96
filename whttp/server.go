package whttp

// The server: an accept loop in the task that calls Serve, and one task
// per connection, under a weft.Group. The connection tasks run on their
// connections' home loops (with several loops, not all Serve's), so what
// Serve's task and theirs share (the serving's list of connections, a
// connection's stop and cut-off state, a request's context) is guarded by
// a mutex or atomic; the rest of a connection is its task's alone.
//
// A connection task loops: wait for the first bytes of a request (idle),
// read its head (parse.go), run the handler, finish the response, and
// again. While idle it holds no reqState (reuse.go): its buffers, request
// and response go back to a pool, and the wait reads into a small landing
// buffer of the connection's own (a small request arrives whole in it,
// so waiting costs no extra read). Responses are flushed before the task
// waits for input, so pipelined requests get their responses in order and
// in as few writes as can be.
//
// The connection tasks are in a group with a failure handler (one
// connection's failure is logged, and ends that connection only). Each
// runs its requests in a group of its own, inside Protect.
//
// Graceful stop, when the task in Serve is cancelled (or the listener
// fails): the listener is closed; idle connections are closed; busy ones
// finish the response in flight (with Connection: close) and then close.
// The shield keeps the stop from reaching the handlers. If connections are
// still busy after DrainTimeout, each one's own group is cancelled (its
// handler's task sees the cancellation), its request context is cancelled
// and it is closed; Serve returns when every connection task has ended.

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weft-go/weft"
)

// DefaultDrainTimeout is how long a graceful stop lets requests in flight
// run when Server.DrainTimeout is zero.
const DefaultDrainTimeout = 10 * time.Second

// closeLinger bounds how long a connection that is closed after a response
// reads and discards what the client still sends, after it has shut down
// its writing side: closing a socket with unread input makes the kernel
// send a reset, which can destroy the response before the client reads it.
const closeLinger = 500 * time.Millisecond

// landSize is the size of a connection's landing buffer (conn.land): what
// keeps a conn within the 640-byte size class (size_internal_test.go).
const landSize = 472

// maxPostHandlerRead is how much of a request body the handler left unread
// the server reads and discards to keep the connection (net/http's figure).
const maxPostHandlerRead = 256 << 10

// Server serves HTTP/1.x on weft listeners. Its fields are read when Serve
// starts each connection; do not change them while it serves. The zero
// value serves http.DefaultServeMux, as net/http's Server does.
type Server struct {
	// Handler answers requests; nil means Adapt(http.DefaultServeMux).
	Handler Handler

	// TLSConfig, if not nil, makes Serve speak HTTPS: each connection
	// starts with a TLS handshake (crypto/tls, on the connection's task).
	// Its NextProtos default to "http/1.1"; "h2" is dropped from them.
	TLSConfig *tls.Config

	// ReadHeaderTimeout bounds the time from the first byte of a request
	// (for the first request: from the accept) to the end of its header. A
	// client slower than that gets 400 Bad Request and the connection is
	// closed, as net/http does; if no byte of the request has arrived (the
	// first request), the connection is closed without an answer. Zero:
	// ReadTimeout applies; both zero, no limit.
	ReadHeaderTimeout time.Duration

	// ReadTimeout bounds the reading of a whole request, body included.
	ReadTimeout time.Duration

	// WriteTimeout bounds the time from the end of the request header to
	// the end of the response.
	WriteTimeout time.Duration

	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request before it is closed. Zero: ReadTimeout; both zero, no limit.
	IdleTimeout time.Duration

	// MaxHeaderBytes bounds the request line and header: past it plus 4096
	// bytes (net/http's allowance for the request line), or when the
	// fields take more memory than it (as net/http counts it), the request
	// is answered 431. Zero: http.DefaultMaxHeaderBytes (1 MB).
	MaxHeaderBytes int

	// DisableKeepAlives closes each connection after one response.
	DisableKeepAlives bool

	// DrainTimeout bounds a graceful stop: how long requests in flight may
	// run after Serve's task is cancelled. Zero: DefaultDrainTimeout (10 s);
	// negative: no bound.
	DrainTimeout time.Duration

	// ConnState, if not nil, is called in the connection's task when the
	// connection changes state (new, active, idle, closed), as net/http's
	// is. It must not block; with several loops, calls for different
	// connections may run at the same time. A panic in it closes that
	// connection only.
	ConnState func(net.Conn, http.ConnState)

	// Logger receives handler panics (with their stacks) and connection
	// errors; nil means slog.Default().
	Logger *slog.Logger
}

// serving is the state of one Serve call. Its connection tasks live on
// their connections' loops (with several loops, not Serve's), so what
// Serve's task and theirs share is guarded by mu or atomic.
type serving struct {
	s       *Server
	handler Handler
	tls     *tls.Config
	log     *slog.Logger
	ln      *weft.Listener
	base    context.Context // values of Serve's task, without its cancellation

	mu    sync.Mutex
	conns map[*conn]struct{}         // mu: the connections not yet ended
	idle  func(struct{}, error) bool // mu: settles the drain's wait when conns empties
	kept  string                     // mu: the first handler found keeping its request (reuse.go)
}

// snapshot returns the connections not yet ended.
func (sv *serving) snapshot() []*conn {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	list := make([]*conn, 0, len(sv.conns))
	for c := range sv.conns {
		list = append(list, c)
	}
	return list
}

// Serve accepts connections on ln and serves each in a task of its own
// until t is cancelled or ln fails. It suspends t for as long as it
// serves. A connection's task starts on t's loop and runs on the
// connection's home loop: with several loops (WithLoops), connections are
// spread over them, and their handlers run in parallel (see the package
// doc, Where handlers run). One connection's failure (a bad request, a
// reset, a handler's panic, even a panic in the server's own code or a
// ConnState hook) ends that connection only: it is logged, the connection
// is closed, and Serve goes on accepting.
//
// Cancelling t is a graceful stop: Serve stops accepting at once (it
// closes ln), closes idle connections, and lets requests in flight finish,
// with Connection: close, for up to DrainTimeout: their handlers, the
// tasks those start and their request contexts are not cancelled (each
// connection task runs inside Protect). Past DrainTimeout, what is still
// busy is cut off: the handler's task is cancelled (its suspension points
// return an error matching context.Canceled), its request context is
// cancelled and its connection closed. Serve waits for every connection
// task to end and returns nil.
//
// If ln fails (closed by someone else: an error matching net.ErrClosed),
// Serve stops the same way and returns that error. Serve always closes ln.
//
// With the retention check on (the race detector or the weft_debug build
// tag; see the package doc, Cost), Serve panics when it returns if a
// handler kept its request past its return.
func (s *Server) Serve(t *weft.Task, ln *weft.Listener) error {
	if ln == nil {
		panic("whttp: Serve called with a nil listener")
	}
	sv := &serving{
		s:       s,
		handler: s.Handler,
		log:     s.Logger,
		ln:      ln,
		base:    context.WithoutCancel(t.Context()),
		conns:   make(map[*conn]struct{}),
	}
	if sv.handler == nil {
		sv.handler = Adapt(http.DefaultServeMux)
	}
	if sv.log == nil {
		sv.log = slog.Default()
	}
	if s.TLSConfig != nil {
		sv.tls = serverTLSConfig(s.TLSConfig)
	}
	var lnErr error
	err := weft.Group(t, func(g *weft.TaskGroup) error {
		// A panic here would be a bug of the server's own: it must not
		// leave the listener open and the (protected) connections
		// running, which the group would wait for. Close and cut
		// everything, then let the panic go on.
		defer func() {
			if r := recover(); r != nil {
				ln.Close()
				for _, c := range sv.snapshot() {
					c.cutOff()
				}
				panic(r)
			}
		}()
		// One connection's failure ends that connection only.
		g.Handle(func(err error) {
			sv.log.Error("whttp: connection task failed", "addr", ln.Addr().String(), "err", err)
		})
		for {
			wc, err := ln.Accept(t)
			if err != nil {
				if !isCancellation(err) {
					lnErr = err
				}
				break
			}
			sv.start(g, wc)
		}
		return t.Protect(sv.drain)
	})
	sv.mu.Lock()
	kept := sv.kept
	sv.mu.Unlock()
	if kept != "" {
		panic(kept)
	}
	if lnErr != nil {
		return lnErr
	}
	if err != nil && !isCancellation(err) {
		return err
	}
	return nil
}

// start serves an accepted connection in a task of its own. A panic while
// setting it up closes that connection only.
func (sv *serving) start(g *weft.TaskGroup, wc *weft.Conn) {
	defer func() {
		if r := recover(); r != nil {
			sv.log.Error("whttp: panic starting a connection; closing it", "panic", r, "stack", string(debug.Stack()))
			wc.Close()
		}
	}()
	c := sv.newConn(wc)
	g.Go(func(t *weft.Task) error {
		// Protected: a graceful stop does not interrupt the handlers;
		// the server ends each connection itself.
		return t.Protect(c.serve)
	})
}

// drain runs in Serve's task after the accept loop ended: it closes the
// listener and the idle connections, and waits for the busy ones up to the
// drain timeout, then cuts them off.
func (sv *serving) drain(t *weft.Task) error {
	sv.ln.Close()
	for _, c := range sv.snapshot() {
		c.stop()
	}
	p, settle := weft.NewPromise[struct{}]()
	sv.mu.Lock()
	left := len(sv.conns)
	if left > 0 {
		sv.idle = settle
	}
	sv.mu.Unlock()
	if left == 0 {
		return nil
	}
	d := sv.s.DrainTimeout
	if d == 0 {
		d = DefaultDrainTimeout
	}
	if d < 0 {
		p.Await(t)
		return nil
	}
	if _, err := weft.Timeout(t, d, p.Await); err != nil {
		busy := sv.snapshot()
		sv.log.Warn("whttp: graceful stop: drain timeout; closing busy connections",
			"addr", sv.ln.Addr().String(), "conns", len(busy), "timeout", d)
		for _, c := range busy {
			c.cutOff()
		}
	}
	return nil
}

var errDrainTimeout = errors.New("whttp: server stopped: drain timeout")

// serverTLSConfig is cfg with NextProtos limited to what we speak.
func serverTLSConfig(cfg *tls.Config) *tls.Config {
	cfg = cfg.Clone()
	protos := slices.DeleteFunc(slices.Clone(cfg.NextProtos), func(p string) bool { return p == "h2" || p == "h2c" })
	if len(protos) == 0 {
		protos = []string{"http/1.1"}
	}
	cfg.NextProtos = protos
	return cfg
}

func isCancellation(err error) bool { return errors.Is(err, context.Canceled) }

// conn is one connection being served. Its task owns it; what Serve's
// task touches while draining (stopIt, idle, and cut, cur and group
// under mu) is atomic or guarded, and so is what a request's context reads
// from other goroutines (gen, active, cur under mu).
type conn struct {
	sv     *serving
	wc     *weft.Conn
	t      *weft.Task // the connection's task
	nc     net.Conn   // wc.NetConn(t), or a tls.Conn over it
	tls    *connTLS   // nil: plain TCP
	remote string
	st     *reqState // nil while idle
	// idle and stopIt follow a Dekker order: the connection sets idle,
	// then reads stopIt before it waits; the stop sets stopIt, then reads
	// idle and closes an idle connection. One of them sees the other.
	idle   atomic.Bool // waiting for a request: the stop closes it
	stopIt atomic.Bool // close after this response (the server stops, or an error)
	state  uint8       // an http.ConnState

	mu     sync.Mutex
	active bool            // mu (written by the task): request gen is in flight
	cut    bool            // mu: the drain timeout cut it off (errDrainTimeout)
	gen    uint64          // mu (written by the task): the requests begun
	cur    *handle         // mu: its handle
	group  *weft.TaskGroup // mu: the connection's requests run in it

	// land receives the first bytes of a request while the connection is
	// idle and holds no reqState: a small request arrives whole in it, in
	// one read.
	land [landSize]byte
	// reqStart is when the request being read began (its first byte; for
	// the first request, the accept), on the loop's clock.
	reqStart time.Time
	// rdl, wdl are the read and write deadlines last set (deadlineKey), to
	// skip setting them again.
	rdl, wdl int64
	// retained: requests to check (see reuse.go); nil without the check.
	retained *[]retained
}

// connTLS is a TLS connection's state.
type connTLS struct {
	conn  *tls.Conn
	state tls.ConnectionState
}

func (sv *serving) newConn(wc *weft.Conn) *conn {
	c := &conn{sv: sv, wc: wc}
	// RemoteAddr is never nil for an accepted connection, but a nil one
	// must not take the server down.
	if a := wc.RemoteAddr(); a != nil {
		c.remote = a.String()
	}
	sv.mu.Lock()
	sv.conns[c] = struct{}{}
	sv.mu.Unlock()
	return c
}

// stop asks c to end: at once if idle, after its response if busy.
func (c *conn) stop() {
	c.stopIt.Store(true)
	if c.idle.Load() {
		c.wc.Close()
	}
}

// cutOff ends c now: its request context (with the cause
// errDrainTimeout) and its handler's task are cancelled, and its I/O
// fails.
func (c *conn) cutOff() {
	cause := errDrainTimeout
	c.mu.Lock()
	c.cut = true
	group := c.group
	var cancel context.CancelCauseFunc
	if h := c.cur; h != nil {
		cancel = h.cancel
	}
	c.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
	if group != nil {
		group.Cancel()
	}
	c.wc.Close()
}

// isCut reports whether the drain timeout cut c off.
func (c *conn) isCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

func (c *conn) setState(s http.ConnState) {
	c.state = uint8(s)
	if hook := c.sv.s.ConnState; hook != nil && c.nc != nil {
		hook(c.nc, s)
	}
}

// serve is the connection's task. A panic anywhere in it (the handler's
// are answered in runHandler) ends this connection only: it is logged
// with its stack, the connection is closed, and Serve goes on.
func (c *conn) serve(t *weft.Task) error {
	sv := c.sv
	defer func() {
		if r := recover(); r != nil {
			sv.log.Error("whttp: panic serving a connection; closing it", "remote", c.remote,
				"panic", r, "stack", string(debug.Stack()))
			c.stopIt.Store(true)
			c.abortClose()
		}
		c.finalize(t)
	}()
	c.t = t
	c.nc = c.wc.NetConn(t)
	c.setState(http.StateNew)
	if c.stopIt.Load() {
		return nil
	}
	// The connection's requests run in a group of their own, inside the
	// shield of serve's caller: the drain timeout cancels it (cut).
	return weft.Group(t, func(g *weft.TaskGroup) error {
		c.mu.Lock()
		c.group = g
		c.mu.Unlock()
		c.run(t)
		return nil
	})
}

// finalize closes the connection (if a panic has not already) and takes
// it off the server's list.
func (c *conn) finalize(t *weft.Task) {
	sv := c.sv
	defer func() {
		sv.mu.Lock()
		delete(sv.conns, c)
		var idle func(struct{}, error) bool
		if len(sv.conns) == 0 {
			idle = sv.idle
		}
		sv.mu.Unlock()
		if idle != nil {
			idle(struct{}{}, nil)
		}
	}()
	defer func() {
		if r := recover(); r != nil { // in a ConnState hook, say
			sv.log.Error("whttp: panic closing a connection", "remote", c.remote, "panic", r, "stack", string(debug.Stack()))
			c.wc.Close()
		}
	}()
	c.close(t)
	c.checkRetained(true)
}

// run serves requests until the connection should end.
func (c *conn) run(t *weft.Task) {
	sv := c.sv
	s := sv.s
	c.reqStart = t.Now()
	if sv.tls != nil {
		if err := c.handshake(t, c.headerDeadline()); err != nil {
			return
		}
	}
	for n := 0; ; n++ {
		if !c.waitRequest(t, n == 0) {
			return
		}
		ok := c.serveRequest(t)
		c.checkRetained(false)
		if !ok || c.stopIt.Load() || s.DisableKeepAlives {
			return
		}
	}
}

// headerDeadline is when the header of the request begun at c.reqStart
// must be in: ReadHeaderTimeout or ReadTimeout, the sooner.
func (c *conn) headerDeadline() time.Time {
	s := c.sv.s
	d := s.ReadHeaderTimeout
	if d <= 0 || (s.ReadTimeout > 0 && s.ReadTimeout < d) {
		d = s.ReadTimeout
	}
	if d <= 0 {
		return time.Time{}
	}
	return c.reqStart.Add(d)
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return s.ReadTimeout
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes
	}
	return http.DefaultMaxHeaderBytes
}

// setReadDeadline sets the read deadline unless it is set already.
func (c *conn) setReadDeadline(d time.Time) {
	if k := deadlineKey(d); k != c.rdl {
		c.rdl = k
		c.wc.SetReadDeadline(d)
	}
}

// setWriteDeadline sets the write deadline unless it is set already.
func (c *conn) setWriteDeadline(d time.Time) {
	if k := deadlineKey(d); k != c.wdl {
		c.wdl = k
		c.wc.SetWriteDeadline(d)
	}
}

// deadlineKey is d in nanoseconds, 0 for none.
func deadlineKey(d time.Time) int64 {
	if d.IsZero() {
		return 0
	}
	return d.UnixNano()
}

// handshake runs the TLS handshake, bounded by the header deadline.
func (c *conn) handshake(t *weft.Task, deadline time.Time) error {
	c.wc.SetDeadline(deadline)
	tc := tls.Server(c.nc, c.sv.tls)
	err := tc.Handshake()
	if err != nil {
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			io.WriteString(c.nc, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
		} else {
			c.sv.log.Debug("whttp: TLS handshake error", "remote", c.remote, "err", err)
		}
		return err
	}
	c.wc.SetDeadline(time.Time{})
	st := tc.ConnectionState()
	c.tls, c.nc = &connTLS{conn: tc, state: st}, tc
	return nil
}

func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "CONNE", "TRACE":
		return true
	}
	return false
}

// waitRequest waits for the next request to begin, holding no reqState
// while it waits, and sets the deadline of its header. It reports false if
// the connection should end.
func (c *conn) waitRequest(t *weft.Task, first bool) bool {
	if c.st != nil && c.st.in.buffered() > 0 {
		// A pipelined request is already here.
		c.markStart(t)
		c.setReadDeadline(c.headerDeadline())
		return true
	}
	if c.stopIt.Load() {
		return false
	}
	if c.release() != nil {
		return false
	}
	var deadline time.Time
	if first {
		deadline = c.headerDeadline() // from the accept
	} else if d := c.sv.s.idleTimeout(); d > 0 {
		deadline = t.Now().Add(d)
	}
	c.setState(http.StateIdle)
	c.setReadDeadline(deadline)
	c.idle.Store(true)
	if c.stopIt.Load() {
		c.idle.Store(false)
		return false
	}
	n, err := c.nc.Read(c.land[:])
	c.idle.Store(false)
	if n == 0 || err != nil || c.stopIt.Load() {
		return false
	}
	c.setState(http.StateActive)
	c.acquire()
	in := &c.st.in
	in.w = copy(in.buf, c.land[:n])
	if !first {
		c.markStart(t)
		c.setReadDeadline(c.headerDeadline())
	}
	return true
}

// markStart notes that a request begins now, when a timeout needs to know.
func (c *conn) markStart(t *weft.Task) {
	if s := c.sv.s; s.ReadHeaderTimeout > 0 || s.ReadTimeout > 0 {
		c.reqStart = t.Now()
	}
}

// acquire gives c a reqState.
func (c *conn) acquire() {
	if c.st == nil {
		c.st = getState(c.nc)
	}
}

// release sends what is written and gives c's reqState back, unless it
// holds input not yet read.
func (c *conn) release() error {
	st := c.st
	if st == nil {
		return nil
	}
	err := st.bw.Flush()
	if st.in.buffered() == 0 {
		c.st = nil
		putState(st)
	}
	return err
}

// close ends the connection. Unless it was cut off or closed while idle,
// it flushes, shuts the writing side down and reads out what the client
// still sends for a moment: closing a socket with unread input makes the
// kernel reset the connection, which can destroy a response the client has
// not read yet.
func (c *conn) close(t *weft.Task) {
	if c.state == uint8(http.StateClosed) {
		return // closed at once already (abortClose)
	}
	if !c.isCut() && !(c.stopIt.Load() && c.state == uint8(http.StateIdle)) && c.nc != nil {
		if c.st != nil {
			c.st.bw.Flush()
		}
		c.wc.SetWriteDeadline(t.Now().Add(closeLinger))
		if c.tls != nil {
			c.tls.conn.CloseWrite()
		} else {
			c.wc.CloseWrite()
		}
		c.wc.SetReadDeadline(t.Now().Add(closeLinger))
		scratch := c.land[:]
		for range 512 {
			if _, err := c.nc.Read(scratch); err != nil {
				break
			}
		}
	}
	c.abortClose()
}

// abortClose closes the connection at once, sending what is written, and
// gives its state back.
func (c *conn) abortClose() {
	if st := c.st; st != nil {
		c.st = nil
		if c.nc != nil && !c.isCut() {
			st.bw.Flush()
		}
		putState(st)
	}
	c.wc.Close()
	if c.state != uint8(http.StateClosed) {
		c.setState(http.StateClosed)
	}
}

// serveRequest reads one request and answers it. It reports whether the
// connection may carry another.
func (c *conn) serveRequest(t *weft.Task) bool {
	s := c.sv.s
	st := c.st
	head, herr := c.readHead()
	if herr != nil {
		return c.refuse(herr)
	}
	// The header is read: the read deadline is now ReadTimeout's alone.
	if d := s.ReadTimeout; d > 0 {
		c.setReadDeadline(c.reqStart.Add(d))
	} else {
		c.setReadDeadline(time.Time{})
	}
	if d := s.WriteTimeout; d > 0 {
		c.setWriteDeadline(t.Now().Add(d))
	} else {
		c.setWriteDeadline(time.Time{})
	}
	hdr := st.header()
	h, herr := parseHead(head, hdr, &st.alloc, s.maxHeaderBytes())
	if herr != nil {
		return c.refuse(herr)
	}
	req := st.request()
	u, err := parseTarget(st.urlFor(), h.method, h.target)
	if err != nil {
		return c.refuse(badHead("invalid request target: " + err.Error()))
	}
	req.Method = h.method
	req.URL = u
	req.Proto, req.ProtoMajor, req.ProtoMinor = h.proto, h.major, h.minor
	req.Header = hdr
	req.RequestURI = h.target
	req.RemoteAddr = c.remote
	if c.tls != nil {
		req.TLS = &c.tls.state
	}
	req.Host = u.Host // the absolute form's wins (RFC 9112 section 3.2.2)
	if req.Host == "" {
		req.Host = h.host
	}
	if h.pragmaNoCache && !h.cacheControl { // as net/http does
		hdr["Cache-Control"] = []string{"no-cache"}
	}
	// Persistence (RFC 9112 section 9.3).
	if h.minor == 0 {
		req.Close = h.connClose || !h.keepAlive
	} else {
		req.Close = h.connClose
	}
	// Framing (RFC 9112 section 6).
	var body *reqBody
	switch {
	case h.tes > 0 && h.minor == 0:
		// Faulty framing in HTTP/1.0 (section 6.1): the body is what
		// Content-Length says, and the connection ends after this.
		delete(hdr, "Transfer-Encoding")
		req.Close = true
		body = c.fixedBody(h.contentLength)
	case h.tes > 0:
		delete(hdr, "Transfer-Encoding")
		if h.cls > 0 {
			// Both: chunked framing, then close (section 6.1).
			delete(hdr, "Content-Length")
			req.Close = true
		}
		st.te[0] = "chunked"
		req.TransferEncoding = st.te[:1:1]
		req.ContentLength = -1
		body = &reqBody{c: c, gen: c.gen + 1, chunked: true, trailer: &req.Trailer}
		if h.trailer {
			tr, herr := declaredTrailer(hdr)
			if herr != nil {
				return c.refuse(herr)
			}
			req.Trailer = tr
		}
	default:
		body = c.fixedBody(h.contentLength)
	}
	if body != nil {
		req.Body = body
		if !body.chunked {
			req.ContentLength = body.left
		}
	} else {
		req.Body = http.NoBody
	}
	return c.handle(t, req, body, h.expect)
}

// fixedBody returns the body of a request framed by Content-Length n (-1:
// none), nil for none.
func (c *conn) fixedBody(n int64) *reqBody {
	if n <= 0 {
		return nil
	}
	return &reqBody{c: c, gen: c.gen + 1, left: n}
}

// declaredTrailer returns the Trailer fields a chunked request declares,
// as net/http's: canonical names with no values yet; the framing fields
// are refused.
func declaredTrailer(hdr http.Header) (http.Header, *headError) {
	vv := hdr["Trailer"]
	delete(hdr, "Trailer")
	var tr http.Header
	for _, v := range vv {
		for k := range strings.SplitSeq(v, ",") {
			k = strings.Trim(k, " \t")
			if k == "" {
				continue
			}
			k = http.CanonicalHeaderKey(k)
			switch k {
			case "Transfer-Encoding", "Trailer", "Content-Length":
				return nil, badHead("bad trailer key " + k)
			}
			if tr == nil {
				tr = make(http.Header)
			}
			tr[k] = nil
		}
	}
	return tr, nil
}

// errHeadTooLarge, errBareLF: what readHead finds in the bytes.
var (
	errHeadTooLarge = &headError{code: http.StatusRequestHeaderFieldsTooLarge, reason: "request head too large"}
	errBareLF       = badHead("line ends with a bare LF")
	errBareCRStart  = badHead("bare CR before the request line")
)

// readHead reads a request head, from its request line to the empty line
// that ends it, skipping empty lines before it (RFC 9112 section 2.2), and
// returns it as a string. It checks that every LF follows a CR and that
// the head (with the empty lines before it) stays within MaxHeaderBytes
// plus 4096 bytes (net/http's allowance for the request line); on an I/O
// error (the client stopped or was too slow) it returns a headError whose
// code is 0 for nothing to answer, or 400 when part of a request had
// arrived.
func (c *conn) readHead() (string, *headError) {
	in := &c.st.in
	limit := c.sv.s.maxHeaderBytes() + 4096
	skipped := 0   // empty lines before the request line
	scan := 0      // bytes after in.r already looked at for LF
	lineStart := 0 // where the current line begins, after in.r
	for {
		buf := in.buf[in.r:in.w]
		if scan == 0 {
			// Empty lines before the request line.
			for len(buf) >= 2 && buf[0] == '\r' && buf[1] == '\n' {
				in.r += 2
				skipped += 2
				buf = buf[2:]
			}
			if len(buf) > 0 && buf[0] == '\n' {
				return "", errBareLF
			}
			if len(buf) >= 2 && buf[0] == '\r' {
				return "", errBareCRStart
			}
			if skipped > limit {
				return "", errHeadTooLarge
			}
			if len(buf) > 0 && buf[0] == '\r' {
				buf = buf[:0] // a CR alone: wait for what follows it
			}
		}
		for scan < len(buf) {
			i := bytes.IndexByte(buf[scan:], '\n')
			if i < 0 {
				scan = len(buf)
				break
			}
			p := scan + i
			if p == 0 || buf[p-1] != '\r' {
				return "", errBareLF
			}
			if p-1 == lineStart && lineStart > 0 {
				// The empty line: the head is buf[:p+1].
				s := c.st.headString(buf[:p+1])
				in.r += p + 1
				return s, nil
			}
			lineStart = p + 1
			scan = p + 1
		}
		if len(buf)+skipped > limit {
			return "", errHeadTooLarge
		}
		if in.w == len(in.buf) {
			if in.r > 0 {
				in.w = copy(in.buf, in.buf[in.r:in.w])
				in.r = 0
			} else {
				// Grow, up to the limit.
				nb := make([]byte, min(2*len(in.buf), limit+1))
				in.w = copy(nb, in.buf[in.r:in.w])
				in.r = 0
				in.buf = nb
			}
		}
		if err := c.fill(); err != nil {
			// Part of a request has arrived (the idle wait read some):
			// answer 400, as net/http does, unless the client is gone.
			if isClosedOrReset(err) {
				return "", &headError{reason: "reading the request head: " + err.Error()}
			}
			return "", &headError{code: http.StatusBadRequest, reason: "request head incomplete: " + err.Error()}
		}
	}
}

// isClosedOrReset reports whether err means nobody can read an answer.
func isClosedOrReset(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || isCancellation(err)
}

// refuse answers a request the server will not serve, and reports false:
// the connection ends.
func (c *conn) refuse(e *headError) bool {
	c.sv.log.Debug("whttp: refused a request", "remote", c.remote, "status", e.code, "reason", e.reason)
	if e.code != 0 {
		c.writeError(e.code, "")
	}
	return false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// writeError writes a short plain-text error response and marks the
// connection for closing.
func (c *conn) writeError(code int, msg string) {
	c.stopIt.Store(true)
	text := strconv.Itoa(code) + " " + http.StatusText(code)
	body := text
	if msg != "" {
		body += ": " + msg
	}
	bw := c.st.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(text)
	bw.WriteString("\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ")
	bw.WriteString(strconv.Itoa(len(body)))
	bw.WriteString("\r\nConnection: close\r\n\r\n")
	bw.WriteString(body)
	bw.Flush()
}

// handle runs the handler on req and finishes the response. It reports
// whether the connection may carry another request.
func (c *conn) handle(t *weft.Task, req *http.Request, body *reqBody, expect string) bool {
	hd := c.beginRequest()
	req = setContext(req, hd)
	w := &c.st.resp
	w.reset(c, req, body)
	defer func() {
		w.release()
		c.endRequest()
		if body != nil {
			body.trailer = nil // the request is over: no reference to it
		}
		c.noteReturned(req)
	}()
	if expect != "" {
		if !strings.EqualFold(expect, "100-continue") {
			c.writeError(http.StatusExpectationFailed, "")
			return false
		}
		if body != nil && req.ProtoAtLeast(1, 1) {
			body.expect = true
		}
	}
	if !c.runHandler(t, hd, w, req) {
		return false
	}
	if !w.finish() {
		c.abortClose()
		return false
	}
	return !w.closeAfter && !c.isCut()
}

// runHandler calls the handler, turning a panic into a 500 (if nothing
// was sent yet) and a log entry with the stack. It reports false if the
// handler panicked: the connection is then closed, at once if the response
// had begun (the client sees it cut short).
func (c *conn) runHandler(t *weft.Task, hd *handle, w *response, req *http.Request) (ok bool) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if r != http.ErrAbortHandler {
			c.sv.log.Error("whttp: panic serving request", "remote", c.remote,
				"method", req.Method, "uri", req.RequestURI, "panic", r, "stack", string(debug.Stack()))
		}
		w.done = true
		c.stopIt.Store(true)
		if !w.committed && !c.isCut() {
			c.writeError(http.StatusInternalServerError, "")
		} else if w.committed {
			if r != http.ErrAbortHandler {
				c.sv.log.Error("whttp: closing the connection: the handler panicked after the response began",
					"remote", c.remote, "method", req.Method, "uri", req.RequestURI)
			}
			c.abortClose()
		}
		ok = false
	}()
	if req.RequestURI == "*" && req.Method == http.MethodOptions {
		serveOptionsStar(hd, req)
	} else {
		c.sv.handler.ServeHTTP(t, hd, req)
	}
	return true
}

// serveOptionsStar answers OPTIONS * for the server itself, as net/http
// does (the handler does not see it): 200, no body; a body past 4 KB
// ends the connection.
func serveOptionsStar(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		io.Copy(io.Discard, io.LimitReader(r.Body, 4<<10))
	}
}
