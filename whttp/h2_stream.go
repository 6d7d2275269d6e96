package whttp

// An HTTP/2 stream: its request, built from the HEADERS block; its task,
// which runs the handler; its body, fed by the reader; and its response,
// handed to the writer. The stream is the request's context too (its
// Done ends when the peer resets the stream, the connection goes, or the
// handler returns).
//
// As on the HTTP/1.1 path (reuse.go), the stream is the one object
// allocated for every request: it is the ResponseWriter and the
// context, and stays valid for what they promise after the request
// ends. The *http.Request, its URL and header, the response's header and
// the stream's buffers are an h2State, taken from a pool as the stream
// opens and given back once the handler has returned and the writer is
// done with the stream (h2Conn.releaseLocked); with the retention check
// on (reuse.go) nothing is pooled and retire writes over them as the
// handler returns.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Stream is one stream. Fields marked mu are guarded by h.mu.
type h2Stream struct {
	h    *h2Conn
	id   uint32
	req  *http.Request
	rw   h2Response
	t    *weft.Task              // the handler's task, once it runs
	task *weft.Promise[struct{}] // mu
	wake *weft.Chan[struct{}]    // wakes the handler's task
	st   *h2State                // mu: the reused parts, until released
	body *h2Body                 // the request's body, nil if none

	// The context costs nothing until it is asked to wait: the first
	// Done makes a context.WithCancelCause of the connection's base
	// context, which the end of the stream cancels.
	real     context.Context         // mu
	cancel   context.CancelCauseFunc // mu
	ended    bool                    // mu: the context ended
	endCause error                   // mu: why
	cause    error                   // mu: why the stream was reset

	handlerEnded bool // mu: the handler's task is done with the state

	reset        bool  // mu: reset (by either side) or the connection died
	remoteClosed bool  // mu: the peer ended its side
	localClosed  bool  // mu: END_STREAM sent
	queued       bool  // mu: in h.ready
	declLen      int64 // content-length, -1 if none
	gotLen       int64 // mu: body bytes received
	readDL       int64 // mu: the body's deadline (UnixNano), 0 if none
	writeDL      int64 // mu: the response's deadline, 0 if none
	readErr      error // mu: the body's deadline passed

	// The request body.
	in         []byte // mu: received, not read
	recvWin    int32  // mu: what the peer may still send
	recvOwed   int32  // mu: stream credit to give back
	connUnpaid int64  // mu: bytes of in whose connection credit is held
	bodyClosed bool   // mu
	expect100  bool
	sent100    bool

	// The response, queued for the writer.
	hdrs     []h2Headers         // mu
	out      []byte              // mu
	outOff   int                 // mu
	outEnd   bool                // mu: the handler is done
	trailers []hpack.HeaderField // mu
	sendWin  int64               // mu
	hdrsArr  [2]h2Headers        // hdrs' first storage
}

// h2State is what a stream reuses of earlier streams (see above).
type h2State struct {
	req    http.Request
	url    url.URL
	hdr    http.Header
	alloc  headAlloc
	rhdr   http.Header
	fields []hpack.HeaderField // the response's header block
	buf    []byte              // h2Response.buf
	out    []byte              // h2Stream.out
}

var h2StatePool sync.Pool

// getH2State returns a state for a new stream: a pooled one, or a new
// one with the retention check on.
func getH2State() *h2State {
	if checkRetention {
		return new(h2State)
	}
	st, _ := h2StatePool.Get().(*h2State)
	if st == nil {
		st = new(h2State)
	}
	return st
}

// reusedHeader returns m emptied, or a new map.
func reusedHeader(m http.Header, n int) http.Header {
	if m == nil || len(m) > 64 {
		return make(http.Header, n)
	}
	clear(m)
	return m
}

// releaseLocked gives s's state back to the pool once nothing uses it
// any more: the handler returned, the writer does not hold s, and s left
// the connection's streams (so the reader does not find it); mu held.
func (h *h2Conn) releaseLocked(s *h2Stream) {
	st := s.st
	if st == nil || !s.handlerEnded || s.queued || h.streams[s.id] == s {
		return
	}
	s.st = nil
	if checkRetention {
		return
	}
	if cap(s.rw.buf) <= 2*h2ResponseBuf {
		st.buf = s.rw.buf[:0]
	}
	if cap(s.out) <= h2StreamOutBuf {
		st.out = s.out[:0]
	}
	s.rw.buf, s.out, s.outOff, s.hdrs = nil, nil, 0, nil
	s.rw.header = nil
	s.req = nil
	st.req = http.Request{}
	h2StatePool.Put(st)
}

