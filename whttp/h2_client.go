package whttp

// HTTP/2 on the client's side: one connection per host and Run carries
// the requests of every task at once, each on a stream of its own.
//
// There is no task per connection (a Run ends when its tasks do, and a
// pooled connection must not keep it alive): the tasks that use the
// connection share its two jobs. Writing is a turn (writing, under mu,
// with a queue of Events), held to encode a header block (the HPACK
// encoder's state follows the bytes on the wire) and write a batch of
// frames; the write itself is shielded from cancellation (Task.Protect),
// since a frame cut in two would end the connection for every stream.
// The reader never waits for that turn: the frames it owes (SETTINGS and
// PING acknowledgements, WINDOW_UPDATE, RST_STREAM) are left to the
// turn's holder, which writes them before it lets go, so a writer stuck
// on a full socket never stops the reading that may unstick it.
//
// Reading is a turn too, but not a lock: a task that waits for something
// of its stream (a response header, body bytes, window, a stream slot)
// becomes the reader if nobody reads, and otherwise parks on an Event of
// its own. The reader reads whole frames, files each under its stream
// under mu, and wakes every parked task whose wait is over; once its own
// wait is over it gives the turn to the first parked task (which then
// reads for itself and the others). So a frame for any stream wakes its
// task at once, whoever reads.
//
// Frames are cut from a buffer of the connection's own (rbuf) and handed
// to x/net's Framer only once whole, so a read interrupted by the
// reader's cancellation loses nothing and the next reader carries on.
// A stream's wait must also end on things that come from outside the
// connection (its request's context): abort marks the stream and wakes
// its task, and if that task is the reader, sets a read deadline in the
// past (a "kick"), which the reader takes back before it reads on.

import (
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
	fr     *http2.Framer // reads src; writes wbuf
	src    h2FrameSrc    // the whole frames the framer reads next
	rbuf   []byte        // reader's turn: bytes read, not yet framed, from roff
	roff   int           // reader's turn
	wbuf   bufferW
	enc    *hpack.Encoder
	hbuf   bufferW

	mu          sync.Mutex
	streams     map[uint32]*h2ClientStream // mu: streams open
	nextID      uint32                     // mu
	maxStreams  uint32                     // mu: the server's limit
	peerInitWin int32                      // mu
	peerMaxFrm  uint32                     // mu
	sendWin     int64                      // mu
	recvOwed    int64                      // mu: connection credit to give back
	dead        error                      // mu: no more new streams (GOAWAY, failure, close)
	closed      bool                       // mu: the socket is closed: nothing more comes
	reading     bool                       // mu: a task has the reader's turn
	readFor     *h2ClientStream            // mu: the stream the reader waits for, if any
	kicked      bool                       // mu: the read deadline was set in the past to wake the reader
	waiters     []*h2Waiter                // mu: tasks parked until their wait is over
	writing     bool                       // mu: a task has the writer's turn
	wwait       []*weft.Event              // mu: tasks waiting for the writer's turn, first first
	ctl         []func()                   // mu: frames the reader left for the writer's turn
	idleSince   time.Time                  // mu: when the last stream ended (real time)
}

// h2ClientStream is one request's stream.
type h2ClientStream struct {
	id       uint32
	req      *http.Request
	isHead   bool
	resp     *http.Response // mu
	err      error          // mu: the stream failed (read on after the bytes received)
	in       []byte         // mu: body bytes received, not read
	got      int64          // mu: body bytes received in all
	inEOF    bool           // mu: the server ended its side
	sendWin  int64          // mu
	recvOwed int64          // mu
	sentEnd  bool           // mu: the client ended its side
	stopSend bool           // mu: the server needs no more of the request body
	trailer  http.Header    // mu
	stopCtx  func() bool    // stops watching the request's context
}

// h2Waiter is a task parked until cond (called under mu) holds, or until
// it is handed the reader's turn.
type h2Waiter struct {
	ev   weft.Event
	cond func() bool
}

const (
	h2ClientStreamWin = 4 << 20
	h2ClientConnWin   = 1 << 30
	h2ClientMaxFrame  = 16384    // SETTINGS_MAX_FRAME_SIZE we accept (the default)
	h2ClientMaxBlock  = 16 << 20 // bytes of one header block, frames included
)

var errH2ClientConnDead = errors.New("whttp: http2: connection closed")

// h2NotProcessed is the error of a request the server did not process
// (its stream is past a GOAWAY's last stream, or was refused): it may be
// sent again on another connection.
type h2NotProcessed struct{ cause error }

func (e *h2NotProcessed) Error() string {
	return "whttp: http2: request not processed by the server: " + e.cause.Error()
}

func (e *h2NotProcessed) Unwrap() error { return e.cause }

// h2GoAwayError is the cause of a connection's end by the server's
// GOAWAY.
type h2GoAwayError struct {
	code  http2.ErrCode
	debug string
}

func (e *h2GoAwayError) Error() string {
	if e.debug != "" {
		return fmt.Sprintf("whttp: http2: server sent GOAWAY (%v, %q)", e.code, e.debug)
	}
	return fmt.Sprintf("whttp: http2: server sent GOAWAY (%v)", e.code)
}

// newH2ClientConn starts HTTP/2 on a connection just made: the preface,
// the client's settings and window.
func (c *Client) newH2ClientConn(t *weft.Task, key poolKey, wc *weft.Conn, nc net.Conn, st *tls.ConnectionState) (*h2ClientConn, error) {
	cc := &h2ClientConn{
		client: c, key: key, wc: wc, nc: nc, tls: st,
		streams: make(map[uint32]*h2ClientStream), nextID: 1,
		maxStreams: 100, peerInitWin: 65535, peerMaxFrm: 16384, sendWin: 65535,
		idleSince: time.Now(),
	}
	cc.fr = http2.NewFramer(&cc.wbuf, &cc.src)
	cc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	cc.fr.MaxHeaderListSize = 10 << 20
	cc.fr.SetMaxReadFrameSize(h2ClientMaxFrame)
	cc.enc = hpack.NewEncoder(&cc.hbuf)
	cc.wbuf.Write([]byte(http2.ClientPreface))
	cc.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2ClientStreamWin},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 10 << 20},
	)
	cc.fr.WriteWindowUpdate(0, h2ClientConnWin-65535)
	if err := cc.flush(t); err != nil {
		return nil, err
	}
	return cc, nil
}

