package whttp

// The server: an accept loop in the task that calls Serve, and one task
// per connection, under a weft.Group. All of a Serve's state is owned by
// its loop (every task that touches it runs there), so it needs no locks.
//
// A connection task loops: wait for the first byte of a request (idle),
// read the request with http.ReadRequest, run the handler, finish the
// response, and again. While idle it holds no pooled buffer: its
// bufio.Reader and bufio.Writer go back to pools, and the wait reads into
// a small landing buffer of the connection's own (a small request arrives
// whole in it, so waiting costs no extra read). Responses are flushed before the task waits for
// input, so pipelined requests get their responses in order and in as few
// writes as can be.
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
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// landSize is the size of a connection's landing buffer (conn.land).
const landSize = 512

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
	// (for the first request: from the accept) to the end of its header; a
	// client slower than that is cut off without a response, as net/http
	// does. Zero: ReadTimeout applies; both zero, no limit.
	ReadHeaderTimeout time.Duration

	// ReadTimeout bounds the reading of a whole request, body included.
	ReadTimeout time.Duration

	// WriteTimeout bounds the time from the end of the request header to
	// the end of the response.
	WriteTimeout time.Duration

	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request before it is closed. Zero: ReadTimeout; both zero, no limit.
	IdleTimeout time.Duration

	// MaxHeaderBytes bounds the request line and header; a larger one is
	// answered 431. Zero: http.DefaultMaxHeaderBytes (1 MB).
	MaxHeaderBytes int

	// DisableKeepAlives closes each connection after one response.
	DisableKeepAlives bool

	// DrainTimeout bounds a graceful stop: how long requests in flight may
	// run after Serve's task is cancelled. Zero: DefaultDrainTimeout (10 s);
	// negative: no bound.
	DrainTimeout time.Duration

	// ConnState, if not nil, is called on the loop when a connection
	// changes state (new, active, idle, closed), as net/http's is. It must
	// not block.
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

// Serve accepts connections on ln and serves each in a task of its own,
// on t's loop, until t is cancelled or ln fails. It suspends t for as long
// as it serves. One connection's failure (a bad request, a reset, a
// handler's panic) ends that connection only.
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
			c := sv.newConn(wc)
			g.Go(func(t *weft.Task) error {
				// Protected: a graceful stop does not interrupt the
				// handlers; the server ends each connection itself.
				return t.Protect(c.serve)
			})
		}
		return t.Protect(sv.drain)
	})
	if lnErr != nil {
		return lnErr
	}
	if err != nil && !isCancellation(err) {
		return err
	}
	return nil
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
			c.cut(errDrainTimeout)
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
// task touches while draining (stopIt, idle, and the cut-off's fields
// under sv.mu) is atomic or guarded.
type conn struct {
	sv     *serving
	wc     *weft.Conn
	nc     net.Conn // wc.NetConn(t), or a tls.Conn over it
	tlsc   *tls.Conn
	tlsst  *tls.ConnectionState
	remote string
	r      connReader
	br     *bufio.Reader // nil while idle
	bw     *bufio.Writer // nil while idle
	ctx    context.Context
	cancel context.CancelCauseFunc // sv.mu: of the request in flight; nil between requests
	group  *weft.TaskGroup         // sv.mu: the connection's requests run in it
	cutErr error                   // sv.mu: the drain timeout cut it off
	// idle and stopIt follow a Dekker order: the connection sets idle,
	// then reads stopIt before it waits; the stop sets stopIt, then reads
	// idle and closes an idle connection. One of them sees the other.
	idle   atomic.Bool // waiting for a request: the stop closes it
	stopIt atomic.Bool // close after this response (the server stops, or an error)
	state  http.ConnState
	// land receives the first bytes of a request while the connection is
	// idle and holds no buffer: a small request arrives whole in it, in
	// one read.
	land [landSize]byte
	// reqStart is when the request being read began (its first byte; for
	// the first request, the accept), on the loop's clock.
	reqStart time.Time
}