// h2Headers is one header block queued for the writer.
type h2Headers struct {
	fields []hpack.HeaderField
	end    bool
}

// signal wakes the stream's handler task if it waits; mu held.
func (s *h2Stream) signal() {
	if s.wake != nil {
		s.wake.TrySend(struct{}{})
	}
}

// waker returns the channel the handler's task waits on; mu held.
func (s *h2Stream) waker() *weft.Chan[struct{}] {
	if s.wake == nil {
		s.wake = weft.NewChan[struct{}](1)
	}
	return s.wake
}

// endCtxLocked ends the stream's context; mu held.
func (s *h2Stream) endCtxLocked(cause error) {
	if s.ended {
		return
	}
	s.ended, s.endCause = true, cause
	if s.cancel != nil {
		s.cancel(cause)
	}
}

// hasOutput reports whether the writer has something of s to send now;
// mu held.
func (s *h2Stream) hasOutput() bool {
	if s.reset {
		return false
	}
	if len(s.hdrs) > 0 {
		return true
	}
	if len(s.out) > s.outOff {
		return s.sendWin > 0 && s.h.sendWin > 0
	}
	return s.outEnd && !s.localClosed
}

// cancelLocked ends s's context and task with cause; mu held.
func (s *h2Stream) cancelLocked(cause error) {
	if s.cause == nil {
		s.cause = cause
	}
	s.endCtxLocked(cause)
	if s.task != nil {
		s.task.CancelWithCause(cause)
	}
	s.signal()
}

// abort ends s as its connection goes.
func (s *h2Stream) abort(cause error) {
	h := s.h
	h.mu.Lock()
	s.reset = true
	h.releaseInLocked(s)
	s.cancelLocked(cause)
	h.mu.Unlock()
}

