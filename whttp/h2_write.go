package whttp

// The writer task of an HTTP/2 connection: it owns the HPACK encoder and
// the frame buffer. Each round it gathers, under h.mu, the control frames
// owed, then the streams' headers and data (one frame per stream in turn,
// within the stream's and the connection's send windows, up to about
// h2WriteBatch bytes), and writes them with one call, outside the lock.
// It waits on h.wake when there is nothing to send.

import (
	"net/http"
	"time"

	"github.com/weft-go/weft"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func (h *h2Conn) writeLoop(t *weft.Task) (struct{}, error) {
	var out []byte
	for first := true; ; first = false {
		h.mu.Lock()
		h.wbuf.b = out[:0]
		if first {
			h.writePreamble()
		}
		finished := h.gather()
		h.idleDeadlineLocked(t)
		out = h.wbuf.b
		h.wbuf.b = nil
		h.mu.Unlock()
		if len(out) > 0 {
			if d := h.cfg.writeByteTimeout; d > 0 {
				h.c.wc.SetWriteDeadline(t.Now().Add(d))
			}
			h.writes.Add(1)
			if err := h.tr.write(t, out); err != nil {
				h.mu.Lock()
				if h.dead == nil {
					h.dead = errH2PeerGone
				}
				h.mu.Unlock()
				h.c.wc.SetReadDeadline(t.Now()) // the reader ends too
				return struct{}{}, nil
			}
			if cap(out) > 4*h2WriteBatch {
				out = nil
			}
			continue
		}
		if finished {
			if h.graceful() {
				// Graceful stop done: the reader ends as the peer
				// closes, or at the linger's end.
				h.c.wc.SetReadDeadline(t.Now().Add(closeLinger))
			}
			return struct{}{}, nil
		}
		if _, err := h.wake.Recv(t); err != nil {
			return struct{}{}, nil
		}
		// Woken for control frames alone while handlers run (a PING's
		// acknowledgement, say, that came with a request): let them run
		// first, once, so that what they answer goes in the same write.
		h.mu.Lock()
		ctlOnly := len(h.ctl) > 0 && len(h.ready) == h.readyHead && h.handlers > 0 && h.dead == nil && !h.goAway
		h.mu.Unlock()
		if ctlOnly {
			t.Yield()
		}
	}
}

// graceful reports whether the connection ended by a graceful stop.
func (h *h2Conn) graceful() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dead == errH2Shutdown
}

// writePreamble writes the server's SETTINGS and opens the connection's
// window to what Server.HTTP2 says; mu held.
func (h *h2Conn) writePreamble() {
	cfg := h.cfg
	settings := []http2.Setting{
		{ID: http2.SettingMaxFrameSize, Val: cfg.maxReadFrame},
		{ID: http2.SettingMaxConcurrentStreams, Val: cfg.maxStreams},
		{ID: http2.SettingMaxHeaderListSize, Val: cfg.maxHeaderList},
		{ID: http2.SettingInitialWindowSize, Val: uint32(cfg.streamWin)},
	}
	if cfg.decTable != 4096 {
		settings = append(settings, http2.Setting{ID: http2.SettingHeaderTableSize, Val: cfg.decTable})
	}
	h.wfr.WriteSettings(settings...)
	if d := int64(cfg.connWin) - 65535; d > 0 {
		h.wfr.WriteWindowUpdate(0, uint32(d))
	}
	h.recvWin = int64(cfg.connWin)
	if cfg.connWin < 65535 {
		h.recvWin = 65535
	}
}

// gather puts what is owed to the peer in h.wbuf; mu held. It reports
// whether the writer is done: the connection is dead (or stopped
// gracefully with no stream left) and everything was written.
func (h *h2Conn) gather() bool {
	// A graceful stop: GOAWAY once, with the last stream taken.
	if h.shutdownReq.Load() && !h.goAway && h.dead == nil {
		h.goAway = true
		h.ctl = append(h.ctl, h2Ctl{kind: ctlGoAway, id: h.maxID, code: http2.ErrCodeNo})
	}
	for _, f := range h.ctl {
		switch f.kind {
		case ctlSettingsAck:
			h.wfr.WriteSettingsAck()
		case ctlPingAck:
			h.wfr.WritePing(true, f.data)
		case ctlPing:
			h.wfr.WritePing(false, f.data)
		case ctlRST:
			h.wfr.WriteRSTStream(f.id, f.code)
		case ctlWindow:
			h.wfr.WriteWindowUpdate(f.id, f.n)
		case ctlGoAway:
			h.wfr.WriteGoAway(f.id, f.code, nil)
		}
	}
	h.ctl = h.ctl[:0]
	if cap(h.ctl) > 64 {
		h.ctl = nil
	}
	if h.dead != nil {
		for _, s := range h.ready[h.readyHead:] {
			s.queued = false
			h.releaseLocked(s)
		}
		clear(h.ready)
		h.ready, h.readyHead = h.ready[:0], 0
		return true
	}
	// The connection's window: given back once half of it is owed.
	if h.recvOwed > 0 && (h.recvOwed >= int64(h.cfg.connWin)/2 || h.recvOwed >= 1<<20) {
		h.wfr.WriteWindowUpdate(0, uint32(h.recvOwed))
		h.recvWin += h.recvOwed
		h.recvOwed = 0
	}
	// The streams, one frame each in turn.
	for h.readyHead < len(h.ready) && h.wbuf.Len() < h2WriteBatch {
		s := h.ready[h.readyHead]
		h.ready[h.readyHead] = nil
		h.readyHead++
		if h.writeStream(s) {
			h.ready = append(h.ready, s)
		} else {
			s.queued = false
			h.releaseLocked(s)
		}
	}
	if h.readyHead == len(h.ready) {
		h.ready, h.readyHead = h.ready[:0], 0
		if cap(h.ready) > 1024 {
			h.ready = nil
		}
	}
	if h.goAway && len(h.streams) == 0 && h.handlers == 0 && len(h.waiting) == 0 {
		h.dead = errH2Shutdown
		return true
	}
	return false
}

