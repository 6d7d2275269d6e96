package whttp

// HTTP/2 on the client's side (Client.Protocols): one connection per host
// and Run carries the requests of every task at once, each on a stream of
// its own. There is no task per connection (a Run ends when its tasks do,
// and a pooled connection must not keep it alive): the tasks that use the
// connection take turns at its two jobs, under two weft.Mutexes. The
// writer's lock is held to encode a header block (the HPACK encoder's
// state follows the bytes on the wire) and write a batch of frames; the
// reader's by a task that waits for something of its stream (a response
// header, body bytes, window): it reads frames, files each under its
// stream, and reads on until its own wait is over, then gives the turn to
// the next waiter, which first looks whether what it waits for came.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/loophook"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2ClientConn is one HTTP/2 connection of a Client.
type h2ClientConn struct {
	client *Client
	key    poolKey
	wc     *weft.Conn
	nc     net.Conn // LoopConn of wc, or of a TLSConn over it
	tls    *tls.ConnectionState
	fr     *http2.Framer // reads br; writes wbuf
	br     *bufio.Reader
	wbuf   bufferW
	enc    *hpack.Encoder
	hbuf   bufferW
	rmu    weft.Mutex // the reader's turn
	wmu    weft.Mutex // the writer's turn

	mu          sync.Mutex
	streams     map[uint32]*h2ClientStream // mu
	nextID      uint32                     // mu
	active      int                        // mu: streams open
	maxStreams  uint32                     // mu: the server's limit
	peerInitWin int32                      // mu
	peerMaxFrm  uint32                     // mu
	sendWin     int64                      // mu
	recvOwed    int64                      // mu: connection credit to give back
	dead        error                      // mu: no more streams
	closed      bool                       // mu
}

// h2ClientStream is one request's stream.
type h2ClientStream struct {
	id       uint32
	req      *http.Request
	resp     *http.Response // mu
	err      error          // mu: the stream failed
	in       []byte         // mu: body bytes received, not read
	inEOF    bool           // mu
	sendWin  int64          // mu
	recvOwed int64          // mu
	sentEnd  bool           // mu
	trailer  http.Header    // mu
}

const (
	h2ClientStreamWin = 4 << 20
	h2ClientConnWin   = 1 << 30
)

var errH2ClientConnDead = errors.New("whttp: http2: connection closed")

// newH2ClientConn starts HTTP/2 on a connection just made: the preface,
// the client's settings and window.
func (c *Client) newH2ClientConn(t *weft.Task, key poolKey, wc *weft.Conn, nc net.Conn, st *tls.ConnectionState) (*h2ClientConn, error) {
	cc := &h2ClientConn{
		client: c, key: key, wc: wc, nc: nc, tls: st,
		streams: make(map[uint32]*h2ClientStream), nextID: 1,
		maxStreams: 100, peerInitWin: 65535, peerMaxFrm: 16384, sendWin: 65535,
	}
	cc.br = bufio.NewReaderSize(nc, 16<<10)
	cc.fr = http2.NewFramer(&cc.wbuf, cc.br)
	cc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	cc.fr.MaxHeaderListSize = 10 << 20
	cc.enc = hpack.NewEncoder(&cc.hbuf)
	cc.wbuf.Write([]byte(http2.ClientPreface))
	cc.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2ClientStreamWin},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 10 << 20},
	)
	cc.fr.WriteWindowUpdate(0, h2ClientConnWin-65535)
	if err := cc.flush(); err != nil {
		return nil, err
	}
	return cc, nil
}

// flush writes what the framer put in wbuf; wmu held (or nobody else
// knows cc yet).
func (cc *h2ClientConn) flush() error {
	b := cc.wbuf.b
	cc.wbuf.b = b[:0]
	for len(b) > 0 {
		n, err := cc.nc.Write(b)
		if err != nil {
			cc.fail(err)
			return err
		}
		b = b[n:]
	}
	return nil
}