// newStream makes the stream of a HEADERS block, or says which stream
// error refuses it; mu held.
func (h *h2Conn) newStream(id uint32, f *http2.MetaHeadersFrame) (*h2Stream, http2.ErrCode) {
	var method, scheme, authority, path string
	for _, hf := range f.PseudoFields() {
		switch hf.Name {
		case ":method":
			method = hf.Value
		case ":scheme":
			scheme = hf.Value
		case ":authority":
			authority = hf.Value
		case ":path":
			path = hf.Value
		case ":protocol":
			return nil, http2.ErrCodeProtocol // extended CONNECT not offered
		default:
			return nil, http2.ErrCodeProtocol
		}
	}
	if method == "" {
		return nil, http2.ErrCodeProtocol
	}
	if method == http.MethodConnect {
		if scheme != "" || path != "" || authority == "" {
			return nil, http2.ErrCodeProtocol
		}
	} else if scheme == "" || path == "" || !(path[0] == '/' || path == "*" && method == http.MethodOptions) {
		return nil, http2.ErrCodeProtocol
	}
	st := getH2State()
	st.hdr = reusedHeader(st.hdr, len(f.Fields))
	clear(st.alloc.vals)
	st.alloc.vals = st.alloc.vals[:0]
	hdr := st.hdr
	var cookies []string
	declLen := int64(-1)
	for _, hf := range f.RegularFields() {
		switch hf.Name {
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			return nil, http2.ErrCodeProtocol
		case "te":
			if hf.Value != "trailers" {
				return nil, http2.ErrCodeProtocol
			}
		case "cookie":
			cookies = append(cookies, hf.Value)
			continue
		case "content-length":
			n, err := strconv.ParseUint(hf.Value, 10, 63)
			if err != nil || declLen >= 0 && int64(n) != declLen {
				return nil, http2.ErrCodeProtocol
			}
			declLen = int64(n)
		}
		k := canonicalHeader(hf.Name)
		if vv := hdr[k]; vv != nil {
			hdr[k] = append(vv, hf.Value)
		} else {
			hdr[k] = st.alloc.value(hf.Value)
		}
	}
	if len(cookies) > 0 {
		hdr["Cookie"] = []string{strings.Join(cookies, "; ")}
	}
	if authority == "" {
		authority = hdr.Get("Host")
	}
	u := &st.url
	if method == http.MethodConnect {
		*u = url.URL{Host: authority}
		path = authority
	} else if path == "*" {
		*u = url.URL{Path: "*"}
	} else {
		var err error
		if u, err = parseTarget(u, method, path); err != nil {
			return nil, http2.ErrCodeProtocol
		}
	}
	s := &h2Stream{
		h:       h,
		id:      id,
		st:      st,
		declLen: declLen,
		recvWin: h.cfg.streamWin,
		sendWin: int64(h.peerInitWin),
		out:     st.out[:0],
	}
	s.hdrs = s.hdrsArr[:0]
	req := &st.req
	*req = http.Request{
		Method:     method,
		URL:        u,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Header:     hdr,
		Host:       authority,
		RemoteAddr: h.c.remote,
		RequestURI: path,
		TLS:        h.tls,
	}
	if f.StreamEnded() {
		if declLen > 0 {
			return nil, http2.ErrCodeProtocol
		}
		req.Body = http.NoBody
	} else {
		req.ContentLength = declLen
		s.body = &h2Body{s: s}
		req.Body = s.body
		if vv := hdr["Trailer"]; len(vv) > 0 {
			req.Trailer = make(http.Header)
			for _, v := range vv {
				for _, k := range strings.Split(v, ",") {
					k = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k))
					switch k {
					case "Transfer-Encoding", "Trailer", "Content-Length":
						return nil, http2.ErrCodeProtocol
					}
					if k != "" {
						req.Trailer[k] = nil
					}
				}
			}
			delete(hdr, "Trailer")
		}
		s.expect100 = strings.EqualFold(hdr.Get("Expect"), "100-continue")
	}
	if f.Truncated {
		s.rw.status431 = true
	}
	s.req = setContext(req, s)
	s.rw.s = s
	st.rhdr = reusedHeader(st.rhdr, 4)
	s.rw.header = st.rhdr
	s.rw.buf = st.buf[:0]
	return s, http2.ErrCodeNo
}

// setTrailer fills the request's trailer from a trailing HEADERS block;
// mu held. Once the handler has returned, no one can read it.
func (s *h2Stream) setTrailer(fields []hpack.HeaderField) {
	if s.handlerEnded {
		return
	}
	if s.req.Trailer == nil {
		s.req.Trailer = make(http.Header)
	}
	for _, hf := range fields {
		k := textproto.CanonicalMIMEHeaderKey(hf.Name)
		s.req.Trailer[k] = append(s.req.Trailer[k], hf.Value)
	}
}

// The stream as the request's context: its values are the connection's
// and the task's (TaskOf).
func (s *h2Stream) Deadline() (time.Time, bool) { return s.h.reqContext().Deadline() }

// Done returns a channel closed when the stream ends (see h2Stream).
func (s *h2Stream) Done() <-chan struct{} {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.realLocked().Done()
}

// realLocked returns the stream's real context, made now if need be;
// mu held.
func (s *h2Stream) realLocked() context.Context {
	if s.real == nil {
		s.real, s.cancel = context.WithCancelCause(s.h.reqContext())
		if s.ended {
			s.cancel(s.endCause)
		}
	}
	return s.real
}

// Err returns nil while the stream runs, then context.Canceled (or the
// base context's error, if that ended first).
func (s *h2Stream) Err() error {
	h := s.h
	h.mu.Lock()
	switch {
	case s.real != nil:
		h.mu.Unlock()
		return s.real.Err()
	case s.ended:
		h.mu.Unlock()
		return context.Canceled
	}
	h.mu.Unlock()
	return h.reqContext().Err()
}

