package whttp

// Blocking: a standard http.Handler that may block (net/http/pprof's
// profile, http.TimeoutHandler, handlers that call blocking clients) run
// on a goroutine of its own through weft.Blocking, so that the other
// connections of its loop go on.
//
// The response writer and request body the handler gets are proxies: each
// operation that must reach the connection (a write that fills the proxy's
// buffer, a flush, a body read, the handler's end) is handed to the
// connection's task over a weft channel, which the task serves while the
// handler runs, and the handler's goroutine waits for the task's answer.
// So the connection's writer and reader are used by its own task only, as
// always; a slow client holds back the handler's writes (back-pressure);
// and the connection's task waits for the handler without blocking its
// loop. Small writes are gathered in the proxy (up to blockingBufSize)
// into one hand-over, as the connection's own buffered writer would.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weft-go/weft"
)

// blockingBufSize is how much of a blocking handler's body the proxy
// gathers before it hands it to the connection's task.
const blockingBufSize = 4 << 10

// Blocking returns a Handler that runs the standard handler h on a
// goroutine of its own, through weft.Blocking, while the connection's task
// waits for it without blocking its loop: use it for handlers that block
// (net/http/pprof, http.TimeoutHandler, code that calls a blocking
// database client). For handlers that do not block, Adapt is cheaper.
// Blocking does not suspend; the Handler suspends the connection's task
// until h returns, even when the connection is cut off (below).
//
// h gets a request whose body, and an http.ResponseWriter whose writes,
// reach the connection through its task: writes are gathered in a 4 KB
// buffer and then wait for the connection to take them (a slow client
// slows the handler down, nothing piles up in memory); Flush (http.Flusher,
// and http.ResponseController's FlushError, SetReadDeadline and
// SetWriteDeadline) sends what is written. As with net/http, the header
// is fixed when h calls WriteHeader or first writes, except for
// trailers, and the response ends when h returns, however much of it h
// wrote or of the body it read. h may write from any goroutine, one at a
// time, until it returns. h may take the connection over (http.Hijacker,
// http.ResponseController's Hijack): the net.Conn it gets works from any
// goroutine, so a WebSocket library's reader and writer goroutines run as
// under net/http (see the package doc, Hijacking).
//
// The request's context carries the request's values and is done when the
// request's is (the client went away, the server cut the connection off)
// or the connection's task is cancelled; TaskOf returns nil for it, since
// h must not use the task. If the connection is cut off while h runs, its
// writes and reads fail from then on, and the connection's task still
// waits for h to return. A panic in h is handled as a panic in any
// handler (logged, a 500 if nothing was sent, the connection closed;
// http.ErrAbortHandler silently).
func Blocking(h http.Handler) Handler {
	if h == nil {
		panic("whttp: Blocking called with a nil handler")
	}
	return blockingHandler{h: h}
}

type blockingHandler struct{ h http.Handler }

// errCutOff is what a blocking handler's writes and reads return once the
// connection's task has stopped serving them.
var errCutOff = errors.New("whttp: the response was cut off (the connection's task was cancelled)")

// ServeHTTP runs the handler on its goroutine and serves its operations
// on w and r.Body until it returns. It suspends t throughout.
func (b blockingHandler) ServeHTTP(t *weft.Task, w http.ResponseWriter, r *http.Request) {
	px := newBlockingProxy(w, r)
	px.h, px.req = b.h, r
	// The closures below reach r only through px, which forgets it when
	// the handler has returned: a finished task's or goroutine's last
	// closure may stay reachable for a while (a pooled coroutine or
	// goroutine), and must not keep the request, which the server reuses
	// (and, under -race, checks is unreachable).
	var panicked any
	err := weft.Group(t, func(g *weft.TaskGroup) error {
		g.Go(px.runTask)
		panicked = px.serve(t)
		return nil
	})
	px.h, px.req = nil, nil
	if panicked != nil {
		panic(panicked)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		panic(err) // the handler's goroutine failed outside the handler (a misuse)
	}
}