// h2FrameSrc is what the framer reads from: whole frames only.
type h2FrameSrc struct{ b []byte }

func (s *h2FrameSrc) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// h2WholeFrames returns the length of the frame at the start of b if it
// is all there, with the CONTINUATION frames that end its header block;
// zero if more must be read.
func h2WholeFrames(b []byte) (int, error) {
	off := 0
	for {
		if len(b)-off < 9 {
			return 0, nil
		}
		n := int(b[off])<<16 | int(b[off+1])<<8 | int(b[off+2])
		if n > h2ClientMaxFrame {
			return 0, http2.ConnectionError(http2.ErrCodeFrameSize)
		}
		typ, flags := http2.FrameType(b[off+3]), http2.Flags(b[off+4])
		end := off + 9 + n
		if end > h2ClientMaxBlock {
			return 0, errors.New("whttp: http2: header block too large")
		}
		if len(b) < end {
			return 0, nil
		}
		if off == 0 && typ != http2.FrameHeaders && typ != http2.FramePushPromise {
			return end, nil
		}
		if off > 0 && typ != http2.FrameContinuation || flags.Has(http2.FlagHeadersEndHeaders) {
			return end, nil // (the framer refuses a block cut by another frame)
		}
		off = end
	}
}

// readFrame reads the next frame; the caller has the reader's turn. An
// error of the socket (the reader's cancellation, say) leaves what was
// read in rbuf for the next reader.
func (cc *h2ClientConn) readFrame() (http2.Frame, error) {
	for {
		n, err := h2WholeFrames(cc.rbuf[cc.roff:])
		if err != nil {
			return nil, err
		}
		if n > 0 {
			cc.src.b = cc.rbuf[cc.roff : cc.roff+n]
			cc.roff += n
			return cc.fr.ReadFrame()
		}
		if cc.roff > 0 {
			m := copy(cc.rbuf, cc.rbuf[cc.roff:])
			cc.rbuf, cc.roff = cc.rbuf[:m], 0
		}
		if cap(cc.rbuf)-len(cc.rbuf) < 4<<10 {
			nb := make([]byte, len(cc.rbuf), max(2*cap(cc.rbuf), 16<<10))
			copy(nb, cc.rbuf)
			cc.rbuf = nb
		}
		m, err := cc.nc.Read(cc.rbuf[len(cc.rbuf):cap(cc.rbuf)])
		cc.rbuf = cc.rbuf[:len(cc.rbuf)+m]
		if err != nil && m == 0 {
			return nil, err
		}
	}
}

// flush writes what the framer put in wbuf, shielded from t's
// cancellation (a frame cut short would end the connection); the writer's turn held,
// or nobody else knows cc yet. A failure ends the connection.
func (cc *h2ClientConn) flush(t *weft.Task) error {
	err := t.Protect(func(*weft.Task) error {
		b := cc.wbuf.b
		cc.wbuf.b = b[:0]
		for len(b) > 0 {
			n, err := cc.nc.Write(b)
			if err != nil {
				return err
			}
			b = b[n:]
		}
		return nil
	})
	if err != nil {
		cc.fail(err)
	}
	return err
}

// lockW takes the writer's turn for t: a cancellation point.
func (cc *h2ClientConn) lockW(t *weft.Task) error {
	cc.mu.Lock()
	if !cc.writing {
		cc.writing = true
		cc.mu.Unlock()
		return nil
	}
	ev := new(weft.Event)
	cc.wwait = append(cc.wwait, ev)
	cc.mu.Unlock()
	if err := ev.Wait(t); err != nil {
		cc.mu.Lock()
		for i, x := range cc.wwait {
			if x == ev {
				cc.wwait = append(cc.wwait[:i], cc.wwait[i+1:]...)
				break
			}
		}
		handed := ev.IsSet()
		cc.mu.Unlock()
		if handed {
			cc.unlockW(t) // the turn came as the cancellation did: pass it on
		}
		return err
	}
	return nil // handed the turn
}

// unlockW gives up the writer's turn, first writing the frames the reader
// left; it hands the turn to the next waiting task, if any.
func (cc *h2ClientConn) unlockW(t *weft.Task) {
	for {
		cc.mu.Lock()
		if len(cc.ctl) > 0 && !cc.closed {
			fs := cc.ctl
			cc.ctl = nil
			cc.mu.Unlock()
			for _, f := range fs {
				f()
			}
			cc.flush(t) // a failure fails the connection
			continue
		}
		cc.ctl = nil
		if len(cc.wwait) > 0 {
			ev := cc.wwait[0]
			cc.wwait = append(cc.wwait[:0], cc.wwait[1:]...)
			ev.Set() // the turn passes on: writing stays true
		} else {
			cc.writing = false
		}
		cc.mu.Unlock()
		return
	}
}

// writeCtl writes f's frames (control frames, no header block) now if
// the writer's turn is free, or leaves them to its holder: it never waits
// for the turn.
func (cc *h2ClientConn) writeCtl(t *weft.Task, f func()) error {
	cc.mu.Lock()
	if cc.closed {
		cc.mu.Unlock()
		return cc.deadErr()
	}
	if cc.writing {
		cc.ctl = append(cc.ctl, f)
		cc.mu.Unlock()
		return nil
	}
	cc.writing = true
	cc.mu.Unlock()
	f()
	err := cc.flush(t)
	cc.unlockW(t)
	return err
}