// Value returns the handler's task for TaskOf, the server for
// http.ServerContextKey, and otherwise the base context's values; once
// the stream has ended, or a Done made it, the real context answers
// (context.Cause finds the cause through it).
func (s *h2Stream) Value(key any) any {
	if _, ok := key.(taskKey); ok {
		return s.t
	}
	if key == http.ServerContextKey {
		return s.h.sv.s
	}
	h := s.h
	h.mu.Lock()
	real := s.real
	if real == nil && s.ended {
		real = s.realLocked()
	}
	h.mu.Unlock()
	if real != nil {
		return real.Value(key)
	}
	return h.reqContext().Value(key)
}

// run is the stream's task: it runs the handler and finishes the
// response.
func (s *h2Stream) run(t *weft.Task) (struct{}, error) {
	h := s.h
	s.t = t
	defer h.handlerDone()
	defer func() {
		h.mu.Lock()
		s.endCtxLocked(context.Canceled)
		s.handlerEnded = true
		h.releaseLocked(s)
		h.mu.Unlock()
	}()
	func() {
		defer func() {
			if r := recover(); r != nil {
				h.logPanic(r, s.req)
				h.mu.Lock()
				if !s.reset {
					h.resetLocked(s, http2.ErrCodeInternal, errH2StreamReset)
				}
				h.mu.Unlock()
				h.wakeWriter()
			}
		}()
		if s.rw.status431 {
			s.rw.WriteHeader(http.StatusRequestHeaderFieldsTooLarge)
		} else if s.req.RequestURI == "*" && s.req.Method == http.MethodOptions {
			serveOptionsStar(&s.rw, s.req)
		} else {
			h.sv.handler.ServeHTTP(t, &s.rw, s.req)
		}
		s.rw.finish(t)
	}()
	s.rw.done = true
	if s.body != nil {
		s.body.Close()
	}
	retire(s.req, s.rw.header)
	return struct{}{}, nil
}

// streamErr is what the handler's reads and writes return once s is
// reset or its connection gone.
func (s *h2Stream) streamErr() error {
	if s.cause != nil {
		return s.cause
	}
	return errH2StreamReset
}

// h2Body is a request's body.
type h2Body struct {
	s      *h2Stream
	closed bool
}

// Read suspends the stream's task until body bytes come.
func (b *h2Body) Read(p []byte) (int, error) {
	s := b.s
	h := s.h
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if s.expect100 && !s.sent100 {
		s.sent100 = true
		h.mu.Lock()
		if !s.rw.committed && !s.reset {
			s.hdrs = append(s.hdrs, h2Headers{fields: []hpack.HeaderField{{Name: ":status", Value: "100"}}})
			h.readyLocked(s)
		}
		h.mu.Unlock()
		h.wakeWriter()
	}
	for {
		h.mu.Lock()
		if n := copy(p, s.in); n > 0 {
			s.in = s.in[n:]
			if len(s.in) == 0 {
				s.in = nil
			}
			h.held -= int64(n)
			pay := min(int64(n), s.connUnpaid)
			s.connUnpaid -= pay
			h.recvOwed += pay
			wake := pay > 0
			if !s.remoteClosed {
				s.recvOwed += int32(n)
				if s.recvOwed >= h.cfg.streamWin/2 || s.recvOwed >= 64<<10 {
					h.ctl = append(h.ctl, h2Ctl{kind: ctlWindow, id: s.id, n: uint32(s.recvOwed)})
					s.recvWin += s.recvOwed
					s.recvOwed = 0
					wake = true
				}
			}
			h.mu.Unlock()
			if wake {
				h.wakeWriter()
			}
			return n, nil
		}
		if s.reset {
			err := s.streamErr()
			h.mu.Unlock()
			return 0, err
		}
		if s.readErr != nil {
			err := s.readErr
			h.mu.Unlock()
			return 0, err
		}
		if s.remoteClosed {
			h.mu.Unlock()
			return 0, io.EOF
		}
		w := s.waker()
		h.mu.Unlock()
		if s.t == nil {
			panic("weft: whttp: an HTTP/2 request body read outside its handler's task")
		}
		if _, err := w.Recv(s.t); err != nil {
			return 0, err
		}
	}
}

// Close drops what is unread; later data is discarded as it comes.
func (b *h2Body) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	s := b.s
	h := s.h
	h.mu.Lock()
	s.bodyClosed = true
	h.releaseInLocked(s)
	h.mu.Unlock()
	h.wakeWriter()
	return nil
}

