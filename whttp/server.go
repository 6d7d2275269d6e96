package whttp

// The server: an accept loop in the task that calls Serve, and one task
// per connection, under a weft.Group. The connection tasks run on their
// connections' home loops (with several loops, not all Serve's), so what
// Serve's task and theirs share (the serving's list of connections, a
// connection's stop and cut-off state, a request's context) is guarded by
// a mutex or atomic; the rest of a connection is its task's alone.
//
// The connection tasks (conn.go; one request's exchange is request.go)
// are in a group with a failure handler (one connection's failure is
// logged, and ends that connection only). Each runs its requests in a
// group of its own, inside Protect.
//
// Graceful stop, when the task in Serve is cancelled (or the listener
// fails): the listener is closed; idle connections are closed; busy ones
// finish the response in flight (with Connection: close) and then close.
// The shield keeps the stop from reaching the handlers. If connections are
// still busy after DrainTimeout, each one's own group is cancelled (its
// handler's task sees the cancellation), its request context is cancelled
// and it is closed; Serve returns when every connection task has ended.

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft"
)

// DefaultDrainTimeout is how long a graceful stop lets requests in flight
// run when Server.DrainTimeout is zero.
const DefaultDrainTimeout = 10 * time.Second

// Server serves HTTP/1.x and HTTP/2 on weft listeners. Its fields are read when Serve
// starts each connection; do not change them while it serves. The zero
// value serves http.DefaultServeMux, as net/http's Server does.
type Server struct {
	// Addr is the TCP address ListenAndServe and ListenAndServeTLS listen
	// on, as net/http's is: "" means ":http" (":https" for TLS). Serve
	// does not read it.
	Addr string

	// Handler answers requests; nil means Adapt(http.DefaultServeMux).
	Handler Handler

	// TLSConfig, if not nil, makes Serve speak HTTPS: each connection
	// starts with a TLS handshake (crypto/tls, on the connection's task).
	// With HTTP/2 on (Protocols), "h2" is put first in its NextProtos,
	// followed by "http/1.1" if it has none; otherwise "h2" is dropped
	// from them and they default to "http/1.1".
	TLSConfig *tls.Config

	// ReadHeaderTimeout bounds the time from the first byte of a request
	// (for the first request: from the accept) to the end of its header. A
	// client slower than that gets 408 Request Timeout (RFC 9110 section
	// 15.5.9) and the connection is closed; if no byte of the request has
	// arrived (the first request), the connection is closed without an
	// answer, as net/http does. (net/http answers 400 when its deadline
	// falls inside a line of the head and nothing when it falls between
	// two lines.) Zero: ReadTimeout applies; both zero, no limit. On an
	// HTTP/2 connection it bounds the time from the accept to the first
	// HEADERS frame (then GOAWAY and the close).
	ReadHeaderTimeout time.Duration

	// ReadTimeout bounds the reading of a whole request, body included.
	// On HTTP/2 it applies per stream, as net/http's: from the stream's
	// HEADERS, body reads past it fail with an error matching
	// os.ErrDeadlineExceeded (ResponseController.SetReadDeadline moves
	// it).
	ReadTimeout time.Duration

	// WriteTimeout bounds the time from the end of the request header to
	// the end of the response. On HTTP/2 it applies per stream, as
	// net/http's: past it the stream is reset (INTERNAL_ERROR) and its
	// handler's context cancelled with an error matching
	// os.ErrDeadlineExceeded (ResponseController.SetWriteDeadline moves
	// it).
	WriteTimeout time.Duration

	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request before it is closed (an HTTP/2 connection with no stream
	// open: GOAWAY, then the close). Zero: ReadTimeout; both zero, no
	// limit.
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

	// BaseContext, if not nil, returns the context that the requests
	// Serve accepts on ln derive from, as net/http's does (it gets the
	// *weft.Listener rather than a net.Listener): its values are in every
	// r.Context(), and its cancellation cancels them (it does not stop
	// the server). It is called once per Serve, in Serve's task, and must
	// not block nor return nil. Nil: Serve's task's context, without its
	// cancellation.
	BaseContext func(ln *weft.Listener) context.Context

	// Protocols, if not nil, says which protocols the server speaks, with
	// net/http's meaning: nil is HTTP/1 and, over TLS, HTTP/2 (offered
	// by ALPN as "h2"); SetUnencryptedHTTP2(true) serves HTTP/2 over
	// cleartext connections that open with its preface (h2c with prior
	// knowledge). As net/http since Go 1.24, the HTTP/1.1 "Upgrade: h2c"
	// handshake is not offered (RFC 9113 deprecates it): such a request
	// is answered over HTTP/1.1, which its clients (curl --http2) go on
	// with. See the package doc, HTTP/2.
	Protocols *http.Protocols

	// HTTP2, if not nil, sets HTTP/2's limits, with net/http's meaning
	// (zero fields: the defaults; see the package doc, HTTP/2). With
	// SendPingTimeout set, a connection on which no frame has come for
	// that long gets a PING, and is closed if no frame follows within
	// PingTimeout (default 15 s), its handlers' contexts cancelled.
	HTTP2 *http.HTTP2Config

	// ConnContext, if not nil, returns the context of one connection's
	// requests, derived from ctx (BaseContext's), as net/http's does. It
	// is called in the connection's task as it starts, with the accepted
	// connection (before any TLS handshake; its Read and Write belong to
	// that task), and must not block nor return nil.
	ConnContext func(ctx context.Context, c net.Conn) context.Context

	// The Serve calls in progress and the stop (Shutdown, Close).
	mu         sync.Mutex
	servings   map[*serving]struct{} // mu
	closed     bool                  // mu: Shutdown or Close was called
	onShutdown []func()              // mu
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

	// stopped: Shutdown (stopGraceful) or Close (stopNow) closed ln;
	// Serve then returns http.ErrServerClosed.
	stopped atomic.Int32
	done    chan struct{} // closed when Serve returns

	mu    sync.Mutex
	conns map[*conn]struct{} // mu: the connections not yet ended, but hijacked ones
	// hijacked: connections a handler took over whose task has not ended
	// (hijack.go).
	hijacked map[*conn]struct{}         // mu
	idle     func(struct{}, error) bool // mu: settles the drain's wait when conns empties

	// group is Serve's group, in which idle keep-alive connections wait
	// for their next request with no task (conn.go); set before the first
	// accept.
	group *weft.TaskGroup
}

// How a Serve was stopped from outside (serving.stopped).
const (
	stopGraceful = 1 // Shutdown
	stopNow      = 2 // Close
)

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
// until t is cancelled, Shutdown or Close is called, or ln fails. It
// suspends t for as long as it serves, and always closes ln. Cancelling t
// is a graceful stop (below): Serve then waits for every connection task
// to end and returns nil. After Shutdown it stops the same way and
// returns http.ErrServerClosed (at once, closing ln, if Shutdown or Close
// was called before), as net/http's does; after Close, the same without
// the grace. If ln fails (closed by someone else: an error matching
// net.ErrClosed), Serve stops gracefully and returns that error.
//
// A connection's task starts on t's loop and runs on the connection's
// home loop: with several loops (WithLoops), connections are spread over
// them, and their handlers run in parallel (see the package doc, Where
// handlers run). One connection's failure (a bad request, a reset, a
// handler's panic, even a panic in the server's own code or a ConnState
// hook) ends that connection only: it is logged, the connection is closed,
// and Serve goes on accepting.
//
// The graceful stop: Serve stops accepting at once (it closes ln), closes
// idle connections, and lets requests in flight finish, with Connection:
// close, for up to DrainTimeout: their handlers, the tasks those start and
// their request contexts are not cancelled (each connection task runs
// inside Protect). Past DrainTimeout, what is still busy is cut off: the
// handler's task is cancelled (its suspension points return an error
// matching context.Canceled), its request context is cancelled and its
// connection closed. Connections a handler hijacked are not the server's:
// the drain neither waits for them nor closes them, and once it is over
// the tasks of their handlers that still run are cancelled, so that Serve
// can return (see the package doc, Hijacking).
func (s *Server) Serve(t *weft.Task, ln *weft.Listener) error {
	return s.serve(t, ln, s.TLSConfig)
}

// serve is Serve with the TLS configuration to use (nil: plain HTTP).
func (s *Server) serve(t *weft.Task, ln *weft.Listener, tlsConfig *tls.Config) error {
	if ln == nil {
		panic("whttp: Serve called with a nil listener")
	}
	sv := &serving{
		s:       s,
		handler: s.Handler,
		log:     s.Logger,
		ln:      ln,
		conns:   make(map[*conn]struct{}),
		done:    make(chan struct{}),
	}
	if s.BaseContext != nil {
		sv.base = s.BaseContext(ln)
		if sv.base == nil {
			panic("whttp: Server.BaseContext returned nil")
		}
	} else {
		sv.base = context.WithoutCancel(t.Context())
	}
	if !s.track(sv) {
		ln.Close()
		return http.ErrServerClosed
	}
	defer s.untrack(sv)
	if sv.handler == nil {
		sv.handler = Adapt(http.DefaultServeMux)
	}
	if sv.log == nil {
		sv.log = slog.Default()
	}
	if tlsConfig != nil {
		sv.tls = serverTLSConfig(tlsConfig)
		if http1, h2, _ := s.protocols(); h2 {
			sv.tls.NextProtos = h2NextProtos(tlsConfig.NextProtos, http1)
		}
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
					c.cutOff(errDrainTimeout)
				}
				panic(r)
			}
		}()
		sv.group = g
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
			if sv.stopped.Load() != 0 {
				wc.Close() // accepted as Shutdown closed ln
				break
			}
			sv.start(g, wc)
		}
		err := t.Protect(sv.drain)
		sv.endHijacked()
		return err
	})
	if sv.stopped.Load() != 0 {
		return http.ErrServerClosed
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
	if sv.stopped.Load() == stopNow {
		d = 0
	}
	if d == 0 {
		sv.cutAll() // Close: the group waits for the connection tasks
		return nil
	}
	if d < 0 {
		p.Await(t)
		return nil
	}
	if _, err := weft.Timeout(t, d, p.Await); err != nil {
		busy := sv.cutAll()
		sv.log.Warn("whttp: graceful stop: drain timeout; closed busy connections",
			"addr", sv.ln.Addr().String(), "conns", busy, "timeout", d)
	}
	return nil
}