// writeStream writes the next frame of s; mu held. It reports whether s
// has more that can be sent now.
func (h *h2Conn) writeStream(s *h2Stream) bool {
	if s.reset {
		s.hdrs, s.out, s.outOff = nil, nil, 0
		return false
	}
	if len(s.hdrs) > 0 {
		hb := s.hdrs[0]
		s.hdrs = s.hdrs[1:]
		h.writeHeaderBlock(s.id, hb.fields, hb.end)
		if hb.end {
			h.sentEndLocked(s)
			return false
		}
		return true
	}
	avail := len(s.out) - s.outOff
	if avail > 0 {
		n := int64(avail)
		n = min(n, s.sendWin, h.sendWin, int64(h.peerMaxFrame))
		if n <= 0 {
			return false // a window opens it again (readyLocked)
		}
		end := s.outEnd && int(n) == avail && s.trailers == nil
		h.wfr.WriteData(s.id, end, s.out[s.outOff:s.outOff+int(n)])
		s.outOff += int(n)
		s.sendWin -= n
		h.sendWin -= n
		if s.outOff == len(s.out) {
			s.out, s.outOff = s.out[:0], 0
			if cap(s.out) > h2StreamOutBuf {
				s.out = nil
			}
		}
		s.signal() // room for the handler's writes
		if end {
			h.sentEndLocked(s)
			return false
		}
		return s.hasOutput()
	}
	if s.outEnd && !s.localClosed {
		if s.trailers != nil {
			h.writeHeaderBlock(s.id, s.trailers, true)
			s.trailers = nil
		} else {
			h.wfr.WriteData(s.id, true, nil)
		}
		h.sentEndLocked(s)
	}
	return false
}

// sentEndLocked: END_STREAM went out for s. If the peer has not ended
// its side (the handler ignored the rest of the body), RST_STREAM
// NO_ERROR tells it to stop (RFC 9113 section 8.1).
func (h *h2Conn) sentEndLocked(s *h2Stream) {
	s.localClosed = true
	if !s.remoteClosed {
		s.remoteClosed = true
		h.releaseInLocked(s)
		h.wfr.WriteRSTStream(s.id, http2.ErrCodeNo)
	}
	h.removeLocked(s)
}

// writeHeaderBlock encodes fields and writes them as HEADERS and
// CONTINUATION frames; mu held.
func (h *h2Conn) writeHeaderBlock(id uint32, fields []hpack.HeaderField, end bool) {
	h.hbuf.Reset()
	for _, f := range fields {
		h.enc.WriteField(f)
	}
	block := h.hbuf.b
	max := int(h.peerMaxFrame)
	first := true
	for first || len(block) > 0 {
		frag := block
		if len(frag) > max {
			frag = frag[:max]
		}
		block = block[len(frag):]
		if first {
			h.wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag, EndStream: end, EndHeaders: len(block) == 0})
			first = false
		} else {
			h.wfr.WriteContinuation(id, len(block) == 0, frag)
		}
	}
	if cap(h.hbuf.b) > 64<<10 {
		h.hbuf.b = nil
	}
}

// h2Date returns the Date header's value, from HTTP/1's cache.
func h2Date() string {
	now := time.Now()
	d := dateCache.Load()
	if d == nil || d.sec != now.Unix() {
		d = &dateLine{sec: now.Unix(), line: "Date: " + now.UTC().Format(http.TimeFormat) + "\r\n"}
		dateCache.Store(d)
	}
	return d.line[len("Date: ") : len(d.line)-2]
}