// h2Response is a stream's ResponseWriter. Before the header goes out,
// writes gather in buf (up to h2ResponseBuf), so that a small response is
// sent as one HEADERS and one DATA frame with its Content-Length.
type h2Response struct {
	s           *h2Stream
	header      http.Header
	status      int
	wroteHeader bool
	committed   bool
	done        bool
	status431   bool
	buf         []byte
	clen        int64 // declared Content-Length, -1 if none
	written     int64
	trailerKeys []string
}

const h2ResponseBuf = 4 << 10

var errH2HandlerDone = errors.New("whttp: http2: response used after the handler returned")

// Header returns the response header; after the handler returned, a
// throwaway one (the header is reused).
func (w *h2Response) Header() http.Header {
	if w.done {
		return http.Header{}
	}
	return w.header
}

// WriteHeader sends an informational (1xx) header at once; a final one
// is sent with the first flush or write past the buffer, or at the end.
func (w *h2Response) WriteHeader(code int) {
	if w.done || w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic("weft: whttp: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		fields := []hpack.HeaderField{{Name: ":status", Value: strconv.Itoa(code)}}
		fields = appendFields(fields, w.header, nil)
		w.s.queueHeaders(fields, false)
		return
	}
	w.wroteHeader = true
	w.status = code
	w.clen = -1
	if v := w.header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			w.clen = n
		} else {
			delete(w.header, "Content-Length")
		}
	}
	for _, v := range w.header["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			if k = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k)); k != "" {
				w.trailerKeys = append(w.trailerKeys, k)
			}
		}
	}
}

func (w *h2Response) bodyAllowed() bool {
	return bodyAllowed(w.status) && w.s.req.Method != http.MethodHead
}