// cutAll cuts off every connection not yet ended, and returns how many.
func (sv *serving) cutAll() int {
	busy := sv.snapshot()
	cause := errDrainTimeout
	if sv.stopped.Load() == stopNow {
		cause = errServerClose
	}
	for _, c := range busy {
		c.cutOff(cause)
	}
	return len(busy)
}

// track adds sv to the Serve calls in progress, unless the server is
// closed.
func (s *Server) track(sv *serving) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.servings == nil {
		s.servings = make(map[*serving]struct{})
	}
	s.servings[sv] = struct{}{}
	return true
}

// untrack removes sv, whose Serve returns.
func (s *Server) untrack(sv *serving) {
	s.mu.Lock()
	delete(s.servings, sv)
	s.mu.Unlock()
	close(sv.done)
}

// stopAll marks the server closed and stops every Serve in progress, how
// says how; it returns them, and the functions RegisterOnShutdown gave.
func (s *Server) stopAll(how int32) ([]*serving, []func()) {
	s.mu.Lock()
	s.closed = true
	list := make([]*serving, 0, len(s.servings))
	for sv := range s.servings {
		list = append(list, sv)
	}
	fns := s.onShutdown
	s.mu.Unlock()
	for _, sv := range list {
		sv.stopped.CompareAndSwap(0, how)
		if how == stopNow {
			sv.stopped.Store(stopNow) // Close after Shutdown: no more grace
			for _, c := range sv.snapshot() {
				c.cutOff(errServerClose)
			}
		}
		sv.ln.Close()
	}
	return list, fns
}