// write runs f (which writes frames with cc.fr) in the writer's turn and
// sends them. Waiting for the turn is a cancellation point; the write is
// not.
func (cc *h2ClientConn) write(t *weft.Task, f func()) error {
	if err := cc.lockW(t); err != nil {
		return err
	}
	defer cc.unlockW(t)
	cc.mu.Lock()
	closed := cc.closed
	cc.mu.Unlock()
	if closed {
		return cc.deadErr()
	}
	f()
	return cc.flush(t)
}

func (cc *h2ClientConn) deadErr() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.dead != nil {
		return cc.dead
	}
	return errH2ClientConnDead
}

// fail ends the connection: every stream fails with err, every parked
// task wakes, and the client forgets the connection.
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
	cc.wakeLocked()
	cc.mu.Unlock()
	cc.wc.Close()
	cc.client.forgetH2(cc)
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
	return len(cc.streams) == 0
}

// wakeLocked wakes the parked tasks whose wait is over; mu held.
func (cc *h2ClientConn) wakeLocked() {
	keep := cc.waiters[:0]
	for _, w := range cc.waiters {
		if cc.closed || w.cond() {
			w.ev.Set()
		} else {
			keep = append(keep, w)
		}
	}
	clear(cc.waiters[len(keep):])
	cc.waiters = keep
}

// passTurnLocked hands the reader's turn, now free, to the first parked
// task; mu held.
func (cc *h2ClientConn) passTurnLocked() {
	if !cc.reading && len(cc.waiters) > 0 {
		w := cc.waiters[0]
		cc.waiters = append(cc.waiters[:0], cc.waiters[1:]...)
		w.ev.Set()
	}
}

// await suspends t until cond (called under mu) holds, reading frames for
// every stream when nobody else does. s is the stream t waits for, if
// any (a kick of the reader names it). It returns nil once cond holds,
// the connection's error once it is closed, and t's cancellation (the
// connection unharmed) if t is cancelled.
func (cc *h2ClientConn) await(t *weft.Task, s *h2ClientStream, cond func() bool) error {
	for {
		cc.mu.Lock()
		if cond() {
			cc.mu.Unlock()
			return nil
		}
		if cc.closed {
			err := cc.dead
			cc.mu.Unlock()
			return err
		}
		if !cc.reading {
			cc.reading, cc.readFor = true, s
			cc.mu.Unlock()
			err := cc.readUntil(t, cond)
			cc.mu.Lock()
			cc.reading, cc.readFor = false, nil
			if cc.kicked {
				cc.kicked = false
				cc.wc.SetReadDeadline(time.Time{})
			}
			cc.passTurnLocked()
			cc.mu.Unlock()
			return err
		}
		w := &h2Waiter{cond: cond}
		cc.waiters = append(cc.waiters, w)
		cc.mu.Unlock()
		if err := w.ev.Wait(t); err != nil {
			cc.mu.Lock()
			for i, x := range cc.waiters {
				if x == w {
					cc.waiters = append(cc.waiters[:i], cc.waiters[i+1:]...)
					break
				}
			}
			if w.ev.IsSet() {
				cc.passTurnLocked() // it may have been handed the turn
			}
			cc.mu.Unlock()
			return err
		}
	}
}

// readUntil reads and files frames until cond holds; t has the reader's
// turn.
func (cc *h2ClientConn) readUntil(t *weft.Task, cond func() bool) error {
	for {
		f, err := cc.readFrame()
		if err != nil {
			cc.mu.Lock()
			kicked := cc.kicked
			if kicked {
				cc.kicked = false
				cc.wc.SetReadDeadline(time.Time{})
			}
			cc.mu.Unlock()
			var se http2.StreamError
			switch {
			case kicked && isTimeout(err):
				// woken for a stream whose request's context ended
			case errors.Is(err, context.Canceled):
				return err // t's cancellation: the connection goes on
			case errors.As(err, &se):
				cc.mu.Lock()
				if s := cc.streams[se.StreamID]; s != nil {
					if s.err == nil {
						s.err = se
					}
					cc.removeLocked(s)
					cc.wakeLocked()
				}
				cc.mu.Unlock()
				if err := cc.writeCtl(t, func() { cc.fr.WriteRSTStream(se.StreamID, se.Code) }); err != nil {
					return err
				}
			default:
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				cc.mu.Lock()
				closed := cc.closed
				cc.mu.Unlock()
				if closed {
					return cc.deadErr()
				}
				cc.fail(fmt.Errorf("whttp: http2: connection lost: %w", err))
				return cc.deadErr()
			}
		} else if err := cc.handle(t, f); err != nil {
			return err
		}
		cc.mu.Lock()
		ok, closed := cond(), cc.closed
		cc.mu.Unlock()
		if ok {
			return nil
		}
		if closed {
			return cc.deadErr()
		}
	}
}