// Write suspends the stream's task while the writer has a full buffer of
// the stream's to send (the peer's window closed, or a slow reader).
func (w *h2Response) Write(p []byte) (int, error) {
	if w.done {
		return 0, errH2HandlerDone
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.clen >= 0 && w.written+int64(len(p)) > w.clen {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.s.req.Method == http.MethodHead {
		return len(p), nil
	}
	if !w.committed && len(w.buf)+len(p) <= h2ResponseBuf {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if err := w.commit(p, false, -1); err != nil {
		return 0, err
	}
	if err := w.s.queueData(w.buf); err != nil {
		return 0, err
	}
	w.buf = w.buf[:0]
	if err := w.s.queueData(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *h2Response) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Flush sends the header and what is written so far.
func (w *h2Response) Flush() { w.FlushError() }

// FlushError sends the header and what is written so far; it does not
// wait for the peer to read them.
func (w *h2Response) FlushError() error {
	if w.done {
		return errH2HandlerDone
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if err := w.commit(nil, false, -1); err != nil {
		return err
	}
	if len(w.buf) > 0 {
		err := w.s.queueData(w.buf)
		w.buf = w.buf[:0]
		return err
	}
	return nil
}

// EnableFullDuplex does nothing: HTTP/2 is full duplex.
func (w *h2Response) EnableFullDuplex() error { return nil }

// SetReadDeadline sets the deadline of the stream's request body (for
// http.ResponseController), replacing Server.ReadTimeout's; the zero
// time means none. Past it, body reads fail with an error matching
// os.ErrDeadlineExceeded.
func (w *h2Response) SetReadDeadline(d time.Time) error {
	return w.setDeadline(d, func(s *h2Stream, dl int64) { s.readDL = dl })
}

// SetWriteDeadline sets the deadline of the stream's response (for
// http.ResponseController), replacing Server.WriteTimeout's; the zero
// time means none. Past it, the stream is reset and the handler's
// context cancelled, with an error matching os.ErrDeadlineExceeded.
func (w *h2Response) SetWriteDeadline(d time.Time) error {
	return w.setDeadline(d, func(s *h2Stream, dl int64) { s.writeDL = dl })
}

func (w *h2Response) setDeadline(d time.Time, set func(*h2Stream, int64)) error {
	if w.done {
		return errH2HandlerDone
	}
	s, h := w.s, w.s.h
	var dl int64
	if !d.IsZero() {
		dl = max(d.UnixNano(), 1)
	}
	h.mu.Lock()
	if s.reset || h.dead != nil {
		err := s.streamErr()
		h.mu.Unlock()
		return err
	}
	set(s, dl)
	start := h.setDeadlineLocked(dl)
	h.mu.Unlock()
	if start {
		h.g.GoDaemon(h.deadlineLoop)
	}
	return nil
}

// commit queues the final header, if not yet; more is the body's next
// bytes (for sniffing), end says the response ends with it, clen is the
// Content-Length to send (-1: none added).
func (w *h2Response) commit(more []byte, end bool, clen int) error {
	if w.committed {
		return nil
	}
	return w.s.queueHeaders(w.headerFields(more, clen), end)
}

// headerFields commits the response: it returns the final header's
// fields (see commit).
func (w *h2Response) headerFields(more []byte, clen int) []hpack.HeaderField {
	w.committed = true
	if w.s.expect100 && !w.s.sent100 {
		w.s.sent100 = true // the body is not wanted: no 100 Continue
	}
	hdr := w.header
	if w.bodyAllowed() && len(hdr["Content-Type"]) == 0 && (len(w.buf) > 0 || len(more) > 0) {
		sniff := w.buf
		if len(sniff) == 0 {
			sniff = more
		}
		hdr.Set("Content-Type", http.DetectContentType(sniff))
	}
	if clen >= 0 && len(hdr["Content-Length"]) > 0 {
		hdr.Set("Content-Length", strconv.Itoa(clen))
		clen = -1
	}
	var fields []hpack.HeaderField
	if st := w.s.st; st != nil {
		fields = st.fields[:0]
	}
	fields = append(fields, hpack.HeaderField{Name: ":status", Value: statusText(w.status)})
	fields = appendFields(fields, hdr, w.trailerKeys)
	if clen >= 0 {
		fields = append(fields, hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(clen)})
	}
	if len(hdr["Date"]) == 0 {
		fields = append(fields, hpack.HeaderField{Name: "date", Value: h2Date()})
	}
	if st := w.s.st; st != nil {
		st.fields = fields
	}
	return fields
}

// finish ends the response as the handler returns.
func (w *h2Response) finish(t *weft.Task) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	trailers := w.trailerFields()
	if !w.committed && len(w.buf) > 0 && trailers == nil {
		// A small response, whole: its header, body and end go to the
		// writer at once, so that they leave in one write.
		clen := -1
		if w.clen < 0 && w.s.req.Method != http.MethodHead {
			clen = len(w.buf)
		}
		w.s.queueWhole(w.headerFields(nil, clen), w.buf)
		w.buf = w.buf[:0]
		return
	}
	if !w.committed {
		clen := -1
		if w.clen < 0 && bodyAllowed(w.status) && trailers == nil && w.s.req.Method != http.MethodHead {
			clen = len(w.buf)
		}
		if err := w.commit(nil, len(w.buf) == 0 && trailers == nil, clen); err != nil {
			return
		}
		if len(w.buf) == 0 && trailers == nil {
			return
		}
	}
	if len(w.buf) > 0 {
		if w.s.queueData(w.buf) != nil {
			return
		}
		w.buf = w.buf[:0]
	}
	w.s.queueEnd(trailers)
}

// trailerFields returns the response's trailer: the fields Trailer
// declared and those named with http.TrailerPrefix.
func (w *h2Response) trailerFields() []hpack.HeaderField {
	var out []hpack.HeaderField
	for _, k := range w.trailerKeys {
		for _, v := range w.header[k] {
			if validTrailer(k) {
				out = append(out, hpack.HeaderField{Name: strings.ToLower(k), Value: v})
			}
		}
	}
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok && name != "" {
			for _, v := range vv {
				out = append(out, hpack.HeaderField{Name: strings.ToLower(name), Value: v})
			}
		}
	}
	return out
}

// appendFields appends hdr's fields, lower-cased, without those HTTP/2
// forbids, the trailer's and those named with http.TrailerPrefix.
func appendFields(fields []hpack.HeaderField, hdr http.Header, trailers []string) []hpack.HeaderField {
	for k, vv := range hdr {
		switch k {
		case "Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade":
			continue
		}
		if strings.HasPrefix(k, http.TrailerPrefix) || isIn(trailers, k) {
			continue
		}
		if !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		name := lowerHeader(k)
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				continue
			}
			fields = append(fields, hpack.HeaderField{Name: name, Value: v})
		}
	}
	return fields
}