// fail ends the connection: every stream fails with err.
func (cc *h2ClientConn) fail(err error) {
	cc.mu.Lock()
	if cc.dead == nil {
		cc.dead = err
	}
	for _, s := range cc.streams {
		if s.err == nil {
			s.err = err
		}
	}
	cc.closed = true
	cc.mu.Unlock()
	cc.wc.Close()
}

// usable reports whether cc may take another stream.
func (cc *h2ClientConn) usable() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.dead == nil && cc.nextID < 1<<31-1
}

// idle reports whether cc has no stream open.
func (cc *h2ClientConn) idle() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.active == 0
}

// await suspends t until cond (called under mu) holds, reading frames in
// the reader's turn meanwhile.
func (cc *h2ClientConn) await(t *weft.Task, cond func() bool) error {
	for {
		cc.mu.Lock()
		ok, dead := cond(), cc.dead
		cc.mu.Unlock()
		if ok {
			return nil
		}
		if dead != nil {
			return dead
		}
		if err := cc.rmu.Lock(t); err != nil {
			return err
		}
		cc.mu.Lock()
		ok = cond()
		cc.mu.Unlock()
		if ok {
			cc.rmu.Unlock()
			return nil
		}
		err := cc.readFrame(t)
		cc.rmu.Unlock()
		if err != nil {
			// A read cut short (a cancellation) leaves the framer
			// mid-frame: the connection cannot go on.
			cc.fail(err)
			return err
		}
	}
}

// readFrame reads one frame and files it; rmu held.
func (cc *h2ClientConn) readFrame(t *weft.Task) error {
	f, err := cc.fr.ReadFrame()
	if err != nil {
		var se http2.StreamError
		if errors.As(err, &se) {
			cc.mu.Lock()
			if s := cc.streams[se.StreamID]; s != nil && s.err == nil {
				s.err = se
			}
			cc.mu.Unlock()
			return cc.write(t, func() { cc.fr.WriteRSTStream(se.StreamID, se.Code) })
		}
		return err
	}
	var reply func()
	cc.mu.Lock()
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			f.ForeachSetting(func(s http2.Setting) error {
				switch s.ID {
				case http2.SettingInitialWindowSize:
					d := int64(s.Val) - int64(cc.peerInitWin)
					cc.peerInitWin = int32(s.Val)
					for _, st := range cc.streams {
						st.sendWin += d
					}
				case http2.SettingMaxFrameSize:
					cc.peerMaxFrm = s.Val
				case http2.SettingMaxConcurrentStreams:
					cc.maxStreams = s.Val
				case http2.SettingHeaderTableSize:
					cc.enc.SetMaxDynamicTableSize(min(s.Val, 4096))
				}
				return nil
			})
			reply = func() { cc.fr.WriteSettingsAck() }
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			data := f.Data
			reply = func() { cc.fr.WritePing(true, data) }
		}
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			cc.sendWin += int64(f.Increment)
		} else if s := cc.streams[f.StreamID]; s != nil {
			s.sendWin += int64(f.Increment)
		}
	case *http2.MetaHeadersFrame:
		if s := cc.streams[f.StreamID]; s != nil {
			cc.onHeaders(s, f)
		}
	case *http2.DataFrame:
		n := int64(f.Length)
		cc.recvOwed += n
		if s := cc.streams[f.StreamID]; s != nil && s.err == nil {
			s.in = append(s.in, f.Data()...)
			s.recvOwed += n - int64(len(f.Data())) // padding
			if f.StreamEnded() {
				s.inEOF = true
				cc.endLocked(s)
			}
		}
		if cc.recvOwed >= 1<<20 {
			owed := uint32(cc.recvOwed)
			cc.recvOwed = 0
			reply = func() { cc.fr.WriteWindowUpdate(0, owed) }
		}
	case *http2.RSTStreamFrame:
		if s := cc.streams[f.StreamID]; s != nil {
			if s.err == nil {
				s.err = http2.StreamError{StreamID: f.StreamID, Code: f.ErrCode}
			}
			cc.removeLocked(s)
		}
	case *http2.GoAwayFrame:
		if cc.dead == nil {
			cc.dead = fmt.Errorf("whttp: http2: server sent GOAWAY (%v)", f.ErrCode)
		}
		for id, s := range cc.streams {
			if id > f.LastStreamID && s.err == nil {
				s.err = errH2ClientRetry
			}
		}
	}
	cc.mu.Unlock()
	if reply != nil {
		return cc.write(t, reply)
	}
	return nil
}