// handle files frame f; t has the reader's turn.
func (cc *h2ClientConn) handle(t *weft.Task, f http2.Frame) error {
	var reply func()
	var connErr error
	cc.mu.Lock()
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			table := int64(-1)
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
					table = int64(min(s.Val, 4096))
				}
				return nil
			})
			reply = func() {
				// The encoder is the writer's turn's: its new table
				// size applies from the header block after the ACK.
				if table >= 0 {
					cc.enc.SetMaxDynamicTableSize(uint32(table))
				}
				cc.fr.WriteSettingsAck()
			}
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
			if err := cc.onHeaders(s, f); err != nil {
				s.err = err
				cc.removeLocked(s)
				id := s.id
				reply = func() { cc.fr.WriteRSTStream(id, http2.ErrCodeProtocol) }
			}
		}
	case *http2.DataFrame:
		n := int64(f.Length)
		cc.recvOwed += n
		if s := cc.streams[f.StreamID]; s != nil && s.err == nil {
			data := f.Data()
			s.recvOwed += n - int64(len(data)) // padding: given back with the rest
			s.got += int64(len(data))
			switch {
			case s.resp == nil:
				s.err = errors.New("whttp: http2: DATA before the response header")
			case s.resp.ContentLength >= 0 && s.got > s.resp.ContentLength:
				s.err = fmt.Errorf("whttp: http2: server sent more than the declared Content-Length %d", s.resp.ContentLength)
			case s.isHead && len(data) > 0:
				s.err = errors.New("whttp: http2: body in a response to HEAD")
			}
			if s.err != nil {
				cc.removeLocked(s)
				id := s.id
				reply = func() { cc.fr.WriteRSTStream(id, http2.ErrCodeProtocol) }
				break
			}
			s.in = append(s.in, data...)
			if f.StreamEnded() {
				cc.endLocked(s)
			}
		}
		if cc.recvOwed >= 1<<20 && reply == nil {
			owed := uint32(cc.recvOwed)
			cc.recvOwed = 0
			reply = func() { cc.fr.WriteWindowUpdate(0, owed) }
		}
	case *http2.RSTStreamFrame:
		if s := cc.streams[f.StreamID]; s != nil {
			switch {
			case f.ErrCode == http2.ErrCodeNo && s.inEOF:
				s.stopSend = true // the whole response came: the rest of the request is not wanted
			case f.ErrCode == http2.ErrCodeRefusedStream && s.resp == nil:
				s.err = &h2NotProcessed{cause: http2.StreamError{StreamID: f.StreamID, Code: f.ErrCode}}
			case s.err == nil:
				s.err = http2.StreamError{StreamID: f.StreamID, Code: f.ErrCode}
			}
			cc.removeLocked(s)
		}
	case *http2.GoAwayFrame:
		ga := &h2GoAwayError{code: f.ErrCode, debug: string(f.DebugData())}
		if cc.dead == nil {
			cc.dead = ga
		}
		for id, s := range cc.streams {
			if id > f.LastStreamID {
				if s.err == nil {
					s.err = &h2NotProcessed{cause: ga}
				}
				cc.removeLocked(s)
			}
		}
	case *http2.PushPromiseFrame:
		connErr = http2.ConnectionError(http2.ErrCodeProtocol) // push was refused in our SETTINGS
	}
	cc.wakeLocked()
	dead := cc.dead
	cc.mu.Unlock()
	if dead != nil {
		cc.client.forgetH2(cc)
	}
	if connErr != nil {
		cc.fail(connErr)
		return cc.deadErr()
	}
	if reply != nil {
		if err := cc.writeCtl(t, reply); err != nil {
			return err
		}
	}
	cc.closeIfDone()
	return nil
}

// closeIfDone closes a connection the server sent GOAWAY on (or that is
// otherwise done) once its last stream has ended.
func (cc *h2ClientConn) closeIfDone() {
	cc.mu.Lock()
	done := cc.dead != nil && !cc.closed && len(cc.streams) == 0
	dead := cc.dead
	cc.mu.Unlock()
	if done {
		cc.fail(dead)
	}
}

