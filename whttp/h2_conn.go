package whttp

// One HTTP/2 connection (see DESIGN.md, HTTP/2). Three kinds of task
// share it:
//
//   - the reader, the connection's own task: it reads frames
//     (http2.Framer, with the HPACK decoder) and acts on each under h.mu,
//     without suspending while it holds it;
//   - the writer (h2_write.go): it owns the HPACK encoder and the frame
//     buffer, gathers under h.mu what is owed to the peer (control frames,
//     then the streams' headers and data within the flow-control windows)
//     into one buffer, and writes it with one call, outside the lock;
//   - one task per stream, running the handler (h2_stream.go): its body
//     reads and response writes take and give bytes under h.mu, and
//     suspend on the stream's wake channel, never holding the lock.
//
// With several loops these tasks may run on different loops at once;
// h.mu is a sync.Mutex held for a few field updates only, never across a
// suspension point. Wake-ups are weft.Chan values of capacity one
// (TrySend), which any loop or goroutine may send.

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Conn is one HTTP/2 connection's state.
type h2Conn struct {
	c   *conn
	sv  *serving
	cfg *h2Config
	tr  h2Transport
	in  h2Input
	fr  *http2.Framer // the reader's
	g   *weft.TaskGroup
	tls *tls.ConnectionState

	wake   *weft.Chan[struct{}] // wakes the writer
	writer *weft.Promise[struct{}]
	// shutdownReq is set by a graceful stop from any goroutine.
	shutdownReq atomic.Bool

	mu        sync.Mutex
	streams   map[uint32]*h2Stream // mu: open and half-closed streams
	maxID     uint32               // mu: the highest stream the peer opened
	handlers  int                  // mu: stream tasks running
	waiting   []*h2Stream          // mu: streams whose handler waits for a task slot
	dead      error                // mu: the connection ends: why
	goAway    bool                 // mu: GOAWAY queued or sent: no new streams
	ctl       []h2Ctl              // mu: control frames owed to the peer
	ready     []*h2Stream          // mu: streams with output for the writer, from readyHead on
	readyHead int                  // mu
	// The peer's settings and the send window.
	peerInitWin  int32  // mu
	peerMaxFrame uint32 // mu
	sendWin      int64  // mu
	// The receive side of the connection's flow control.
	recvWin  int64 // mu: what the peer may still send
	recvOwed int64 // mu: credit not yet given back
	held     int64 // mu: body bytes buffered for handlers, unread
	// Writer-owned, used under mu.
	enc  *hpack.Encoder
	hbuf bufferW
	wfr  *http2.Framer
	wbuf bufferW

	// The per-stream deadlines' keeper (deadlineLoop), once started.
	keeper  bool                 // mu
	dlWake  *weft.Chan[struct{}] // wakes it
	dlNext  int64                // mu: when it wakes next (0: when told)
	gotHead bool                 // mu: the first HEADERS came

	wakeLater bool         // reader: the writer is to be woken before the next read
	writes    atomic.Int64 // the writer's writes, for tests

	// lastFrame is when the reader last read a frame (UnixNano on the
	// Run's clock), kept only for the health check.
	lastFrame atomic.Int64

	// The reader's header-block decoding (readHeaderBlock).
	dec        *hpack.Decoder
	mh         http2.MetaHeadersFrame
	fields     []hpack.HeaderField
	invalid    error
	sawRegular bool
	remain     uint32 // of the header list's size
	tremain    uint32 // of the trailer declarations' size

	empty   int  // reader: frames in a row that carried nothing
	settled bool // reader: the first SETTINGS came
	idleSet bool // mu: the read deadline is the idle (or first header) one
}

// h2Ctl is a control frame owed to the peer.
type h2Ctl struct {
	kind uint8
	id   uint32
	code http2.ErrCode
	n    uint32
	data [8]byte
}

const (
	ctlSettingsAck = iota + 1
	ctlPingAck
	ctlRST
	ctlWindow
	ctlGoAway
	ctlPing // the health check's (HTTP2Config.SendPingTimeout)
)

// bufferW is a growable write buffer.
type bufferW struct{ b []byte }

func (w *bufferW) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
func (w *bufferW) Reset()                      { w.b = w.b[:0] }
func (w *bufferW) Len() int                    { return len(w.b) }

// h2Transport is what an HTTP/2 connection reads and writes through:
// the socket (h2c) or TLS over it (h2_tls.go). Read is the reader task's,
// write the writer's.
type h2Transport interface {
	Read(p []byte) (int, error)
	write(t *weft.Task, p []byte) error
	closeWrite(t *weft.Task)
}

// h2Plain is cleartext HTTP/2: the socket, after the bytes that were read
// while telling the preface from HTTP/1.
type h2Plain struct {
	wc      *weft.Conn
	rt      *weft.Task
	initial []byte
}

func (p *h2Plain) Read(b []byte) (int, error) {
	if len(p.initial) > 0 {
		n := copy(b, p.initial)
		p.initial = p.initial[n:]
		return n, nil
	}
	return p.wc.Read(p.rt, b)
}