// errH2ClientRetry: the server did not process the stream (GOAWAY past
// it): the request may be sent again on another connection.
var errH2ClientRetry = errors.New("whttp: http2: request not processed by the server (GOAWAY)")

// onHeaders files a header block: the response's, or its trailer; mu
// held.
func (cc *h2ClientConn) onHeaders(s *h2ClientStream, f *http2.MetaHeadersFrame) {
	if s.resp == nil {
		code, err := strconv.Atoi(f.PseudoValue("status"))
		if err != nil || code < 100 {
			s.err = errors.New("whttp: http2: malformed response status")
			return
		}
		if code < 200 {
			return // informational
		}
		hdr := make(http.Header, len(f.RegularFields()))
		for _, hf := range f.RegularFields() {
			k := textproto.CanonicalMIMEHeaderKey(hf.Name)
			hdr[k] = append(hdr[k], hf.Value)
		}
		resp := &http.Response{
			Status: strconv.Itoa(code) + " " + http.StatusText(code), StatusCode: code,
			Proto: "HTTP/2.0", ProtoMajor: 2, Header: hdr, Request: s.req, TLS: cc.tls,
			ContentLength: -1,
		}
		if v := hdr.Get("Content-Length"); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				resp.ContentLength = n
			}
		}
		for _, v := range hdr["Trailer"] {
			for _, k := range strings.Split(v, ",") {
				if k = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k)); k != "" {
					if resp.Trailer == nil {
						resp.Trailer = make(http.Header)
					}
					resp.Trailer[k] = nil
				}
			}
		}
		s.resp = resp
	} else {
		if s.trailer == nil {
			s.trailer = make(http.Header)
		}
		for _, hf := range f.RegularFields() {
			k := textproto.CanonicalMIMEHeaderKey(hf.Name)
			s.trailer[k] = append(s.trailer[k], hf.Value)
		}
	}
	if f.StreamEnded() {
		s.inEOF = true
		cc.endLocked(s)
	}
}

// endLocked: the server ended its side of s.
func (cc *h2ClientConn) endLocked(s *h2ClientStream) {
	if s.sentEnd {
		cc.removeLocked(s)
	}
}

func (cc *h2ClientConn) removeLocked(s *h2ClientStream) {
	if cc.streams[s.id] == s {
		delete(cc.streams, s.id)
		cc.active--
	}
}

// write runs f (which writes frames with cc.fr) in the writer's turn and
// sends them.
func (cc *h2ClientConn) write(t *weft.Task, f func()) error {
	if err := cc.wmu.Lock(t); err != nil {
		return err
	}
	defer cc.wmu.Unlock()
	f()
	return cc.flush()
}