// blockingProxy is a blocking handler's side of its connection.
type blockingProxy struct {
	// The connection's task's, used by serve only.
	w    http.ResponseWriter
	body io.ReadCloser // nil: no body

	// The handler and its request, until it has returned.
	h   http.Handler
	req *http.Request

	ops   *weft.Chan[*blockingOp]
	reply chan struct{} // capacity 1: the task has carried out the op handed over

	// The handler's side: one operation at a time, under mu.
	mu          sync.Mutex
	op          blockingOp
	hdr         http.Header
	status      int         // set by WriteHeader
	snap        http.Header // the header as WriteHeader found it
	wroteHeader bool        // WriteHeader was called (or implied)
	headerSent  bool        // ... and handed to the task with the status
	declared    []string
	cl          int64 // the declared Content-Length, -1 if none
	written     int64
	buf         []byte
	bodyClosed  bool
	hijacked    bool // Hijack succeeded: the connection is the handler's
	ended       bool
	cutErr      error // the task no longer serves operations
}

type blockingOpKind uint8

const (
	opWrite   blockingOpKind = iota // status and header if not sent yet, data, more, flush
	opInfo                          // a 1xx response: status and header
	opRead                          // read the body into p
	opReadDL                        // set the read deadline to dl
	opWriteDL                       // set the write deadline to dl
	opHijack                        // status and header if not sent yet, data, then Hijack
	opEnd                           // the handler returned (or panicked: panicked)
)

// blockingOp is one operation handed to the connection's task, with its
// results.
type blockingOp struct {
	kind     blockingOpKind
	status   int
	hdr      http.Header
	data     []byte
	more     []byte
	flush    bool
	p        []byte
	dl       time.Time
	panicked any
	trailers http.Header
	n        int
	err      error
	nc       net.Conn          // opHijack's
	brw      *bufio.ReadWriter // opHijack's
}

func newBlockingProxy(w http.ResponseWriter, r *http.Request) *blockingProxy {
	px := &blockingProxy{
		w:     w,
		ops:   weft.NewChan[*blockingOp](0),
		reply: make(chan struct{}, 1),
		hdr:   w.Header().Clone(),
		cl:    -1,
	}
	if r.Body != nil && r.Body != http.NoBody {
		px.body = r.Body
	}
	return px
}

// runTask is the task that runs the handler through weft.Blocking.
func (px *blockingProxy) runTask(t *weft.Task) error {
	_, err := weft.Blocking(t, px.runBlocking)
	return err
}

func (px *blockingProxy) runBlocking(ctx context.Context) (struct{}, error) {
	px.run(ctx, px.h, px.req)
	return struct{}{}, nil
}

// run calls h on the handler's goroutine, then tells the task it ended.
func (px *blockingProxy) run(ctx context.Context, h http.Handler, r *http.Request) {
	// The request's context, done also when ctx is (the connection's task
	// is cancelled), and without the task.
	rctx, cancel := context.WithCancelCause(context.WithValue(r.Context(), taskKey{}, (*weft.Task)(nil)))
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer func() {
		stop()
		cancel(context.Canceled)
	}()
	r2 := r.WithContext(rctx)
	if px.body != nil {
		r2.Body = proxyBody{px}
	}
	var panicked any
	func() {
		defer func() {
			if v := recover(); v != nil {
				panicked = v
				if v != http.ErrAbortHandler {
					panicked = &handlerPanic{value: v, stack: debug.Stack()}
				}
			}
		}()
		h.ServeHTTP(px, r2)
	}()
	px.end(panicked)
}

// handlerPanic is a blocking handler's panic, raised again in the
// connection's task, with the stack of the handler's goroutine.
type handlerPanic struct {
	value any
	stack []byte
}

func (p *handlerPanic) Error() string {
	return fmt.Sprintf("%v\n\n[in a handler run by whttp.Blocking, on its goroutine:]\n%s", p.value, p.stack)
}