// Shutdown stops the server gracefully, as cancelling Serve's task does
// (see Serve): every Serve in progress closes its listener, closes its
// idle connections and lets the requests in flight finish, for up to
// DrainTimeout, and then returns http.ErrServerClosed; a later Serve
// returns http.ErrServerClosed at once. Shutdown first starts each
// function given to RegisterOnShutdown in a goroutine of its own, then
// waits until every Serve has returned, or until ctx is done, when it
// returns ctx.Err() (the drain goes on). Connections taken over by a
// handler (Hijack) are the handler's: Shutdown neither waits for them nor
// closes them.
//
// Shutdown blocks the goroutine that calls it, so call it from outside
// the tasks of the Runs that serve (a signal handler's goroutine, a test):
// in a task it would block the loop the drain needs. A task stops a
// server by cancelling Serve's task, or runs Shutdown through
// weft.Blocking.
func (s *Server) Shutdown(ctx context.Context) error {
	list, fns := s.stopAll(stopGraceful)
	for _, f := range fns {
		go f()
	}
	for _, sv := range list {
		select {
		case <-sv.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close stops the server at once: every Serve in progress closes its
// listener and cuts every connection off as the drain timeout does (the
// handlers' tasks and request contexts are cancelled, the connections
// closed), then returns http.ErrServerClosed once the connection tasks
// have ended; a later Serve returns http.ErrServerClosed at once.
// Hijacked connections are not closed. Close does not suspend nor wait
// for the Serves to return; any goroutine or task may call it. It returns
// nil.
func (s *Server) Close() error {
	s.stopAll(stopNow)
	return nil
}

// RegisterOnShutdown registers f to be called, in a goroutine of its own,
// when Shutdown is called: to tell connections that a handler took over
// (Hijack) to end, say, as net/http's does. It does not suspend.
func (s *Server) RegisterOnShutdown(f func()) {
	s.mu.Lock()
	s.onShutdown = append(s.onShutdown, f)
	s.mu.Unlock()
}

// The causes of a cut-off request's context.
var (
	errDrainTimeout = errors.New("whttp: server stopped: drain timeout")
	errServerClose  = errors.New("whttp: server stopped: Close")
)

func isCancellation(err error) bool { return errors.Is(err, context.Canceled) }

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