func (p *h2Plain) write(t *weft.Task, b []byte) error {
	for len(b) > 0 {
		n, err := p.wc.Write(t, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func (p *h2Plain) closeWrite(*weft.Task) { p.wc.CloseWrite() }

// h2Input is the framer's reader: buffered, and with a budget per frame
// read, so that a header block sent as endless CONTINUATION frames (which
// the framer would read in one ReadFrame call) ends the connection.
//
// It reads into a small landing buffer (landPool's, the connection's for
// its life), as the HTTP/1.1 loop does while idle, unless the last read filled its
// buffer or the framer wants more than the landing buffer holds: then
// through a pooled h2ReadBuf-byte buffer, given back at the next read
// into the landing buffer. So a connection waiting for its next request
// (whose last read was the small tail of what came) holds no large
// buffer, and one that streams a body in reads it in large pieces.
type h2Input struct {
	tr     h2Transport
	land   []byte  // small, the connection's for its life
	big    *[]byte // pooled, nil while idle
	buf    []byte  // land or *big
	r, w   int     // buf[r:w] is buffered
	full   bool    // the last read filled its buffer
	budget int
	// drained, if set, runs before a read from the transport.
	drained func()
	// holding is big != nil, for tests from other goroutines.
	holding atomic.Bool
}

// h2ReadBuf is the size of the reader's buffer while frames arrive.
const h2ReadBuf = 16 << 10

var h2ReadPool = sync.Pool{New: func() any { b := make([]byte, h2ReadBuf); return &b }}

var errFrameBudget = errors.New("whttp: http2: header block too long")

func (in *h2Input) Read(p []byte) (int, error) {
	if in.budget <= 0 {
		return 0, errFrameBudget
	}
	if len(p) > in.budget {
		p = p[:in.budget]
	}
	if in.r == in.w {
		if err := in.fill(len(p)); err != nil {
			return 0, err
		}
	}
	n := copy(p, in.buf[in.r:in.w])
	in.r += n
	in.budget -= n
	return n, nil
}

// fill reads into the empty buffer: the landing one (and the large one
// goes back to its pool), or the large one when more is coming (see
// h2Input).
func (in *h2Input) fill(want int) error {
	if in.drained != nil {
		in.drained()
	}
	in.r, in.w = 0, 0
	if !in.full && want <= len(in.land) {
		in.release()
		in.buf = in.land
	} else {
		if in.big == nil {
			in.big = h2ReadPool.Get().(*[]byte)
			in.holding.Store(true)
		}
		in.buf = *in.big
	}
	n, err := in.tr.Read(in.buf)
	in.w = n
	in.full = n == len(in.buf)
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// drop gives the large buffer back as the connection ends.
func (in *h2Input) drop() {
	in.r = in.w
	in.release()
}

// release gives the large buffer back, if held and empty.
func (in *h2Input) release() {
	if in.big != nil && in.r == in.w {
		h2ReadPool.Put(in.big)
		in.big = nil
		in.holding.Store(false)
		in.buf = in.land
	}
}

// errors that end a connection or a stream.
var (
	errH2Shutdown    = errors.New("whttp: http2: server stopped")
	errH2StreamReset = errors.New("whttp: http2: stream reset")
	errH2PeerGone    = errors.New("whttp: http2: client closed the connection")
	errH2PingTimeout = errors.New("whttp: http2: no answer to the health check's PING (HTTP2Config.PingTimeout)")
	// errH2ReadTimeout and errH2WriteTimeout end a stream's body and
	// response at their deadlines (Server.ReadTimeout, WriteTimeout,
	// or the ResponseController's); they match os.ErrDeadlineExceeded.
	errH2ReadTimeout  = fmt.Errorf("whttp: http2: request body: %w", os.ErrDeadlineExceeded)
	errH2WriteTimeout = fmt.Errorf("whttp: http2: response: %w", os.ErrDeadlineExceeded)
)

// h2ConnError is a connection error the server detected: it sends GOAWAY
// with code and ends.
type h2ConnError struct {
	code http2.ErrCode
	msg  string
}

func (e h2ConnError) Error() string { return fmt.Sprintf("whttp: http2: %v: %s", e.code, e.msg) }

// serveH2 serves the connection as HTTP/2, in the connection's task, and
// returns when it ends. tr carries the bytes; the connection is closed on
// return.
func (c *conn) serveH2(t *weft.Task, tr h2Transport, tlsState *tls.ConnectionState) {
	cfg := c.sv.s.h2Config()
	h := &h2Conn{
		c:            c,
		sv:           c.sv,
		cfg:          cfg,
		tr:           tr,
		tls:          tlsState,
		wake:         weft.NewChan[struct{}](1),
		streams:      make(map[uint32]*h2Stream),
		peerInitWin:  65535,
		peerMaxFrame: 16384,
		sendWin:      65535,
		recvWin:      int64(cfg.connWin),
	}
	// The landing buffer is the connection's for its life: it is not
	// given back (frames the framer returned may still point into it).
	h.in = h2Input{tr: tr, land: getLand()[:], drained: h.wakeDeferred}
	h.in.buf = h.in.land
	defer h.in.drop()
	h.fr = http2.NewFramer(nil, &h.in)
	h.dec = hpack.NewDecoder(cfg.decTable, h.emitField)
	h.dec.SetMaxStringLength(int(cfg.maxHeaderList))
	h.fr.MaxHeaderListSize = cfg.maxHeaderList
	h.fr.SetMaxReadFrameSize(cfg.maxReadFrame)
	h.fr.SetReuseFrames()
	h.wfr = http2.NewFramer(&h.wbuf, nil)
	h.enc = hpack.NewEncoder(&h.hbuf)
	h.enc.SetMaxDynamicTableSizeLimit(cfg.encTable)
	c.h2.Store(h)
	defer c.h2.Store(nil)
	// Until the first HEADERS: the first request's header deadline, from
	// the accept (ReadHeaderTimeout, or ReadTimeout); then IdleTimeout
	// while no stream is open (idleDeadline).
	c.setReadDeadline(c.headerDeadline())
	h.idleSet = true
	c.setState(http.StateActive)
	if c.stopIt.Load() {
		h.shutdownReq.Store(true)
	}

	weft.Group(t, func(g *weft.TaskGroup) error {
		h.g = g
		g.Handle(func(err error) {
			c.sv.log.Error("whttp: http2: task failed", "remote", c.remote, "err", err)
		})
		h.writer = weft.GoIn(g, h.writeLoop)
		if h.cfg.sendPingTimeout > 0 {
			h.lastFrame.Store(t.Now().UnixNano())
			g.GoDaemon(h.healthLoop)
		}
		if s := h.sv.s; s.ReadTimeout > 0 || s.WriteTimeout > 0 {
			h.keeper = true
			h.dlWake = weft.NewChan[struct{}](1)
			g.GoDaemon(h.deadlineLoop)
		}
		err := h.readLoop(t)
		h.end(t, err)
		return nil
	})
	h.closeConn(t)
}

// healthLoop is the health check of HTTP2Config.SendPingTimeout, a
// daemon task of the connection's group: when no frame has come for
// SendPingTimeout it sends a PING, and when no frame (the PING's ACK or
// any other) comes within PingTimeout after it, the connection is closed,
// as net/http's server does: its streams are cancelled with
// errH2PingTimeout. It ends when the connection does.
func (h *h2Conn) healthLoop(t *weft.Task) error {
	d := h.cfg.sendPingTimeout
	for {
		wait := time.Unix(0, h.lastFrame.Load()).Add(d).Sub(t.Now())
		if wait > 0 {
			if err := t.Sleep(wait); err != nil {
				return nil
			}
			continue
		}
		sent := t.Now().UnixNano()
		var data [8]byte
		binary.BigEndian.PutUint64(data[:], uint64(sent))
		h.mu.Lock()
		err := h.queueCtl(h2Ctl{kind: ctlPing, data: data})
		h.mu.Unlock()
		if err != nil {
			var ce h2ConnError
			if errors.As(err, &ce) {
				h.connError(ce.code, ce.msg)
			}
			return nil
		}
		h.wakeWriter()
		if err := t.Sleep(h.cfg.pingTimeout); err != nil {
			return nil
		}
		if h.lastFrame.Load() < sent {
			h.cfg.countErr("ping_timeout")
			h.mu.Lock()
			if h.dead == nil {
				h.dead = errH2PingTimeout
			}
			h.mu.Unlock()
			h.c.wc.SetReadDeadline(t.Now()) // the reader ends
			return nil
		}
	}
}

// deadlineLoop keeps the streams' deadlines (Server.ReadTimeout and
// WriteTimeout per stream, as net/http's HTTP/2 server applies them, and
// the ResponseController's): a daemon task of the connection's group,
// started with it when a timeout is set, or by the first deadline a
// handler sets. Past a stream's read deadline its body's reads fail with
// errH2ReadTimeout (what was received stays readable first) and the
// rest of the body is discarded; past its write deadline the stream is
// reset (RST_STREAM INTERNAL_ERROR) and its handler's context and task
// cancelled with errH2WriteTimeout, as net/http does. It ends when the
// connection does.
func (h *h2Conn) deadlineLoop(t *weft.Task) error {
	for {
		now := t.Now().UnixNano()
		var next int64
		reset := false
		h.mu.Lock()
		for _, s := range h.streams {
			if s.readDL != 0 && !s.remoteClosed && s.readErr == nil {
				if s.readDL <= now {
					s.readErr = errH2ReadTimeout
					s.bodyClosed = true // later DATA is discarded
					s.signal()
				} else if next == 0 || s.readDL < next {
					next = s.readDL
				}
			}
			if s.writeDL != 0 && !s.localClosed && !s.reset {
				if s.writeDL <= now {
					h.resetLocked(s, http2.ErrCodeInternal, errH2WriteTimeout)
					reset = true
				} else if next == 0 || s.writeDL < next {
					next = s.writeDL
				}
			}
		}
		h.dlNext = next
		h.mu.Unlock()
		if reset {
			h.wakeWriter()
		}
		var err error
		if next == 0 {
			_, err = h.dlWake.Recv(t)
		} else {
			var v struct{}
			_, err = weft.Select(t, weft.RecvCase(h.dlWake, &v), weft.AfterCase(time.Duration(next-now)))
		}
		if err != nil {
			return nil
		}
	}
}

// setDeadlineLocked tells the keeper of a stream's new deadline dl
// (UnixNano), starting it if need be; mu held. It reports whether the
// keeper must be started (by the caller, after unlocking).
func (h *h2Conn) setDeadlineLocked(dl int64) (start bool) {
	if !h.keeper {
		h.keeper = true
		h.dlWake = weft.NewChan[struct{}](1)
		return true
	}
	if dl != 0 && (h.dlNext == 0 || dl < h.dlNext) {
		h.dlWake.TrySend(struct{}{})
	}
	return false
}

// end stops the connection after the reader ended with err: every stream
// is cancelled, the writer sends what it owes (the GOAWAY) and ends.
func (h *h2Conn) end(t *weft.Task, err error) {
	h.mu.Lock()
	if h.dead == nil {
		if err == nil || errors.Is(err, io.EOF) || isClosedOrReset(err) {
			err = errH2PeerGone
		}
		h.dead = err
	}
	cause := h.dead
	streams := make([]*h2Stream, 0, len(h.streams)+len(h.waiting))
	for _, s := range h.streams {
		streams = append(streams, s)
	}
	streams = append(streams, h.waiting...)
	h.waiting = nil
	h.mu.Unlock()
	for _, s := range streams {
		s.abort(cause)
	}
	h.wakeWriter()
	// The writer flushes the GOAWAY, if the peer reads.
	weft.Timeout(t, h2GoAwayLinger, func(t *weft.Task) (struct{}, error) { return h.writer.Await(t) })
	h.writer.Cancel()
}

// closeConn closes the connection after its tasks ended: the writing
// side first, then what the peer still sends is read out for a moment, so
// that the last frames are not lost to a reset.
func (h *h2Conn) closeConn(t *weft.Task) {
	c := h.c
	if !c.isCut() {
		c.wc.SetWriteDeadline(t.Now().Add(closeLinger))
		h.tr.closeWrite(t)
		c.wc.SetReadDeadline(t.Now().Add(closeLinger))
		var scratch [4096]byte
		for range 256 {
			if _, err := h.tr.Read(scratch[:]); err != nil {
				break
			}
		}
	}
	c.wc.Close()
	c.setState(http.StateClosed)
}

// shutdown is the graceful stop (Server.Shutdown, the cancellation of
// Serve's task): GOAWAY, the streams in flight finish, then the
// connection closes. Any goroutine may call it.
func (h *h2Conn) shutdown() {
	h.shutdownReq.Store(true)
	h.wakeWriter()
}

func (h *h2Conn) wakeWriter() { h.wake.TrySend(struct{}{}) }

// readLoop is the reader: the connection's task.
func (h *h2Conn) readLoop(t *weft.Task) error {
	var pre [len(h2Preface)]byte
	h.in.budget = len(pre)
	if _, err := io.ReadFull(&h.in, pre[:]); err != nil {
		return err
	}
	if string(pre[:]) != h2Preface {
		return h.connError(http2.ErrCodeProtocol, "bad connection preface")
	}
	if h.tls != nil && !h.cfg.permitProhibited && h2BadCipher(h.tls) {
		return h.connError(http2.ErrCodeInadequateSecurity, "prohibited TLS version or cipher suite")
	}
	frameBudget := int(h.cfg.maxReadFrame) + 9 + 2*int(h.cfg.maxHeaderList) + 64<<10
	for {
		h.idleDeadline(t)
		h.in.budget = frameBudget
		f, err := h.fr.ReadFrame()
		if hf, ok := f.(*http2.HeadersFrame); ok && err == nil {
			f, err = h.readHeaderBlock(hf)
		}
		if err != nil {
			var se http2.StreamError
			var ce http2.ConnectionError
			switch {
			case errors.As(err, &se):
				if err := h.onStreamError(se); err != nil {
					return err
				}
				continue
			case errors.As(err, &ce):
				msg := "bad frame"
				if d := h.fr.ErrorDetail(); d != nil {
					msg = d.Error()
				}
				return h.connError(http2.ErrCode(ce), msg)
			case errors.Is(err, http2.ErrFrameTooLarge):
				return h.connError(http2.ErrCodeFrameSize, "frame too large")
			case errors.Is(err, errFrameBudget):
				h.cfg.countErr("header_block_flood")
				return h.connError(http2.ErrCodeEnhanceYourCalm, "header block too long (CONTINUATION flood)")
			}
			if h.shutdownDone() {
				return errH2Shutdown
			}
			var ne net.Error
			h.mu.Lock()
			idleSet, gotHead := h.idleSet, h.gotHead
			h.mu.Unlock()
			if idleSet && errors.As(err, &ne) && ne.Timeout() {
				if !gotHead {
					return h.connError(http2.ErrCodeNo, "no request within ReadHeaderTimeout")
				}
				return h.connError(http2.ErrCodeNo, "idle timeout")
			}
			return err
		}
		if h.cfg.sendPingTimeout > 0 {
			h.lastFrame.Store(t.Now().UnixNano())
		}
		if err := h.onFrame(t, f); err != nil {
			return err
		}
	}
}

// readHeaderBlock reads the CONTINUATION frames that follow hf, if any,
// and decodes the header block, as the framer's ReadMetaHeaders does but
// into storage the reader reuses: the frame returned (h.mh) and its
// Fields are valid until the next call. Its errors are the framer's: a
// StreamError for a malformed block (RST_STREAM), a ConnectionError for
// one that cannot be decoded or is far over the size limit (GOAWAY).
// Fields past MaxHeaderListSize are dropped and Truncated set (431).
func (h *h2Conn) readHeaderBlock(hf *http2.HeadersFrame) (http2.Frame, error) {
	h.mh = http2.MetaHeadersFrame{HeadersFrame: hf}
	h.fields = h.fields[:0]
	h.invalid, h.sawRegular = nil, false
	h.remain, h.tremain = h.cfg.maxHeaderList, h.cfg.maxHeaderList
	h.dec.SetEmitEnabled(true)
	frag, ended := hf.HeaderBlockFragment(), hf.HeadersEnded()
	for {
		// A block far over the limit is not decoded: the connection ends
		// (as the framer does), and so after an invalid field, whose
		// block's size is no longer counted.
		if int64(len(frag)) > 2*int64(h.remain+h.tremain) {
			return nil, http2.ConnectionError(http2.ErrCodeProtocol)
		}
		if h.invalid != nil {
			return nil, http2.ConnectionError(http2.ErrCodeProtocol)
		}
		if _, err := h.dec.Write(frag); err != nil {
			return nil, http2.ConnectionError(http2.ErrCodeCompression)
		}
		if ended {
			break
		}
		f, err := h.fr.ReadFrame() // a CONTINUATION of hf's stream: the framer checks
		if err != nil {
			return nil, err
		}
		cf := f.(*http2.ContinuationFrame)
		frag, ended = cf.HeaderBlockFragment(), cf.HeadersEnded()
	}
	if err := h.dec.Close(); err != nil {
		return nil, http2.ConnectionError(http2.ErrCodeCompression)
	}
	h.mh.Fields = h.fields
	if cap(h.fields) > 256 {
		h.fields = nil
	}
	if h.invalid != nil {
		return nil, http2.StreamError{StreamID: hf.StreamID, Code: http2.ErrCodeProtocol, Cause: h.invalid}
	}
	if err := checkPseudos(h.mh.PseudoFields()); err != nil {
		return nil, http2.StreamError{StreamID: hf.StreamID, Code: http2.ErrCodeProtocol, Cause: err}
	}
	return &h.mh, nil
}

// emitField takes one decoded field of a header block (the decoder's
// emit function): it checks it, counts it against the header list's
// limit, and keeps it.
func (h *h2Conn) emitField(hf hpack.HeaderField) {
	if !httpguts.ValidHeaderFieldValue(hf.Value) {
		h.invalid = fmt.Errorf("invalid header field value for %q", hf.Name)
	}
	if strings.HasPrefix(hf.Name, ":") {
		if h.sawRegular {
			h.invalid = errors.New("pseudo header field after regular")
		}
	} else {
		h.sawRegular = true
		if !validWireName(hf.Name) {
			h.invalid = fmt.Errorf("invalid header field name %q", hf.Name)
		}
	}
	if h.invalid != nil {
		h.dec.SetEmitEnabled(false)
		return
	}
	remain, size := &h.remain, hf.Size()
	if hf.Name == "trailer" {
		// Each name it declares costs a field's overhead, as the framer counts.
		n := uint32(strings.Count(hf.Value, ",") + 1)
		remain, size = &h.tremain, uint32(len(hf.Value))-n+1+n*hpack.HeaderField{}.Size()
	}
	if size > *remain {
		h.dec.SetEmitEnabled(false)
		h.mh.Truncated = true
		h.remain, h.tremain = 0, 0
		return
	}
	*remain -= size
	h.fields = append(h.fields, hf)
}

// validWireName reports whether a field name is a token without upper
// case letters (RFC 9113 section 8.2.1).
func validWireName(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !httpguts.IsTokenRune(rune(c)) || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// checkPseudos reports a request's pseudo-header fields that are unknown,
// repeated or of a response.
func checkPseudos(pf []hpack.HeaderField) error {
	for i, hf := range pf {
		switch hf.Name {
		case ":method", ":path", ":scheme", ":authority", ":protocol":
		default:
			return fmt.Errorf("invalid pseudo-header %q", hf.Name)
		}
		for _, prev := range pf[:i] {
			if hf.Name == prev.Name {
				return fmt.Errorf("duplicate pseudo-header %q", hf.Name)
			}
		}
	}
	return nil
}

// idleDeadline keeps the read deadline of IdleTimeout while no stream is
// open (after the first HEADERS: until then, serveH2's).
func (h *h2Conn) idleDeadline(t *weft.Task) {
	h.mu.Lock()
	h.idleDeadlineLocked(t)
	h.mu.Unlock()
}

// idleDeadlineLocked is idleDeadline with mu held. The reader calls it
// before each frame, and the writer after each round: the connection
// goes idle as the writer sends a response's end or as a handler ends
// (which wakes the writer), while the reader waits for the next frame.
// The deadline is set on the calling task's clock.
func (h *h2Conn) idleDeadlineLocked(t *weft.Task) {
	if !h.gotHead || h.dead != nil {
		return
	}
	d := h.sv.s.idleTimeout()
	idle := d > 0 && len(h.streams) == 0 && h.handlers == 0
	if idle && !h.idleSet {
		h.idleSet = true
		h.c.wc.SetReadDeadline(t.Now().Add(d))
	} else if !idle && h.idleSet {
		h.idleSet = false
		h.c.wc.SetReadDeadline(time.Time{})
	}
}

// shutdownDone reports whether the graceful stop closed the connection.
func (h *h2Conn) shutdownDone() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dead == errH2Shutdown
}

// connError queues GOAWAY with code and marks the connection dead; the
// reader returns what it returns.
func (h *h2Conn) connError(code http2.ErrCode, msg string) error {
	err := h2ConnError{code, msg}
	h.mu.Lock()
	if h.dead == nil {
		h.dead = err
		h.goAway = true
		h.ctl = append(h.ctl, h2Ctl{kind: ctlGoAway, id: h.maxID, code: code})
	}
	h.mu.Unlock()
	h.wakeWriter()
	h.sv.log.Debug("whttp: http2: connection error", "remote", h.c.remote, "err", err)
	return err
}

// queueCtl queues a control frame; mu held. Past the bound, the peer is
// not reading what it asks for: GOAWAY.
func (h *h2Conn) queueCtl(f h2Ctl) error {
	if len(h.ctl) >= h2MaxControlQueue {
		return h2ConnError{http2.ErrCodeEnhanceYourCalm, "too many control frames owed (flood or slow reader)"}
	}
	h.ctl = append(h.ctl, f)
	return nil
}

// locked runs f under mu, in the reader; an h2ConnError it returns
// becomes the connection's error.
func (h *h2Conn) locked(f func() error) error {
	h.mu.Lock()
	err := f()
	// The writer runs only if there is something for it.
	return h.unlockWake(err)
}

// unlockWake releases mu, wakes the writer if there is something for
// it, and makes an h2ConnError err the connection's error; the reader's.
// While the reader has more frames buffered, the wake-up waits until it
// has acted on them (wakeDeferred): so a PING's acknowledgement that
// comes before a request leaves with its response, the request's task
// having been started before the writer was woken.
func (h *h2Conn) unlockWake(err error) error {
	wake := len(h.ctl) > 0 || len(h.ready) > h.readyHead || h.goAway || h.dead != nil ||
		h.recvOwed >= int64(h.cfg.connWin)/2
	h.mu.Unlock()
	if wake {
		if h.in.r < h.in.w {
			h.wakeLater = true
		} else {
			h.wakeLater = false
			h.wakeWriter()
		}
	}
	if err == nil {
		return nil
	}
	if ce, ok := err.(h2ConnError); ok {
		h.cfg.countErr("conn_" + ce.code.String())
		return h.connError(ce.code, ce.msg)
	}
	return err
}

// wakeDeferred wakes the writer if unlockWake left it for later: the
// reader is about to read from the transport.
func (h *h2Conn) wakeDeferred() {
	if h.wakeLater {
		h.wakeLater = false
		h.wakeWriter()
	}
}

// onStreamError answers a stream error the framer found: RST_STREAM.
func (h *h2Conn) onStreamError(se http2.StreamError) error {
	return h.locked(func() error {
		id := se.StreamID
		if s := h.streams[id]; s != nil {
			h.resetLocked(s, se.Code, errH2StreamReset)
			return nil
		}
		if id > h.maxID && id%2 == 1 {
			h.maxID = id // a HEADERS frame opened it, and it ends here
		}
		return h.queueCtl(h2Ctl{kind: ctlRST, id: id, code: se.Code})
	})
}

// onFrame acts on one frame.
func (h *h2Conn) onFrame(t *weft.Task, f http2.Frame) error {
	if !h.settled {
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			return h.connError(http2.ErrCodeProtocol, "the first frame is not SETTINGS")
		}
		h.settled = true
	}
	switch f := f.(type) {
	case *http2.DataFrame:
		return h.locked(func() error { return h.onData(f) })
	case *http2.MetaHeadersFrame:
		h.mu.Lock()
		if !h.gotHead {
			h.gotHead = true
			h.idleSet = false
			h.c.wc.SetReadDeadline(time.Time{})
		}
		start, err := h.onHeaders(t, f)
		err = h.unlockWake(err)
		if start != nil {
			h.startStream(start)
		}
		return err
	case *http2.SettingsFrame:
		h.empty = 0
		if f.IsAck() {
			return nil
		}
		return h.locked(func() error { return h.onSettings(f) })
	case *http2.PingFrame:
		h.empty = 0
		if f.IsAck() {
			return nil
		}
		return h.locked(func() error { return h.queueCtl(h2Ctl{kind: ctlPingAck, data: f.Data}) })
	case *http2.WindowUpdateFrame:
		h.empty = 0
		return h.locked(func() error { return h.onWindowUpdate(f) })
	case *http2.RSTStreamFrame:
		h.empty = 0
		return h.locked(func() error {
			id := f.StreamID
			if id > h.maxID {
				return h2ConnError{http2.ErrCodeProtocol, "RST_STREAM on an idle stream"}
			}
			if s := h.streams[id]; s != nil {
				h.dropLocked(s, errH2StreamReset)
			}
			return nil
		})
	case *http2.PriorityFrame:
		if f.StreamDep == f.StreamID {
			return h.locked(func() error {
				if s := h.streams[f.StreamID]; s != nil {
					h.resetLocked(s, http2.ErrCodeProtocol, errH2StreamReset)
					return nil
				}
				return h.queueCtl(h2Ctl{kind: ctlRST, id: f.StreamID, code: http2.ErrCodeProtocol})
			})
		}
		return h.emptyFrame()
	case *http2.GoAwayFrame:
		h.shutdownReq.Store(true)
		h.wakeWriter()
		return nil
	case *http2.PushPromiseFrame:
		return h.connError(http2.ErrCodeProtocol, "PUSH_PROMISE from a client")
	default:
		return h.emptyFrame()
	}
}

// emptyFrame counts a frame that carried nothing useful.
func (h *h2Conn) emptyFrame() error {
	h.empty++
	if h.empty > h2MaxEmptyFrames {
		h.cfg.countErr("empty_frame_flood")
		return h.connError(http2.ErrCodeEnhanceYourCalm, "too many empty frames")
	}
	return nil
}

func (h *h2Conn) onSettings(f *http2.SettingsFrame) error {
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				return h2ConnError{http2.ErrCode(ce), "bad setting " + s.String()}
			}
			return h2ConnError{http2.ErrCodeProtocol, "bad setting " + s.String()}
		}
		switch s.ID {
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - int64(h.peerInitWin)
			h.peerInitWin = int32(s.Val)
			for _, st := range h.streams {
				st.sendWin += delta
				if st.sendWin > 1<<31-1 {
					return h2ConnError{http2.ErrCodeFlowControl, "stream window overflow"}
				}
				if delta > 0 {
					h.readyLocked(st)
				}
			}
		case http2.SettingMaxFrameSize:
			h.peerMaxFrame = s.Val
		case http2.SettingHeaderTableSize:
			h.enc.SetMaxDynamicTableSize(min(s.Val, h.cfg.encTable))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return h.queueCtl(h2Ctl{kind: ctlSettingsAck})
}

func (h *h2Conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	id, inc := f.StreamID, int64(f.Increment)
	if id == 0 {
		h.sendWin += inc
		if h.sendWin > 1<<31-1 {
			return h2ConnError{http2.ErrCodeFlowControl, "connection window overflow"}
		}
		for _, s := range h.streams {
			h.readyLocked(s)
		}
		return nil
	}
	if id > h.maxID {
		return h2ConnError{http2.ErrCodeProtocol, "WINDOW_UPDATE on an idle stream"}
	}
	s := h.streams[id]
	if s == nil {
		return nil // closed
	}
	s.sendWin += inc
	if s.sendWin > 1<<31-1 {
		h.resetLocked(s, http2.ErrCodeFlowControl, errH2StreamReset)
		return nil
	}
	h.readyLocked(s)
	return nil
}

// onData takes a DATA frame.
func (h *h2Conn) onData(f *http2.DataFrame) error {
	id := f.StreamID
	n := int64(f.Length)
	if n > h.recvWin {
		return h2ConnError{http2.ErrCodeFlowControl, "connection window exceeded"}
	}
	h.recvWin -= n
	data := f.Data()
	if len(data) == 0 && !f.StreamEnded() {
		h.empty++
		if h.empty > h2MaxEmptyFrames {
			return h2ConnError{http2.ErrCodeEnhanceYourCalm, "too many empty DATA frames"}
		}
	} else {
		h.empty = 0
	}
	s := h.streams[id]
	if s == nil || s.remoteClosed {
		h.recvOwed += n
		if id > h.maxID {
			return h2ConnError{http2.ErrCodeProtocol, "DATA on an idle stream"}
		}
		if s != nil {
			h.resetLocked(s, http2.ErrCodeStreamClosed, errH2StreamReset)
			return nil
		}
		return h.queueCtl(h2Ctl{kind: ctlRST, id: id, code: http2.ErrCodeStreamClosed})
	}
	if n > int64(s.recvWin) {
		h.recvOwed += n
		h.resetLocked(s, http2.ErrCodeFlowControl, errH2StreamReset)
		return nil
	}
	s.recvWin -= int32(n)
	// Padding is given back at once, to both windows.
	if pad := n - int64(len(data)); pad > 0 {
		h.recvOwed += pad
		s.recvOwed += int32(pad)
	}
	s.gotLen += int64(len(data))
	if s.declLen >= 0 && s.gotLen > s.declLen {
		h.recvOwed += int64(len(data))
		h.resetLocked(s, http2.ErrCodeProtocol, errH2StreamReset)
		return nil
	}
	if len(data) > 0 {
		if s.bodyClosed {
			h.recvOwed += int64(len(data))
			s.recvOwed += int32(len(data))
		} else {
			s.in = append(s.in, data...)
			h.held += int64(len(data))
			// The connection's credit goes back at once while the
			// connection holds little for unread bodies: a handler that
			// does not read stalls its own stream only.
			if h.held <= h2ConnHold {
				h.recvOwed += int64(len(data))
			} else {
				s.connUnpaid += int64(len(data))
			}
			s.signal()
		}
	}
	if f.StreamEnded() {
		return h.endRemoteLocked(s)
	}
	return nil
}

// endRemoteLocked: the peer ended its side of s.
func (h *h2Conn) endRemoteLocked(s *h2Stream) error {
	if s.declLen >= 0 && s.gotLen != s.declLen {
		h.resetLocked(s, http2.ErrCodeProtocol, errH2StreamReset)
		return nil
	}
	s.remoteClosed = true
	s.signal()
	if s.localClosed {
		h.removeLocked(s)
	}
	return nil
}

// onHeaders takes a HEADERS block: a new stream (returned, to start) or
// a request's trailer.
func (h *h2Conn) onHeaders(t *weft.Task, f *http2.MetaHeadersFrame) (*h2Stream, error) {
	h.empty = 0
	id := f.StreamID
	if id%2 == 0 {
		return nil, h2ConnError{http2.ErrCodeProtocol, "even stream ID from a client"}
	}
	if s := h.streams[id]; s != nil {
		if s.remoteClosed {
			h.resetLocked(s, http2.ErrCodeStreamClosed, errH2StreamReset)
			return nil, nil
		}
		if !f.StreamEnded() || len(f.PseudoFields()) > 0 {
			h.resetLocked(s, http2.ErrCodeProtocol, errH2StreamReset)
			return nil, nil
		}
		s.setTrailer(f.RegularFields())
		return nil, h.endRemoteLocked(s)
	}
	if id <= h.maxID {
		return nil, h2ConnError{http2.ErrCodeStreamClosed, "HEADERS on a closed stream"}
	}
	h.maxID = id
	if f.HasPriority() && f.Priority.StreamDep == id {
		return nil, h.queueCtl(h2Ctl{kind: ctlRST, id: id, code: http2.ErrCodeProtocol})
	}
	if h.goAway || h.dead != nil {
		return nil, nil // past GOAWAY: ignored
	}
	if uint32(len(h.streams)) >= h.cfg.maxStreams {
		h.cfg.countErr("over_max_streams")
		return nil, h.queueCtl(h2Ctl{kind: ctlRST, id: id, code: http2.ErrCodeRefusedStream})
	}
	if len(h.waiting) >= 4*int(h.cfg.maxStreams) {
		// Streams opened and reset faster than their handlers end.
		h.cfg.countErr("too_many_early_resets")
		return nil, h2ConnError{http2.ErrCodeEnhanceYourCalm, "too many streams waiting for handlers (rapid reset)"}
	}
	s, code := h.newStream(id, f)
	if code != http2.ErrCodeNo {
		return nil, h.queueCtl(h2Ctl{kind: ctlRST, id: id, code: code})
	}
	if srv := h.sv.s; srv.ReadTimeout > 0 || srv.WriteTimeout > 0 {
		now := t.Now()
		if srv.ReadTimeout > 0 && !f.StreamEnded() {
			s.readDL = now.Add(srv.ReadTimeout).UnixNano()
			h.setDeadlineLocked(s.readDL)
		}
		if srv.WriteTimeout > 0 {
			s.writeDL = now.Add(srv.WriteTimeout).UnixNano()
			h.setDeadlineLocked(s.writeDL)
		}
	}
	h.streams[id] = s
	if f.StreamEnded() {
		s.remoteClosed = true
	}
	if h.handlers >= int(h.cfg.maxStreams)+h2ResetSlack {
		h.waiting = append(h.waiting, s)
		return nil, nil
	}
	h.handlers++
	return s, nil
}

// resetLocked resets s from the server's side: RST_STREAM code, and its
// handler's context and task are cancelled.
func (h *h2Conn) resetLocked(s *h2Stream, code http2.ErrCode, cause error) {
	h.ctl = append(h.ctl, h2Ctl{kind: ctlRST, id: s.id, code: code})
	h.dropLocked(s, cause)
}

// dropLocked ends s: it leaves the connection's streams, its pending
// output is dropped, and its handler is told.
func (h *h2Conn) dropLocked(s *h2Stream, cause error) {
	s.reset = true
	s.localClosed, s.remoteClosed = true, true
	h.releaseInLocked(s)
	h.removeLocked(s)
	s.cancelLocked(cause)
}

// releaseInLocked drops s's unread body, giving its connection credit
// back.
func (h *h2Conn) releaseInLocked(s *h2Stream) {
	h.held -= int64(len(s.in))
	h.recvOwed += s.connUnpaid
	s.connUnpaid = 0
	s.in = nil
}

// removeLocked takes s off the open streams.
func (h *h2Conn) removeLocked(s *h2Stream) {
	if h.streams[s.id] == s {
		delete(h.streams, s.id)
		h.releaseLocked(s)
	}
}

// readyLocked puts s in the writer's list if it has output to send.
func (h *h2Conn) readyLocked(s *h2Stream) {
	if !s.queued && s.hasOutput() {
		s.queued = true
		h.ready = append(h.ready, s)
	}
}

// startStream starts s's handler in a task of its own.
func (h *h2Conn) startStream(s *h2Stream) {
	p := weft.GoIn(h.g, s.run)
	h.mu.Lock()
	s.task = p
	if s.reset {
		p.CancelWithCause(s.cause)
	}
	h.mu.Unlock()
}

// handlerDone: s's handler task ends; a waiting stream gets its slot.
func (h *h2Conn) handlerDone() {
	h.mu.Lock()
	var next *h2Stream
	for len(h.waiting) > 0 && next == nil {
		next = h.waiting[0]
		h.waiting = h.waiting[1:]
		if next.reset {
			next = nil
		}
	}
	if next == nil {
		h.handlers--
	}
	h.mu.Unlock()
	if next != nil {
		h.startStream(next)
	}
	h.wakeWriter()
}

// logPanic logs a handler's panic.
func (h *h2Conn) logPanic(r any, req *http.Request) {
	if r == http.ErrAbortHandler {
		return
	}
	h.sv.log.Error("whttp: panic serving request", "remote", h.c.remote, "proto", "HTTP/2.0",
		"method", req.Method, "uri", req.RequestURI, "panic", r, "stack", string(debug.Stack()))
}

// reqContext returns the base context of the connection's requests.
func (h *h2Conn) reqContext() context.Context { return h.c.base() }