// roundTrip sends req on a stream of cc and returns the response once
// its header came; its body is read from the stream as the caller reads.
func (cc *h2ClientConn) roundTrip(t *weft.Task, req *http.Request) (*http.Response, error) {
	fields, err := h2RequestFields(req)
	if err != nil {
		return nil, err
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	// A stream slot.
	if err := cc.await(t, func() bool { return uint32(cc.active) < cc.maxStreams }); err != nil {
		return nil, err
	}
	if err := cc.wmu.Lock(t); err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if cc.dead != nil {
		err := cc.dead
		cc.mu.Unlock()
		cc.wmu.Unlock()
		return nil, err
	}
	s := &h2ClientStream{id: cc.nextID, req: req, sendWin: int64(cc.peerInitWin)}
	cc.nextID += 2
	cc.streams[s.id] = s
	cc.active++
	maxFrm := int(cc.peerMaxFrm)
	if !hasBody {
		s.sentEnd = true
	}
	cc.mu.Unlock()
	cc.hbuf.Reset()
	for _, f := range fields {
		cc.enc.WriteField(f)
	}
	block := cc.hbuf.b
	for first := true; first || len(block) > 0; first = false {
		frag := block[:min(len(block), maxFrm)]
		block = block[len(frag):]
		if first {
			cc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: frag, EndStream: !hasBody, EndHeaders: len(block) == 0})
		} else {
			cc.fr.WriteContinuation(s.id, len(block) == 0, frag)
		}
	}
	err = cc.flush()
	cc.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	if hasBody {
		if err := cc.sendBody(t, s, req.Body); err != nil {
			cc.reset(t, s)
			return nil, err
		}
	}
	if err := cc.await(t, func() bool { return s.resp != nil || s.err != nil }); err != nil {
		return nil, err
	}
	cc.mu.Lock()
	resp, serr := s.resp, s.err
	cc.mu.Unlock()
	if resp == nil {
		return nil, serr
	}
	resp.Body = &h2ClientBody{cc: cc, s: s, t: t}
	return resp, nil
}

// sendBody sends the request body within the flow-control windows.
func (cc *h2ClientConn) sendBody(t *weft.Task, s *h2ClientStream, body io.ReadCloser) error {
	defer body.Close()
	buf := make([]byte, 16<<10)
	for {
		n, rerr := body.Read(buf)
		p := buf[:n]
		end := rerr == io.EOF
		if rerr != nil && !end {
			return rerr
		}
		for len(p) > 0 || end {
			var w int64
			if err := cc.await(t, func() bool {
				w = min(s.sendWin, cc.sendWin, int64(cc.peerMaxFrm), int64(len(p)))
				return w > 0 || len(p) == 0 || s.err != nil
			}); err != nil {
				return err
			}
			cc.mu.Lock()
			if s.err != nil {
				err := s.err
				cc.mu.Unlock()
				return err
			}
			w = min(s.sendWin, cc.sendWin, int64(cc.peerMaxFrm), int64(len(p)))
			s.sendWin -= w
			cc.sendWin -= w
			last := end && int(w) == len(p)
			if last {
				s.sentEnd = true
				if s.inEOF {
					cc.removeLocked(s)
				}
			}
			cc.mu.Unlock()
			chunk := p[:w]
			if err := cc.write(t, func() { cc.fr.WriteData(s.id, last, chunk) }); err != nil {
				return err
			}
			p = p[w:]
			if last {
				return nil
			}
		}
	}
}

// reset abandons s: RST_STREAM CANCEL.
func (cc *h2ClientConn) reset(t *weft.Task, s *h2ClientStream) {
	cc.mu.Lock()
	_, open := cc.streams[s.id]
	cc.removeLocked(s)
	if s.err == nil {
		s.err = errors.New("whttp: http2: stream cancelled")
	}
	cc.mu.Unlock()
	if open {
		t.Protect(func(t *weft.Task) error {
			return cc.write(t, func() { cc.fr.WriteRSTStream(s.id, http2.ErrCodeCancel) })
		})
	}
}