// onHeaders files a header block: the response's, a 1xx, or the trailer;
// mu held.
func (cc *h2ClientConn) onHeaders(s *h2ClientStream, f *http2.MetaHeadersFrame) error {
	if s.resp != nil {
		if !f.StreamEnded() {
			return errors.New("whttp: http2: trailer without END_STREAM")
		}
		if len(f.PseudoFields()) > 0 {
			return errors.New("whttp: http2: pseudo-header in the trailer")
		}
		if s.trailer == nil {
			s.trailer = make(http.Header)
		}
		for _, hf := range f.RegularFields() {
			k := textproto.CanonicalMIMEHeaderKey(hf.Name)
			s.trailer[k] = append(s.trailer[k], hf.Value)
		}
		cc.endLocked(s)
		return nil
	}
	code, err := strconv.Atoi(f.PseudoValue("status"))
	if err != nil || code < 100 || code > 999 {
		return errors.New("whttp: http2: malformed response status")
	}
	if code < 200 {
		if f.StreamEnded() {
			return errors.New("whttp: http2: 1xx response with END_STREAM")
		}
		if code == http.StatusSwitchingProtocols {
			return errors.New("whttp: http2: 101 Switching Protocols is not allowed in HTTP/2")
		}
		return nil // informational (100 Continue, 103 Early Hints): the response follows
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
	if vv := hdr["Content-Length"]; len(vv) > 0 {
		n, err := strconv.ParseUint(vv[0], 10, 63)
		if err != nil || len(vv) > 1 && !allSame(vv) {
			return fmt.Errorf("whttp: http2: invalid Content-Length %q", vv)
		}
		resp.ContentLength = int64(n)
	} else if f.StreamEnded() && !s.isHead {
		resp.ContentLength = 0
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
	delete(hdr, "Trailer")
	s.resp = resp
	if f.StreamEnded() {
		cc.endLocked(s)
	}
	return nil
}

func allSame(vv []string) bool {
	for _, v := range vv[1:] {
		if v != vv[0] {
			return false
		}
	}
	return true
}

// endLocked: the server ended its side of s; mu held.
func (cc *h2ClientConn) endLocked(s *h2ClientStream) {
	s.inEOF = true
	if s.resp != nil && s.resp.ContentLength >= 0 && !s.isHead && s.got != s.resp.ContentLength && s.err == nil {
		s.err = fmt.Errorf("whttp: http2: response body of %d bytes, Content-Length %d: %w", s.got, s.resp.ContentLength, io.ErrUnexpectedEOF)
	}
	if s.sentEnd {
		cc.removeLocked(s)
	}
}

// removeLocked takes s off the open streams; mu held. A connection the
// server sent GOAWAY on closes with its last stream.
func (cc *h2ClientConn) removeLocked(s *h2ClientStream) {
	if cc.streams[s.id] == s {
		delete(cc.streams, s.id)
		if len(cc.streams) == 0 {
			cc.idleSince = time.Now()
		}
	}
}

// roundTrip sends req on a stream of cc and returns the response once
// its header came; its body is read from the stream as the caller reads.
// Its request body is sent first, within the flow-control windows (a
// response that comes meanwhile is kept). A request cc could not take
// (the connection was going away) fails with an *h2NotProcessed.
func (cc *h2ClientConn) roundTrip(t *weft.Task, req *http.Request) (*http.Response, error) {
	fields, err := h2RequestFields(req)
	if err != nil {
		return nil, err
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	// A stream slot: past the server's MaxConcurrentStreams, requests wait
	// for one on this connection (as net/http's do by default).
	if err := cc.await(t, nil, func() bool { return cc.dead != nil || uint32(len(cc.streams)) < cc.maxStreams }); err != nil {
		return nil, cc.notSent(err)
	}
	if err := cc.lockW(t); err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if cc.dead != nil || uint32(len(cc.streams)) >= cc.maxStreams {
		dead := cc.dead
		cc.mu.Unlock()
		cc.unlockW(t)
		if dead != nil {
			return nil, cc.notSent(dead)
		}
		return cc.roundTrip(t, req) // another task took the slot
	}
	s := &h2ClientStream{id: cc.nextID, req: req, isHead: req.Method == http.MethodHead, sendWin: int64(cc.peerInitWin)}
	cc.nextID += 2
	cc.streams[s.id] = s
	maxFrm := int(cc.peerMaxFrm)
	s.sentEnd = !hasBody
	cc.mu.Unlock()
	cc.writeHeaders(s.id, fields, !hasBody, maxFrm)
	err = cc.flush(t)
	cc.unlockW(t)
	if err != nil {
		return nil, err
	}
	if ctx := req.Context(); ctx.Done() != nil {
		s.stopCtx = context.AfterFunc(ctx, func() { cc.abort(s, context.Cause(ctx)) })
	}
	if hasBody {
		if err := cc.sendBody(t, s, req); err == errH2BodyNotWanted {
			cc.reset(t, s, nil)
		} else if err != nil {
			cc.mu.Lock()
			answered := s.resp != nil && err == s.err // the server answered and reset the stream
			if np, ok := s.err.(*h2NotProcessed); ok {
				err = np // (a write may have failed first, as the connection closed)
			}
			cc.mu.Unlock()
			cc.reset(t, s, err)
			if !answered {
				s.unwatch()
				return nil, cc.streamErr(s, err)
			}
		}
	}
	if err := cc.await(t, s, func() bool { return s.resp != nil || s.err != nil }); err != nil {
		cc.reset(t, s, err)
		s.unwatch()
		return nil, cc.streamErr(s, err)
	}
	cc.mu.Lock()
	resp, serr, ended := s.resp, s.err, s.inEOF && len(s.in) == 0
	cc.mu.Unlock()
	if resp == nil {
		cc.reset(t, s, serr)
		s.unwatch()
		return nil, cc.streamErr(s, serr)
	}
	if s.isHead || ended && serr == nil && len(resp.Trailer) == 0 && s.trailer == nil {
		// No body to read (HEAD, or the header ended the stream).
		cc.reset(t, s, nil)
		s.unwatch()
		resp.Body = http.NoBody
		return resp, nil
	}
	resp.Body = &h2ClientBody{cc: cc, s: s}
	return resp, nil
}

// notSent turns the error of a request that never left into one that
// says it may be sent again, if the connection was going away.
func (cc *h2ClientConn) notSent(err error) error {
	var np *h2NotProcessed
	if errors.As(err, &np) {
		return err
	}
	cc.mu.Lock()
	dead := cc.dead
	cc.mu.Unlock()
	if dead != nil && err == dead {
		return &h2NotProcessed{cause: err}
	}
	return err
}

// streamErr is what Do returns for s's failure err: the cause of the
// request's context if it ended.
func (cc *h2ClientConn) streamErr(s *h2ClientStream, err error) error {
	if ctx := s.req.Context(); ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// writeHeaders encodes fields and writes them as HEADERS and
// CONTINUATION frames of at most maxFrm; the writer's turn held.
func (cc *h2ClientConn) writeHeaders(id uint32, fields []hpack.HeaderField, endStream bool, maxFrm int) {
	cc.hbuf.Reset()
	for _, f := range fields {
		cc.enc.WriteField(f)
	}
	block := cc.hbuf.b
	for first := true; first || len(block) > 0; first = false {
		frag := block[:min(len(block), maxFrm)]
		block = block[len(frag):]
		if first {
			cc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag, EndStream: endStream, EndHeaders: len(block) == 0})
		} else {
			cc.fr.WriteContinuation(id, len(block) == 0, frag)
		}
	}
}

// abort fails s with err from outside its task (its request's context
// ended): its task wakes, and if it is reading, the read is cut short.
// Any goroutine may call it.
func (cc *h2ClientConn) abort(s *h2ClientStream, err error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if s.err != nil || cc.closed {
		return
	}
	s.err = err
	if cc.reading && cc.readFor == s && !cc.kicked {
		cc.kicked = true
		cc.wc.SetReadDeadline(aLongTimeAgo)
	}
	cc.wakeLocked()
}

// sendBody sends req's body within the flow-control windows, and its
// trailer. It stops early, with no error, when the server has answered
// in full and wants no more of it.
func (cc *h2ClientConn) sendBody(t *weft.Task, s *h2ClientStream, req *http.Request) error {
	body := req.Body
	defer body.Close()
	var buf []byte
	var sent int64
	cl := req.ContentLength
	for {
		if buf == nil {
			size := 16 << 10
			if cl > 0 && cl < int64(size) {
				size = int(cl) + 1 // room to see a body longer than declared
			}
			buf = make([]byte, size)
		}
		n, rerr := body.Read(buf)
		if rerr != nil && rerr != io.EOF {
			return rerr
		}
		sent += int64(n)
		end := rerr == io.EOF
		if cl > 0 && (sent > cl || end && sent != cl) {
			return fmt.Errorf("http: ContentLength=%d with Body length %d", cl, sent)
		}
		var trailer []hpack.HeaderField
		if end && len(req.Trailer) > 0 {
			var err error
			if trailer, err = h2TrailerFields(req.Trailer); err != nil {
				return err
			}
		}
		p := buf[:n]
		for len(p) > 0 || end && trailer == nil {
			var w int64
			if err := cc.await(t, s, func() bool {
				w = min(s.sendWin, cc.sendWin, int64(cc.peerMaxFrm), int64(len(p)))
				return w > 0 || len(p) == 0 || s.err != nil || s.stopSend || s.inEOF
			}); err != nil {
				return err
			}
			cc.mu.Lock()
			if s.err != nil || s.stopSend || s.inEOF {
				err := s.err
				cc.mu.Unlock()
				if err == nil {
					err = errH2BodyNotWanted
				}
				return err
			}
			w = min(s.sendWin, cc.sendWin, int64(cc.peerMaxFrm), int64(len(p)))
			s.sendWin -= w
			cc.sendWin -= w
			last := end && trailer == nil && int(w) == len(p)
			cc.mu.Unlock()
			chunk := p[:w]
			if err := cc.write(t, func() { cc.fr.WriteData(s.id, last, chunk) }); err != nil {
				return err
			}
			p = p[w:]
			if last {
				cc.endSend(s)
				return nil
			}
		}
		if end {
			// The trailer: a HEADERS frame that ends the stream.
			if err := cc.lockW(t); err != nil {
				return err
			}
			cc.mu.Lock()
			maxFrm := int(cc.peerMaxFrm)
			serr := s.err
			cc.mu.Unlock()
			if serr == nil {
				cc.writeHeaders(s.id, trailer, true, maxFrm)
				serr = cc.flush(t)
			}
			cc.unlockW(t)
			if serr != nil {
				return serr
			}
			cc.endSend(s)
			return nil
		}
	}
}

// endSend notes that the client ended its side of s.
func (cc *h2ClientConn) endSend(s *h2ClientStream) {
	cc.mu.Lock()
	s.sentEnd = true
	if s.inEOF {
		cc.removeLocked(s)
		cc.wakeLocked()
	}
	cc.mu.Unlock()
	cc.closeIfDone()
}

// errH2BodyNotWanted: the server answered in full before the request
// body was sent; the rest is not sent.
var errH2BodyNotWanted = errors.New("whttp: http2: request body not wanted")

// unwatch stops watching s's request's context.
func (s *h2ClientStream) unwatch() {
	if s.stopCtx != nil {
		s.stopCtx()
	}
}

// reset abandons s: if it is still open, RST_STREAM CANCEL. err, if not
// nil, is what a later read of its body returns.
func (cc *h2ClientConn) reset(t *weft.Task, s *h2ClientStream, err error) {
	cc.mu.Lock()
	_, open := cc.streams[s.id]
	open = open && !cc.closed
	cc.removeLocked(s)
	if s.err == nil && err != nil {
		s.err = err
	}
	cc.wakeLocked()
	cc.mu.Unlock()
	if open {
		// Shielded: a cancelled task still says it is gone.
		t.Protect(func(t *weft.Task) error {
			return cc.write(t, func() { cc.fr.WriteRSTStream(s.id, http2.ErrCodeCancel) })
		})
	}
	cc.closeIfDone()
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
	if !httpguts.ValidHostHeader(host) {
		return nil, fmt.Errorf("whttp: invalid Host %q", host)
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
		case "host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length", "trailer":
			continue
		case "te":
			// Only "trailers" may be sent in HTTP/2.
			if len(vv) != 1 || vv[0] != "trailers" {
				continue
			}
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
	if len(req.Trailer) > 0 {
		keys := make([]string, 0, len(req.Trailer))
		for k := range req.Trailer {
			if !httpguts.ValidHeaderFieldName(k) {
				return nil, fmt.Errorf("whttp: invalid trailer field name %q", k)
			}
			keys = append(keys, lowerHeader(k))
		}
		fields = append(fields, hpack.HeaderField{Name: "trailer", Value: strings.Join(keys, ",")})
	}
	if req.ContentLength > 0 {
		fields = append(fields, hpack.HeaderField{Name: "content-length", Value: strconv.FormatInt(req.ContentLength, 10)})
	} else if req.ContentLength == 0 && (req.Body == nil || req.Body == http.NoBody) && bodyMethod(method) {
		fields = append(fields, hpack.HeaderField{Name: "content-length", Value: "0"})
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		fields = append(fields, hpack.HeaderField{Name: "user-agent", Value: "weft-whttp"})
	}
	return fields, nil
}

// bodyMethod reports whether a request of method is expected to carry a
// body (net/http sends Content-Length: 0 for an empty one).
func bodyMethod(method string) bool {
	return method == "POST" || method == "PUT" || method == "PATCH"
}

// h2TrailerFields returns the trailer's block, as read after the body's
// end (the body may fill it in as it is read, as with net/http).
func h2TrailerFields(tr http.Header) ([]hpack.HeaderField, error) {
	var fields []hpack.HeaderField
	for k, vv := range tr {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("whttp: invalid trailer field name %q", k)
		}
		name := lowerHeader(k)
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("whttp: invalid trailer field value for %q", k)
			}
			fields = append(fields, hpack.HeaderField{Name: name, Value: v})
		}
	}
	if fields == nil {
		fields = []hpack.HeaderField{} // an empty trailer still ends the stream
	}
	return fields, nil
}