func isIn(list []string, k string) bool {
	for _, s := range list {
		if s == k {
			return true
		}
	}
	return false
}

// lowerCache and canonCache keep the lower-cased and the canonical forms
// of header names seen, up to headerCacheMax of each (a peer sending
// ever new names must not grow them for ever).
var (
	lowerCache, canonCache sync.Map
	lowerN, canonN         atomic.Int32
)

const headerCacheMax = 2048

func lowerHeader(k string) string {
	if v, ok := lowerCache.Load(k); ok {
		return v.(string)
	}
	l := strings.ToLower(k)
	if len(k) < 40 && lowerN.Add(1) <= headerCacheMax {
		lowerCache.Store(k, l)
	}
	return l
}

func canonicalHeader(k string) string {
	if v, ok := canonCache.Load(k); ok {
		return v.(string)
	}
	c := textproto.CanonicalMIMEHeaderKey(k)
	if len(k) < 40 && canonN.Add(1) <= headerCacheMax {
		canonCache.Store(k, c)
	}
	return c
}

// statusText returns code as a string, without allocating for the common
// codes.
func statusText(code int) string {
	switch code {
	case 200:
		return "200"
	case 204:
		return "204"
	case 206:
		return "206"
	case 301:
		return "301"
	case 302:
		return "302"
	case 304:
		return "304"
	case 400:
		return "400"
	case 404:
		return "404"
	case 500:
		return "500"
	}
	return strconv.Itoa(code)
}

// queueHeaders hands a header block to the writer.
func (s *h2Stream) queueHeaders(fields []hpack.HeaderField, end bool) error {
	h := s.h
	h.mu.Lock()
	if s.reset || h.dead != nil {
		err := s.streamErr()
		h.mu.Unlock()
		return err
	}
	s.hdrs = append(s.hdrs, h2Headers{fields: fields, end: end})
	if end {
		s.outEnd = true
	}
	h.readyLocked(s)
	h.mu.Unlock()
	h.wakeWriter()
	return nil
}

// queueData hands body bytes to the writer, suspending the stream's task
// while the stream's buffer is full.
func (s *h2Stream) queueData(p []byte) error {
	h := s.h
	for len(p) > 0 {
		h.mu.Lock()
		if s.reset || h.dead != nil {
			err := s.streamErr()
			h.mu.Unlock()
			return err
		}
		room := h2StreamOutBuf - (len(s.out) - s.outOff)
		if room <= 0 {
			w := s.waker()
			h.mu.Unlock()
			if _, err := w.Recv(s.t); err != nil {
				return err
			}
			continue
		}
		if s.outOff > 0 && s.outOff == len(s.out) {
			s.out, s.outOff = s.out[:0], 0
		}
		n := min(room, len(p))
		s.out = append(s.out, p[:n]...)
		p = p[n:]
		h.readyLocked(s)
		h.mu.Unlock()
		h.wakeWriter()
	}
	return nil
}

// queueWhole hands a whole response to the writer: its header, its
// body (at most h2ResponseBuf bytes, under h2StreamOutBuf: no wait) and
// its end, under one lock.
func (s *h2Stream) queueWhole(fields []hpack.HeaderField, body []byte) {
	h := s.h
	h.mu.Lock()
	if !s.reset && h.dead == nil {
		s.hdrs = append(s.hdrs, h2Headers{fields: fields})
		s.out = append(s.out, body...)
		s.outEnd = true
		h.readyLocked(s)
	}
	h.mu.Unlock()
	h.wakeWriter()
}

// queueEnd ends the response, with trailers if any.
func (s *h2Stream) queueEnd(trailers []hpack.HeaderField) {
	h := s.h
	h.mu.Lock()
	if !s.reset && h.dead == nil {
		s.outEnd = true
		s.trailers = trailers
		h.readyLocked(s)
	}
	h.mu.Unlock()
	h.wakeWriter()
}
