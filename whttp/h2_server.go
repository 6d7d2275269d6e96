package whttp

// HTTP/2 (RFC 9113) on the server's side: how a connection comes to speak
// it, and its settings. A TLS connection speaks HTTP/2 when ALPN chose
// "h2" (offered by default, as net/http does since Go 1.24); a cleartext
// connection when Protocols allows unencrypted HTTP/2 and the client
// opens with the connection preface (h2c with prior knowledge). The
// connection is then served by h2_conn.go: a reader task (the
// connection's own), a writer task, and a task per stream running the
// handler (h2_stream.go).

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"time"

	"github.com/weft-go/weft"
	"golang.org/x/net/http2"
)

// h2Preface is what an HTTP/2 client sends first (RFC 9113 section 3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Defaults of the HTTP/2 settings, where Server.HTTP2 leaves them zero.
// They are net/http's, but the largest frame read, which is the
// protocol's initial one (a peer that wants larger frames gets no more
// throughput from them, and h2spec checks the limit with it).
const (
	h2DefaultMaxStreams     = 250
	h2DefaultMaxReadFrame   = 16 << 10
	h2DefaultDecTable       = 4096
	h2DefaultEncTable       = 4096
	h2DefaultConnWin        = 1 << 20
	h2DefaultStreamWin      = 1 << 20
	h2DefaultMaxHeaderBytes = http.DefaultMaxHeaderBytes
)

// Bounds that keep one connection's cost to the server small whatever the
// peer sends (see DESIGN.md, HTTP/2's attacks).
const (
	// h2MaxControlQueue bounds the frames the server owes the peer
	// (SETTINGS and PING acknowledgements, RST_STREAM, WINDOW_UPDATE)
	// while it does not read them: past it, GOAWAY ENHANCE_YOUR_CALM.
	h2MaxControlQueue = 1024
	// h2MaxEmptyFrames bounds the frames in a row that carry nothing
	// (empty DATA without END_STREAM, empty CONTINUATION, zero-increment
	// windows are errors anyway): past it, GOAWAY ENHANCE_YOUR_CALM.
	h2MaxEmptyFrames = 1000
	// h2StreamOutBuf is how much of a response a stream's handler may
	// have queued for the writer before its Write suspends.
	h2StreamOutBuf = 32 << 10
	// h2ConnHold bounds the request body bytes a connection buffers for
	// handlers that have not read them yet and still gives back to the
	// connection's window at once (see h2Conn.onData).
	h2ConnHold = 4 << 20
	// h2ResetSlack: handlers of streams the peer reset may still run (a
	// handler ends at its next suspension point); new streams are refused
	// once running handlers reach MaxConcurrentStreams plus this
	// (CVE-2023-44487, rapid reset), and the connection ends with GOAWAY
	// ENHANCE_YOUR_CALM if the peer goes on.
	h2ResetSlack = 4
	// h2WriteBatch is about the most the writer gathers into one write.
	h2WriteBatch = 64 << 10
	// h2GoAwayLinger is how long a connection that sent GOAWAY for an
	// error keeps reading and discarding, so that the peer gets it.
	h2GoAwayLinger = time.Second
)

// h2Config is Server.HTTP2 resolved.
type h2Config struct {
	maxStreams       uint32
	maxReadFrame     uint32
	decTable         uint32
	encTable         uint32
	connWin          int32
	streamWin        int32
	maxHeaderList    uint32
	pingTimeout      time.Duration
	sendPingTimeout  time.Duration
	writeByteTimeout time.Duration
	permitProhibited bool
	countError       func(string)
}