func (sv *serving) newConn(wc *weft.Conn) *conn {
	c := &conn{sv: sv, wc: wc, remote: wc.RemoteAddr().String()}
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

// cut ends c now: its request context and its handler's task are
// cancelled, and its I/O fails.
func (c *conn) cut(cause error) {
	c.sv.mu.Lock()
	c.cutErr = cause
	cancel, group := c.cancel, c.group
	c.sv.mu.Unlock()
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
	c.sv.mu.Lock()
	defer c.sv.mu.Unlock()
	return c.cutErr != nil
}

func (c *conn) setState(s http.ConnState) {
	c.state = s
	if hook := c.sv.s.ConnState; hook != nil && c.nc != nil {
		hook(c.nc, s)
	}
}

// serve is the connection's task.
func (c *conn) serve(t *weft.Task) error {
	sv := c.sv
	defer func() {
		c.close(t)
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
	c.nc = c.wc.NetConn(t)
	c.r.c = c
	c.r.limit = -1
	c.setState(http.StateNew)
	if c.stopIt.Load() {
		return nil
	}
	// The connection's requests run in a group of their own, inside the
	// shield of serve's caller: the drain timeout cancels it (cut).
	return weft.Group(t, func(g *weft.TaskGroup) error {
		c.sv.mu.Lock()
		c.group = g
		c.sv.mu.Unlock()
		c.run(t)
		return nil
	})
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
	ctx := context.WithValue(sv.base, http.LocalAddrContextKey, c.wc.LocalAddr())
	c.ctx = context.WithValue(ctx, taskKey{}, t)
	for n := 0; ; n++ {
		if !c.waitRequest(t, n == 0) {
			return
		}
		if !c.serveRequest(t) {
			return
		}
		if c.stopIt.Load() || s.DisableKeepAlives {
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

func (s *Server) maxHeaderBytes() int64 {
	if s.MaxHeaderBytes > 0 {
		return int64(s.MaxHeaderBytes)
	}
	return http.DefaultMaxHeaderBytes
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
	c.tlsc, c.tlsst, c.nc = tc, &st, tc
	return nil
}

func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "CONNE", "TRACE":
		return true
	}
	return false
}

// waitRequest waits for the next request to begin, holding no buffer
// while it waits, and sets the deadline of its header. It reports false if
// the connection should end.
func (c *conn) waitRequest(t *weft.Task, first bool) bool {
	if c.br != nil && c.br.Buffered() > 0 {
		// A pipelined request is already here.
		c.reqStart = t.Now()
		c.wc.SetReadDeadline(c.headerDeadline())
		return true
	}
	if c.stopIt.Load() {
		return false
	}
	c.release()
	var deadline time.Time
	if first {
		deadline = c.headerDeadline() // from the accept
	} else if d := c.sv.s.idleTimeout(); d > 0 {
		deadline = t.Now().Add(d)
	}
	c.setState(http.StateIdle)
	c.wc.SetReadDeadline(deadline)
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
	c.r.pending = c.land[:n]
	c.setState(http.StateActive)
	c.acquire()
	if !first {
		c.reqStart = t.Now()
		c.wc.SetReadDeadline(c.headerDeadline())
	}
	return true
}

var (
	readerPool sync.Pool
	writerPool sync.Pool
)

// acquire gives c its buffers.
func (c *conn) acquire() {
	if c.br == nil {
		if br, ok := readerPool.Get().(*bufio.Reader); ok {
			br.Reset(&c.r)
			c.br = br
		} else {
			c.br = bufio.NewReaderSize(&c.r, 4<<10)
		}
	}
	if c.bw == nil {
		if bw, ok := writerPool.Get().(*bufio.Writer); ok {
			bw.Reset(c.nc)
			c.bw = bw
		} else {
			c.bw = bufio.NewWriterSize(c.nc, 4<<10)
		}
	}
}

// release gives c's buffers back (flushing what is written) while it has
// nothing buffered to read.
func (c *conn) release() {
	if c.bw != nil {
		c.bw.Flush()
		c.bw.Reset(nil)
		writerPool.Put(c.bw)
		c.bw = nil
	}
	if c.br != nil && c.br.Buffered() == 0 {
		c.br.Reset(nil)
		readerPool.Put(c.br)
		c.br = nil
	}
}

// close ends the connection. Unless it was cut off or closed while idle,
// it flushes, shuts the writing side down and reads out what the client
// still sends for a moment: closing a socket with unread input makes the
// kernel reset the connection, which can destroy a response the client has
// not read yet.
func (c *conn) close(t *weft.Task) {
	if !c.isCut() && !(c.stopIt.Load() && c.state == http.StateIdle) && c.nc != nil {
		if c.bw != nil {
			c.bw.Flush()
		}
		c.wc.SetWriteDeadline(t.Now().Add(closeLinger))
		if c.tlsc != nil {
			c.tlsc.CloseWrite()
		} else {
			c.wc.CloseWrite()
		}
		c.wc.SetReadDeadline(t.Now().Add(closeLinger))
		if c.br != nil {
			c.br.Discard(c.br.Buffered())
		}
		scratch := c.land[:]
		for range 512 {
			if _, err := c.nc.Read(scratch); err != nil {
				break
			}
		}
	}
	c.wc.Close()
	c.setState(http.StateClosed)
	c.release()
	if c.br != nil {
		c.br.Reset(nil)
		readerPool.Put(c.br)
		c.br = nil
	}
}

// connReader is what the bufio.Reader reads: the connection, after the
// byte read by the idle wait, with a limit while a header is read. Before
// it waits for input it flushes the response written so far, so that a
// client never waits for a response the server holds.
type connReader struct {
	c       *conn
	pending []byte // read by the idle wait, not yet passed on
	limit   int64  // bytes left before the header is too large; < 0 no limit
	hit     bool   // the limit was reached
	err     error  // the last read's error (a timeout, the end, a reset)
}

func (r *connReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.limit == 0 {
		r.hit = true
		return 0, io.EOF
	}
	if r.limit > 0 && int64(len(p)) > r.limit {
		p = p[:r.limit]
	}
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		r.count(n)
		return n, nil
	}
	if bw := r.c.bw; bw != nil && bw.Buffered() > 0 {
		if err := bw.Flush(); err != nil {
			return 0, err
		}
	}
	n, err := r.c.nc.Read(p)
	r.count(n)
	if err != nil {
		r.err = err
	}
	return n, err
}

func (r *connReader) count(n int) {
	if r.limit > 0 {
		r.limit -= int64(n)
	}
}

// serveRequest reads one request and answers it. It reports whether the
// connection may carry another.
func (c *conn) serveRequest(t *weft.Task) bool {
	s := c.sv.s
	c.r.limit = s.maxHeaderBytes() + 4096 // net/http's allowance for the request line
	c.r.hit = false
	c.r.err = nil
	req, err := http.ReadRequest(c.br)
	hit := c.r.hit
	c.r.limit = -1
	if err != nil {
		return c.badRequest(err, hit)
	}
	// The header is read: the read deadline is now ReadTimeout's alone.
	if d := s.ReadTimeout; d > 0 {
		c.wc.SetReadDeadline(c.reqStart.Add(d))
	} else {
		c.wc.SetReadDeadline(time.Time{})
	}
	if d := s.WriteTimeout; d > 0 {
		c.wc.SetWriteDeadline(t.Now().Add(d))
	} else {
		c.wc.SetWriteDeadline(time.Time{})
	}
	if code, msg := checkRequest(req); code != 0 {
		c.writeError(code, msg)
		return false
	}
	return c.handle(t, req)
}

// checkRequest applies the checks net/http's server makes beyond
// http.ReadRequest's parsing (which has already moved the Host header to
// req.Host, and refused more than one).
func checkRequest(req *http.Request) (int, string) {
	if req.ProtoMajor != 1 {
		return http.StatusHTTPVersionNotSupported, "unsupported protocol version"
	}
	if req.URL.Host == "" { // the Host header's, not the absolute URL's
		if req.Host == "" && req.ProtoAtLeast(1, 1) && req.Method != "CONNECT" {
			return http.StatusBadRequest, "missing required Host header"
		}
		if !validHost(req.Host) {
			return http.StatusBadRequest, "malformed Host header"
		}
	}
	for k, vv := range req.Header {
		for _, v := range vv {
			if !validHeaderValue(v) {
				return http.StatusBadRequest, "invalid header value for " + k
			}
		}
	}
	return 0, ""
}

// validHeaderValue reports whether v has no control characters other than
// horizontal tab (RFC 9110, section 5.5).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// validHost reports whether h is a plausible Host header: no control
// characters, spaces or characters outside what a host and port use.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		b := h[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case strings.IndexByte("!$%&'()*+,-.:;=[]_~", b) >= 0:
		case b >= 0x80: // internationalised names, as net/http allows
		default:
			return false
		}
	}
	return true
}