// h2ClientBody is a response body over HTTP/2. Any task of the Run that
// made the request may read it (each read suspends that task, which may
// take the connection's reader's turn); from a goroutine, or a task of
// another Run, a read panics with a "weft:" message. One Read at a time;
// Close may come from another task while a Read waits, and ends it.
type h2ClientBody struct {
	cc       *h2ClientConn
	s        *h2ClientStream
	deadline time.Time // Client.Timeout's, on the loop's clock; zero: none
	reading  bool      // cc.mu: a Read is under way
	done     bool      // cc.mu: closed, or ended
	err      error     // cc.mu: what reads return once done
}

var errH2BodyClosed = errors.New("whttp: read on a closed response body")

// caller returns the task that calls a method of the body, or panics.
func (b *h2ClientBody) caller(op string) *weft.Task {
	t, _ := loophook.Current().(*weft.Task)
	if t == nil {
		panic("weft: whttp: " + op + " of an HTTP/2 response body outside a task: use it from a task of the Run that called Do")
	}
	if loophook.Key(t) != b.cc.key.run {
		panic("weft: whttp: " + op + " of an HTTP/2 response body from a task of another Run than the one that called Do")
	}
	return t
}

func (b *h2ClientBody) Read(p []byte) (int, error) {
	t := b.caller("Read")
	cc := b.cc
	cc.mu.Lock()
	if b.reading {
		cc.mu.Unlock()
		panic("weft: whttp: two Reads of one HTTP/2 response body at once")
	}
	if b.done {
		err := b.err
		cc.mu.Unlock()
		return 0, err
	}
	b.reading = true
	cc.mu.Unlock()
	n, err := b.read(t, p)
	cc.mu.Lock()
	b.reading = false
	if b.done && n == 0 {
		err = b.err // closed meanwhile
	}
	cc.mu.Unlock()
	return n, err
}