func (s *Server) h2Config() *h2Config {
	cfg := &h2Config{
		maxStreams:    h2DefaultMaxStreams,
		maxReadFrame:  h2DefaultMaxReadFrame,
		decTable:      h2DefaultDecTable,
		encTable:      h2DefaultEncTable,
		connWin:       h2DefaultConnWin,
		streamWin:     h2DefaultStreamWin,
		maxHeaderList: uint32(s.maxHeaderBytes()) + 32*100,
	}
	if h := s.HTTP2; h != nil {
		if h.MaxConcurrentStreams > 0 {
			cfg.maxStreams = uint32(h.MaxConcurrentStreams)
		}
		if h.MaxReadFrameSize > 0 {
			cfg.maxReadFrame = uint32(min(max(h.MaxReadFrameSize, 16<<10), 1<<24-1))
		}
		if h.MaxDecoderHeaderTableSize > 0 {
			cfg.decTable = uint32(h.MaxDecoderHeaderTableSize)
		}
		if h.MaxEncoderHeaderTableSize > 0 {
			cfg.encTable = uint32(h.MaxEncoderHeaderTableSize)
		}
		if h.MaxReceiveBufferPerConnection > 0 {
			cfg.connWin = int32(min(max(h.MaxReceiveBufferPerConnection, 65535), 1<<31-1))
		}
		if h.MaxReceiveBufferPerStream > 0 {
			cfg.streamWin = int32(min(h.MaxReceiveBufferPerStream, 1<<31-1))
		}
		cfg.pingTimeout = h.PingTimeout
		cfg.sendPingTimeout = h.SendPingTimeout
		cfg.writeByteTimeout = h.WriteByteTimeout
		cfg.permitProhibited = h.PermitProhibitedCipherSuites
		cfg.countError = h.CountError
	}
	if cfg.pingTimeout <= 0 {
		cfg.pingTimeout = 15 * time.Second
	}
	return cfg
}

// protocols returns what the server speaks: Protocols, or by default
// HTTP/1 and HTTP/2 (the latter over TLS only), as net/http.
func (s *Server) protocols() (http1, h2tls, h2c bool) {
	p := s.Protocols
	if p == nil {
		return true, true, false
	}
	return p.HTTP1(), p.HTTP2(), p.UnencryptedHTTP2()
}

// h2NextProtos returns the ALPN protocols of a TLS server that speaks
// HTTP/2: "h2" first, then cfg's own (http/1.1 if none and HTTP/1 is on).
func h2NextProtos(cfg []string, http1 bool) []string {
	out := []string{"h2"}
	for _, p := range cfg {
		if p != "h2" && p != "h2c" {
			out = append(out, p)
		}
	}
	if len(out) == 1 && http1 {
		out = append(out, "http/1.1")
	}
	return out
}

// isH2Preface reports whether b, the first bytes of a cleartext
// connection, begin the HTTP/2 preface; more reports that b is a proper
// prefix of it (more bytes will tell).
func isH2Preface(b []byte) (yes, more bool) {
	if len(b) >= len(h2Preface) {
		return bytes.HasPrefix(b, []byte(h2Preface)), false
	}
	return false, bytes.HasPrefix([]byte(h2Preface), b) && len(b) > 0
}

// h2BadCipher reports whether a TLS connection's security is below what
// RFC 9113 section 9.2 requires (TLS 1.2 at least, with an AEAD cipher
// and ephemeral key exchange).
func h2BadCipher(st *tls.ConnectionState) bool {
	if st.Version >= tls.VersionTLS13 {
		return false
	}
	if st.Version < tls.VersionTLS12 {
		return true
	}
	switch st.CipherSuite {
	case tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256:
		return false
	}
	return true
}

// countErr reports an error to HTTP2Config.CountError, if set.
func (cfg *h2Config) countErr(name string) {
	if cfg.countError != nil {
		cfg.countError(name)
	}
}

var _ = http2.ErrCodeNo

// h2cPreface serves the connection as HTTP/2 if unencrypted HTTP/2 is on
// and its first bytes (read into the input buffer) are the preface; it
// reports whether it did (the connection is then done).
func (c *conn) h2cPreface(t *weft.Task) bool {
	http1, _, h2c := c.sv.s.protocols()
	if !h2c || c.tls != nil {
		return false
	}
	in := &c.st.in
	for http1 {
		yes, more := isH2Preface(in.buf[in.r:in.w])
		if yes {
			break
		}
		if !more {
			return false
		}
		if err := c.fill(); err != nil {
			return false // the HTTP/1 parser says what is wrong
		}
	}
	initial := append([]byte(nil), in.buf[in.r:in.w]...)
	in.r = in.w
	c.release()
	c.serveH2(t, &h2Plain{wc: c.wc, rt: t, initial: initial}, nil)
	return true
}