// h2RequestFields returns req's header block.
func h2RequestFields(req *http.Request) ([]hpack.HeaderField, error) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	path := req.URL.RequestURI()
	fields := []hpack.HeaderField{
		{Name: ":method", Value: method},
		{Name: ":scheme", Value: req.URL.Scheme},
		{Name: ":authority", Value: host},
		{Name: ":path", Value: path},
	}
	for k, vv := range req.Header {
		switch strings.ToLower(k) {
		case "host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length":
			continue
		}
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("whttp: invalid header field name %q", k)
		}
		name := lowerHeader(k)
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("whttp: invalid header field value for %q", k)
			}
			fields = append(fields, hpack.HeaderField{Name: name, Value: v})
		}
	}
	if req.ContentLength > 0 {
		fields = append(fields, hpack.HeaderField{Name: "content-length", Value: strconv.FormatInt(req.ContentLength, 10)})
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		fields = append(fields, hpack.HeaderField{Name: "user-agent", Value: "weft-whttp"})
	}
	return fields, nil
}

// h2ClientBody is a response body over HTTP/2. It is read in the task
// that called Do: the reads take the connection's reader turn, which is a
// task's.
type h2ClientBody struct {
	cc   *h2ClientConn
	s    *h2ClientStream
	t    *weft.Task
	done bool
}

func (b *h2ClientBody) Read(p []byte) (int, error) {
	cc, s := b.cc, b.s
	if b.done {
		return 0, errors.New("whttp: read on a closed response body")
	}
	if err := cc.await(b.t, func() bool { return len(s.in) > 0 || s.inEOF || s.err != nil }); err != nil {
		return 0, err
	}
	cc.mu.Lock()
	n := copy(p, s.in)
	s.in = s.in[n:]
	if len(s.in) == 0 {
		s.in = nil
	}
	var upd uint32
	if !s.inEOF {
		s.recvOwed += int64(n)
		if s.recvOwed >= h2ClientStreamWin/2 {
			upd, s.recvOwed = uint32(s.recvOwed), 0
		}
	}
	eof, serr := s.inEOF && len(s.in) == 0, s.err
	if eof && s.trailer != nil && s.resp != nil {
		for k, vv := range s.trailer {
			if s.resp.Trailer == nil {
				s.resp.Trailer = make(http.Header)
			}
			s.resp.Trailer[k] = vv
		}
	}
	cc.mu.Unlock()
	if upd > 0 {
		cc.write(b.t, func() { cc.fr.WriteWindowUpdate(s.id, upd) })
	}
	if n > 0 {
		return n, nil
	}
	if serr != nil {
		return 0, serr
	}
	if eof {
		return 0, io.EOF
	}
	return 0, nil
}

// Close ends the body; before its end, it resets the stream.
func (b *h2ClientBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	b.cc.mu.Lock()
	open := !b.s.inEOF && b.s.err == nil
	b.cc.mu.Unlock()
	if open {
		b.cc.reset(b.t, b.s)
	}
	return nil
}

// wantH2 reports whether the client speaks HTTP/2 to URLs of scheme.
func (c *Client) wantH2(scheme string) bool {
	p := c.Protocols
	if p == nil {
		return false
	}
	if scheme == "https" {
		return p.HTTP2()
	}
	return p.UnencryptedHTTP2()
}

// roundTripH2 sends req over HTTP/2 if the server speaks it: on a
// connection of the pool, or a new one. done false: the server does not
// speak HTTP/2 (TLS's ALPN chose something else); use HTTP/1.
func (c *Client) roundTripH2(t *weft.Task, key poolKey, host string, req *http.Request, deadline time.Time) (*http.Response, error, bool) {
	c.mu.Lock()
	cc := c.h2conns[key]
	no := c.noH2[key]
	c.mu.Unlock()
	if no {
		return nil, nil, false
	}
	if cc == nil || !cc.usable() {
		// One task dials; the others wait for its connection.
		c.mu.Lock()
		if c.h2dial == nil {
			c.h2dial = make(map[poolKey]*weft.Mutex)
		}
		m := c.h2dial[key]
		if m == nil {
			m = new(weft.Mutex)
			c.h2dial[key] = m
		}
		c.mu.Unlock()
		if err := m.Lock(t); err != nil {
			return nil, err, true
		}
		c.mu.Lock()
		cc, no = c.h2conns[key], c.noH2[key]
		c.mu.Unlock()
		var err error
		if no {
			cc = nil
		} else if cc == nil || !cc.usable() {
			cc, err = c.dialH2(t, key, host, deadline)
		}
		m.Unlock()
		if err != nil {
			return nil, err, true
		}
		if cc == nil {
			return nil, nil, false
		}
	}
	f := func(t *weft.Task) (*http.Response, error) { return cc.roundTrip(t, req) }
	var resp *http.Response
	var err error
	if deadline.IsZero() {
		resp, err = f(t)
	} else {
		resp, err = weft.Timeout(t, deadline.Sub(t.Now()), f)
		if errors.Is(err, weft.ErrTimeout) {
			err = &timeoutError{err: err, msg: "whttp: http2: Client.Timeout exceeded while awaiting headers"}
		}
	}
	if err != nil && req.Context().Err() != nil {
		err = context.Cause(req.Context())
	}
	return resp, err, true
}