func (b *h2ClientBody) read(t *weft.Task, p []byte) (int, error) {
	cc, s := b.cc, b.s
	if len(p) == 0 {
		return 0, nil
	}
	wait := func(t *weft.Task) (struct{}, error) {
		return struct{}{}, cc.await(t, s, func() bool { return len(s.in) > 0 || s.inEOF || s.err != nil })
	}
	var err error
	if b.deadline.IsZero() {
		_, err = wait(t)
	} else if _, err = weft.Timeout(t, b.deadline.Sub(t.Now()), wait); errors.Is(err, weft.ErrTimeout) {
		err = &timeoutError{err: err, msg: "whttp: http2: Client.Timeout exceeded while reading body"}
	}
	if err != nil {
		// The reading task was cancelled, Client.Timeout passed, or the
		// connection ended: the stream is given up.
		err = cc.streamErr(s, err)
		b.finish(t, err)
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
		if s.recvOwed >= h2ClientStreamWin/4 {
			upd, s.recvOwed = uint32(s.recvOwed), 0
		}
	}
	eof, serr := s.inEOF && len(s.in) == 0, s.err
	if eof && s.resp != nil {
		for k, vv := range s.trailer {
			if s.resp.Trailer == nil {
				s.resp.Trailer = make(http.Header)
			}
			s.resp.Trailer[k] = vv
		}
	}
	cc.mu.Unlock()
	if upd > 0 {
		id := s.id
		cc.writeCtl(t, func() { cc.fr.WriteWindowUpdate(id, upd) }) // a failure fails the connection
	}
	if n > 0 {
		return n, nil
	}
	if serr != nil {
		serr = cc.streamErr(s, serr)
		b.finish(t, serr)
		return 0, serr
	}
	if eof {
		b.finish(t, io.EOF)
		return 0, io.EOF
	}
	return 0, nil
}

// finish ends the body: reads return err from now on; a stream still open
// is reset.
func (b *h2ClientBody) finish(t *weft.Task, err error) {
	b.cc.mu.Lock()
	if !b.done {
		b.done, b.err = true, err
	}
	b.s.in = nil
	b.cc.mu.Unlock()
	b.cc.reset(t, b.s, nil)
	b.s.unwatch()
}

// Close ends the body; before its end, it resets the stream (RST_STREAM
// CANCEL), suspending only to take the writer's turn for that frame. A
// Read under way in another task returns.
func (b *h2ClientBody) Close() error {
	t := b.caller("Close")
	cc := b.cc
	cc.mu.Lock()
	if b.done {
		cc.mu.Unlock()
		return nil
	}
	if b.reading {
		// The reading task finishes the body as it wakes.
		b.done, b.err = true, errH2BodyClosed
		cc.mu.Unlock()
		cc.abort(b.s, errH2BodyClosed)
		return nil
	}
	cc.mu.Unlock()
	b.finish(t, errH2BodyClosed)
	return nil
}

// wantH2 reports whether the client speaks HTTP/2 to URLs of scheme:
// over TLS by default (offered by ALPN), over cleartext only when
// Protocols has UnencryptedHTTP2 and not HTTP1 (net/http's Transport's
// rule: with both, nothing says which the server speaks).
func (c *Client) wantH2(scheme string) bool {
	p := c.Protocols
	if scheme == "https" {
		return p == nil || p.HTTP2()
	}
	return p != nil && p.UnencryptedHTTP2() && !p.HTTP1()
}

// roundTripH2 sends req over HTTP/2 if the server speaks it: on the
// host's connection, or a new one. done false: the server does not speak
// HTTP/2 (TLS's ALPN chose something else); use HTTP/1, on conn if it is
// not nil (the TLS connection just made). A request the server did not
// process (past a GOAWAY's last stream, or refused) is sent again, on
// the host's connection if it still takes streams or a new one, when it
// has no body or its body can be had again (GetBody), as net/http does,
// up to 5 tries.
func (c *Client) roundTripH2(t *weft.Task, key poolKey, host string, req *http.Request, deadline time.Time) (resp *http.Response, conn *clientConn, done bool, err error) {
	for try := 0; ; try++ {
		cc, conn, err := c.getH2Conn(t, key, host, deadline)
		if err != nil {
			return nil, nil, true, err
		}
		if cc == nil {
			return nil, conn, false, nil
		}
		f := func(t *weft.Task) (*http.Response, error) { return cc.roundTrip(t, req) }
		if deadline.IsZero() {
			resp, err = f(t)
		} else {
			resp, err = weft.Timeout(t, deadline.Sub(t.Now()), f)
			if errors.Is(err, weft.ErrTimeout) {
				err = &timeoutError{err: err, msg: "whttp: http2: Client.Timeout exceeded while awaiting headers"}
			}
		}
		if err == nil {
			if b, ok := resp.Body.(*h2ClientBody); ok {
				b.deadline = deadline
			}
		}
		var np *h2NotProcessed
		if err == nil || !errors.As(err, &np) || try >= 4 || req.Context().Err() != nil {
			if err != nil && req.Context().Err() != nil {
				err = context.Cause(req.Context())
			}
			return resp, nil, true, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, nil, true, fmt.Errorf("%w (its body cannot be sent again: no GetBody)", err)
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, nil, true, gerr
			}
			r2 := *req
			r2.Body = body
			req = &r2
		}
	}
}