func (p *handlerPanic) Unwrap() error {
	err, _ := p.value.(error)
	return err
}

// serve carries out the handler's operations in the connection's task t
// until the handler ends, and returns the handler's panic, if any. If t is
// cancelled it stops: the handler's operations fail from then on.
func (px *blockingProxy) serve(t *weft.Task) (panicked any) {
	for {
		op, err := px.ops.Recv(t)
		if err != nil {
			px.ops.Close()
			// A send that the cancelled Recv was handed went back into the
			// channel: answer it, so that the handler does not wait for ever.
			for {
				op, ok := px.ops.TryRecv()
				if !ok {
					return nil
				}
				op.err = errCutOff
				px.reply <- struct{}{}
			}
		}
		end := op.kind == opEnd
		px.carryOut(op)
		px.reply <- struct{}{}
		if end {
			return op.panicked
		}
	}
}

// carryOut does op on the connection, in its task.
func (px *blockingProxy) carryOut(op *blockingOp) {
	w := px.w
	if op.hdr != nil {
		h := w.Header()
		clear(h)
		for k, v := range op.hdr {
			h[k] = v
		}
	}
	switch op.kind {
	case opInfo:
		w.WriteHeader(op.status)
		return
	case opRead:
		op.n, op.err = px.body.Read(op.p)
		return
	case opReadDL, opWriteDL:
		rc := http.NewResponseController(w)
		if op.kind == opReadDL {
			op.err = rc.SetReadDeadline(op.dl)
		} else {
			op.err = rc.SetWriteDeadline(op.dl)
		}
		return
	}
	if op.status != 0 {
		w.WriteHeader(op.status)
	}
	for _, b := range [2][]byte{op.data, op.more} {
		if len(b) > 0 && op.err == nil {
			_, op.err = w.Write(b)
		}
	}
	if op.kind == opHijack {
		if op.err == nil {
			op.nc, op.brw, op.err = http.NewResponseController(w).Hijack()
		}
		return
	}
	if op.flush && op.err == nil {
		if f, ok := w.(interface{ FlushError() error }); ok {
			op.err = f.FlushError()
		} else if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	if op.kind == opEnd {
		for k, v := range op.trailers {
			w.Header()[k] = v
		}
		if px.body != nil {
			px.body.Close()
		}
	}
}

// do hands op to the connection's task and waits until it is carried out.
// mu is held.
func (px *blockingProxy) do(op *blockingOp) {
	if px.cutErr != nil {
		op.err = px.cutErr
		return
	}
	if err := px.ops.SendWait(context.Background(), op); err != nil {
		px.cutErr = errCutOff
		op.err = px.cutErr
		return
	}
	<-px.reply
	if op.err == errCutOff {
		px.cutErr = errCutOff
	}
}

// newOp returns the proxy's operation record, cleared, for kind. mu is held.
func (px *blockingProxy) newOp(kind blockingOpKind) *blockingOp {
	px.op = blockingOp{kind: kind}
	return &px.op
}

// Header returns the response header (http.ResponseWriter): changes after
// WriteHeader or the first Write have no effect, except to trailers.
func (px *blockingProxy) Header() http.Header { return px.hdr }

// WriteHeader sets the status code, as http.ResponseWriter's: a 1xx code
// other than 101 is sent at once; codes outside 100..999 panic.
func (px *blockingProxy) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.ended || px.wroteHeader || px.hijacked {
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		op := px.newOp(opInfo)
		op.status, op.hdr = code, px.hdr.Clone()
		px.do(op)
		return
	}
	px.writeHeaderLocked(code)
}

func (px *blockingProxy) writeHeaderLocked(code int) {
	px.wroteHeader = true
	px.status = code
	px.snap = px.hdr.Clone()
	if cl := px.snap.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			px.cl = n
		}
	}
	for _, v := range px.snap["Trailer"] {
		for k := range strings.SplitSeq(v, ",") {
			if k = http.CanonicalHeaderKey(strings.TrimSpace(k)); k != "" {
				px.declared = append(px.declared, k)
			}
		}
	}
}