// dialH2 dials an HTTP/2 connection for key; nil (no error) if the
// server chose another protocol over TLS.
func (c *Client) dialH2(t *weft.Task, key poolKey, host string, deadline time.Time) (*h2ClientConn, error) {
	addr := strings.TrimPrefix(strings.TrimPrefix(key.addr, "http://"), "https://")
	dial := func(t *weft.Task) (*weft.Conn, error) { return weft.Dial(t, "tcp", addr) }
	var wc *weft.Conn
	var err error
	if deadline.IsZero() {
		wc, err = dial(t)
	} else {
		wc, err = weft.Timeout(t, deadline.Sub(t.Now()), dial)
	}
	if err != nil {
		return nil, err
	}
	nc := wc.LoopConn()
	var st *tls.ConnectionState
	if strings.HasPrefix(key.addr, "https://") {
		cfg := &tls.Config{}
		if c.TLSConfig != nil {
			cfg = c.TLSConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"h2"}
		if c.Protocols.HTTP1() {
			cfg.NextProtos = append(cfg.NextProtos, "http/1.1")
		}
		tc := weft.TLSClient(wc, cfg)
		wc.SetDeadline(deadline)
		if err := tc.Handshake(t); err != nil {
			wc.Close()
			return nil, err
		}
		wc.SetDeadline(time.Time{})
		state := tc.ConnectionState()
		if state.NegotiatedProtocol != "h2" {
			wc.Close()
			c.mu.Lock()
			if c.noH2 == nil {
				c.noH2 = make(map[poolKey]bool)
			}
			c.noH2[key] = true
			c.mu.Unlock()
			return nil, nil
		}
		st, nc = &state, tc.LoopConn()
	}
	cc, err := c.newH2ClientConn(t, key, wc, nc, st)
	if err != nil {
		wc.Close()
		return nil, err
	}
	c.mu.Lock()
	if c.h2conns == nil {
		c.h2conns = make(map[poolKey]*h2ClientConn)
	}
	old := c.h2conns[key]
	c.h2conns[key] = cc
	if c.runs == nil {
		c.runs = make(map[any]struct{})
	}
	_, known := c.runs[key.run]
	c.runs[key.run] = struct{}{}
	c.mu.Unlock()
	if old != nil && old.idle() {
		old.fail(errH2ClientConnDead)
	}
	if !known {
		run := key.run
		loophook.AtEnd(t, func() { c.closeRun(run) })
	}
	return cc, nil
}

// closeH2 closes the HTTP/2 connections of run (nil: the idle ones of
// every Run).
func (c *Client) closeH2(run any, idleOnly bool) {
	c.mu.Lock()
	var list []*h2ClientConn
	for k, cc := range c.h2conns {
		if (run == nil || k.run == run) && (!idleOnly || cc.idle()) {
			list = append(list, cc)
			delete(c.h2conns, k)
		}
	}
	c.mu.Unlock()
	for _, cc := range list {
		cc.fail(errH2ClientConnDead)
	}
}