// getH2Conn returns the HTTP/2 connection for key, dialling it if there
// is none that can take a stream: nil (no error) if the server chose
// HTTP/1 by ALPN, with that TLS connection as conn if it may be used.
func (c *Client) getH2Conn(t *weft.Task, key poolKey, host string, deadline time.Time) (*h2ClientConn, *clientConn, error) {
	c.mu.Lock()
	cc := c.h2conns[key]
	no := c.noH2[key]
	c.mu.Unlock()
	if no {
		return nil, nil, nil
	}
	if cc != nil && cc.usable() && !cc.staleIdle() {
		return cc, nil, nil
	}
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
		return nil, nil, err
	}
	defer m.Unlock()
	c.mu.Lock()
	cc, no = c.h2conns[key], c.noH2[key]
	c.mu.Unlock()
	if no {
		return nil, nil, nil
	}
	if cc != nil && cc.usable() {
		if !cc.staleIdle() {
			return cc, nil, nil
		}
		cc.fail(errH2ClientConnDead) // idle past IdleConnTimeout
	}
	return c.dialH2(t, key, host, deadline)
}

// staleIdle reports whether cc has been idle for longer than the
// client's IdleConnTimeout.
func (cc *h2ClientConn) staleIdle() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.streams) == 0 && time.Since(cc.idleSince) > cc.client.idleTimeout()
}

// dialH2 dials an HTTP/2 connection for key. If TLS's ALPN chose
// HTTP/1.1, it returns no h2ClientConn and, when the client speaks
// HTTP/1, the connection made, for HTTP/1.
func (c *Client) dialH2(t *weft.Task, key poolKey, host string, deadline time.Time) (*h2ClientConn, *clientConn, error) {
	addr := strings.TrimPrefix(strings.TrimPrefix(key.addr, "http://"), "https://")
	dial := func(t *weft.Task) (*weft.Conn, error) { return weft.Dial(t, "tcp", addr) }
	var wc *weft.Conn
	var err error
	if deadline.IsZero() {
		wc, err = dial(t)
	} else {
		wc, err = weft.Timeout(t, deadline.Sub(t.Now()), dial)
		if errors.Is(err, weft.ErrTimeout) {
			err = &timeoutError{err: err, msg: "dial " + addr + ": Client.Timeout exceeded while dialling"}
		}
	}
	if err != nil {
		return nil, nil, err
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
		http1 := c.Protocols == nil || c.Protocols.HTTP1()
		cfg.NextProtos = []string{"h2"}
		if http1 {
			cfg.NextProtos = append(cfg.NextProtos, "http/1.1")
		}
		tc := weft.TLSClient(wc, cfg)
		wc.SetDeadline(deadline)
		if err := tc.Handshake(t); err != nil {
			wc.Close()
			return nil, nil, err
		}
		wc.SetDeadline(time.Time{})
		state := tc.ConnectionState()
		if state.NegotiatedProtocol != "h2" {
			if !http1 {
				wc.Close()
				return nil, nil, fmt.Errorf("whttp: server chose protocol %q over TLS; the client's Protocols has HTTP/2 only", state.NegotiatedProtocol)
			}
			c.mu.Lock()
			if c.noH2 == nil {
				c.noH2 = make(map[poolKey]bool)
			}
			c.noH2[key] = true
			c.mu.Unlock()
			// The connection serves HTTP/1 (the request that made it).
			return nil, c.adoptConn(t, key, wc, tc.LoopConn()), nil
		}
		st, nc = &state, tc.LoopConn()
	}
	cc, err := c.newH2ClientConn(t, key, wc, nc, st)
	if err != nil {
		wc.Close()
		return nil, nil, err
	}
	c.mu.Lock()
	if c.h2conns == nil {
		c.h2conns = make(map[poolKey]*h2ClientConn)
		c.h2all = make(map[*h2ClientConn]struct{})
	}
	old := c.h2conns[key]
	c.h2conns[key] = cc
	c.h2all[cc] = struct{}{}
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
	return cc, nil, nil
}

// forgetH2 takes cc out of its host's slot: new requests dial anew. A
// closed connection leaves the client's set too.
func (c *Client) forgetH2(cc *h2ClientConn) {
	cc.mu.Lock()
	closed := cc.closed
	cc.mu.Unlock()
	c.mu.Lock()
	if c.h2conns[cc.key] == cc {
		delete(c.h2conns, cc.key)
	}
	if closed {
		delete(c.h2all, cc)
	}
	c.mu.Unlock()
}

// closeH2 closes the HTTP/2 connections of run (nil: of every Run); with
// idleOnly, only those with no stream open.
func (c *Client) closeH2(run any, idleOnly bool) {
	c.mu.Lock()
	var list []*h2ClientConn
	for cc := range c.h2all {
		if run == nil || cc.key.run == run {
			list = append(list, cc)
		}
	}
	c.mu.Unlock()
	for _, cc := range list {
		if !idleOnly || cc.idle() {
			cc.fail(errH2ClientConnDead)
		}
	}
}