// Write writes body bytes (http.ResponseWriter). They are gathered, then
// handed to the connection, waiting while the client is slow. As
// net/http's: http.ErrBodyNotAllowed for a status without a body,
// http.ErrContentLength past a declared length, and an error of the
// connection may show at a later Write or Flush.
func (px *blockingProxy) Write(p []byte) (int, error) {
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.ended {
		return 0, errWriteAfterHandler
	}
	if px.hijacked {
		return 0, http.ErrHijacked
	}
	if !px.wroteHeader {
		px.writeHeaderLocked(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(px.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if px.cl >= 0 && px.written+int64(len(p)) > px.cl {
		return 0, http.ErrContentLength
	}
	if px.cutErr != nil {
		return 0, px.cutErr
	}
	px.written += int64(len(p))
	if len(px.buf)+len(p) <= blockingBufSize {
		if px.buf == nil {
			px.buf = make([]byte, 0, blockingBufSize)
		}
		px.buf = append(px.buf, p...)
		return len(p), nil
	}
	op := px.writeOp(opWrite)
	op.more = p
	px.do(op)
	px.buf = px.buf[:0]
	if op.err != nil {
		return 0, op.err
	}
	return len(p), nil
}

// writeOp returns an operation that carries the status and header if
// they have not gone yet, and the gathered body. mu is held.
func (px *blockingProxy) writeOp(kind blockingOpKind) *blockingOp {
	op := px.newOp(kind)
	if px.wroteHeader && !px.headerSent {
		px.headerSent = true
		op.status, op.hdr = px.status, px.snap
	}
	op.data = px.buf
	return op
}

// Flush sends what is written so far (http.Flusher).
func (px *blockingProxy) Flush() { px.FlushError() }

// FlushError is Flush, returning the connection's error, for
// http.ResponseController.
func (px *blockingProxy) FlushError() error {
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.ended {
		return errWriteAfterHandler
	}
	if px.hijacked {
		return http.ErrHijacked
	}
	if !px.wroteHeader {
		px.writeHeaderLocked(http.StatusOK)
	}
	op := px.writeOp(opWrite)
	op.flush = true
	px.do(op)
	px.buf = px.buf[:0]
	return op.err
}

// SetReadDeadline sets the connection's read deadline, for
// http.ResponseController.
func (px *blockingProxy) SetReadDeadline(d time.Time) error { return px.deadline(opReadDL, d) }

// SetWriteDeadline sets the connection's write deadline, for
// http.ResponseController.
func (px *blockingProxy) SetWriteDeadline(d time.Time) error { return px.deadline(opWriteDL, d) }

// Hijack takes the connection over (http.Hijacker, and through
// http.ResponseController), as Hijack does for a handler on a task (see
// the package doc, Hijacking): the status and header set with WriteHeader
// and what was written go out first, then the connection is the
// handler's. The net.Conn may be used from any goroutine (and any task
// of the Run); the bufio.ReadWriter's Reader holds what the client sent
// past the request head. It blocks the handler's goroutine while the
// connection's task hands the connection over. Later writes, and a second
// Hijack, return http.ErrHijacked. The connection's task then waits for
// the handler to return; when the server stops (after its drain), the
// request's context is cancelled, and Serve waits for the handler to
// return: a hijacking handler run by Blocking must end when r.Context()
// is done.
func (px *blockingProxy) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.ended {
		return nil, nil, errWriteAfterHandler
	}
	if px.hijacked {
		return nil, nil, http.ErrHijacked
	}
	op := px.writeOp(opHijack)
	px.do(op)
	px.buf = px.buf[:0]
	if op.err != nil {
		return nil, nil, op.err
	}
	px.hijacked = true
	return op.nc, op.brw, nil
}

// EnableFullDuplex does nothing and returns nil, for
// http.ResponseController: the body may always be read after the response
// has begun.
func (px *blockingProxy) EnableFullDuplex() error { return nil }

func (px *blockingProxy) deadline(kind blockingOpKind, d time.Time) error {
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.ended {
		return errWriteAfterHandler
	}
	if px.hijacked {
		return http.ErrHijacked
	}
	op := px.newOp(kind)
	op.dl = d
	px.do(op)
	return op.err
}

// end tells the connection's task that the handler returned (or panicked),
// with what it wrote and its trailers.
func (px *blockingProxy) end(panicked any) {
	px.mu.Lock()
	defer px.mu.Unlock()
	var op *blockingOp
	if panicked != nil || px.hijacked {
		// Nothing more goes out: the server answers a panic; a hijacked
		// connection is the handler's.
		op = px.newOp(opEnd)
	} else {
		op = px.writeOp(opEnd)
		if !px.wroteHeader {
			op.hdr = px.hdr.Clone() // the handler wrote nothing: a 200 with this header
		}
		for k, v := range px.hdr {
			if strings.HasPrefix(k, http.TrailerPrefix) || slices.Contains(px.declared, k) {
				if op.trailers == nil {
					op.trailers = make(http.Header)
				}
				op.trailers[k] = slices.Clone(v)
			}
		}
	}
	op.panicked = panicked
	px.do(op)
	px.ended = true
	px.buf = nil
}

// proxyBody is the request body a blocking handler reads: each read is
// handed to the connection's task.
type proxyBody struct{ px *blockingProxy }

func (b proxyBody) Read(p []byte) (int, error) {
	px := b.px
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.ended || px.bodyClosed {
		return 0, http.ErrBodyReadAfterClose
	}
	if len(p) == 0 {
		return 0, nil
	}
	op := px.newOp(opRead)
	op.p = p
	px.do(op)
	return op.n, op.err
}

// Close marks the body closed; what the handler left unread is read out
// by the server after the handler returns, as for any handler.
func (b proxyBody) Close() error {
	b.px.mu.Lock()
	b.px.bodyClosed = true
	b.px.mu.Unlock()
	return nil
}

// BlockingCall runs f through weft.Blocking in the task serving r
// (TaskOf(r)), with a context that carries r.Context()'s values and
// deadline and is done when r.Context() is (a deadline that middleware
// set, such as chi's Timeout or http.TimeoutHandler's, the client gone,
// the end of the request) or when the task is cancelled, whichever comes
// first (context.Cause says which). Use it rather than weft.Blocking in a
// handler, so that the request's deadline reaches the blocking call (a
// database query) as it would under net/http; weft.Blocking's own context
// is the task's, which knows nothing of r.Context().
//
// It suspends the task as weft.Blocking does, and returns what f
// returned; a task already cancelled returns the cause (matching
// context.Canceled) and f does not run. f runs on a goroutine of its own
// and must not use the task, w or r.Body. r must be a request a Server
// handed to a handler running on a task (directly, through Adapt, or a
// copy made with WithContext or Clone); otherwise, and in a handler run
// by Blocking (whose code already runs on a goroutine of its own: call
// the blocking code directly, with r.Context()), BlockingCall panics.
func BlockingCall[T any](r *http.Request, f func(ctx context.Context) (T, error)) (T, error) {
	t := TaskOf(r)
	if t == nil {
		panic("whttp: BlockingCall: r is not served on a task (TaskOf(r) is nil); in a handler run by Blocking, call the blocking code directly")
	}
	rctx := r.Context()
	return weft.Blocking(t, func(tctx context.Context) (T, error) {
		ctx, cancel := context.WithCancelCause(rctx)
		stop := context.AfterFunc(tctx, func() { cancel(context.Cause(tctx)) })
		defer func() {
			stop()
			cancel(context.Canceled)
		}()
		return f(ctx)
	})
}