// badRequest answers a request that could not be read, as net/http does:
// nothing for a connection that ended or timed out, 431 for a header over
// the limit, 501 for an unknown transfer coding, 400 otherwise.
func (c *conn) badRequest(err error, tooLarge bool) bool {
	if rerr := c.r.err; rerr != nil {
		err = rerr // the parser saw the input cut short by this
	}
	switch {
	case tooLarge:
		c.writeError(http.StatusRequestHeaderFieldsTooLarge, "")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isTimeout(err), isNetError(err):
		// The client went away or was too slow: nobody to answer.
	case strings.Contains(err.Error(), "unsupported transfer encoding"):
		c.writeError(http.StatusNotImplemented, "unsupported transfer encoding")
	default:
		c.writeError(http.StatusBadRequest, "")
	}
	return false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isNetError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe)
}

// writeError writes a short plain-text error response and marks the
// connection for closing.
func (c *conn) writeError(code int, msg string) {
	c.stopIt.Store(true)
	text := fmt.Sprintf("%d %s", code, http.StatusText(code))
	body := text
	if msg != "" {
		body += ": " + msg
	}
	fmt.Fprintf(c.bw, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		text, len(body), body)
	c.bw.Flush()
}

// handle runs the handler on req and finishes the response. It reports
// whether the connection may carry another request.
func (c *conn) handle(t *weft.Task, req *http.Request) bool {
	ctx, cancel := context.WithCancelCause(c.ctx)
	c.sv.mu.Lock()
	c.cancel = cancel
	c.sv.mu.Unlock()
	defer func() {
		cancel(context.Canceled)
		c.sv.mu.Lock()
		c.cancel = nil
		c.sv.mu.Unlock()
	}()
	req = req.WithContext(ctx)
	req.RemoteAddr = c.remote
	req.TLS = c.tlsst
	w := newResponse(c, req)
	if expect := req.Header.Get("Expect"); expect != "" {
		if !strings.EqualFold(expect, "100-continue") {
			c.writeError(http.StatusExpectationFailed, "")
			return false
		}
		if req.ProtoAtLeast(1, 1) && req.ContentLength != 0 {
			w.body.expect = true
		}
	}
	if !c.runHandler(t, w, req) {
		return false
	}
	w.finish()
	w.body.done = true
	return !w.closeAfter && !c.isCut()
}

// runHandler calls the handler, turning a panic into a 500 (if nothing
// was sent yet) and a log entry with the stack. It reports false if the
// handler panicked: the connection is then closed.
func (c *conn) runHandler(t *weft.Task, w *response, req *http.Request) (ok bool) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		w.body.done = true
		if r != http.ErrAbortHandler {
			c.sv.log.Error("whttp: panic serving request", "remote", c.remote,
				"method", req.Method, "uri", req.RequestURI, "panic", r, "stack", string(debug.Stack()))
		}
		if !w.committed && !c.isCut() {
			c.bw.Reset(c.nc) // drop anything half-written
			c.writeError(http.StatusInternalServerError, "")
		}
		c.stopIt.Store(true)
		ok = false
	}()
	c.sv.handler.ServeHTTP(t, w, req)
	return true
}
