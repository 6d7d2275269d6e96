package whttp

// HTTPS on the server's side: with Server.TLSConfig set, each
// connection's task runs the TLS handshake (crypto/tls, in the task)
// before the first request, bounded by the header deadline. A client that
// speaks plain HTTP to it gets 400, as from net/http.

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"time"

	"github.com/weft-go/weft"
)

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

// connTLS is a TLS connection's state.
type connTLS struct {
	conn  *tls.Conn
	state tls.ConnectionState
	raw   tlsUnder // what the tls.Conn reads and writes through
}

// tlsUnder is the connection beneath a tls.Conn: the connection's own
// (bound to its task), read after what the watch read from the socket
// while a handler ran (watch.go), which the watch leaves in pending.
type tlsUnder struct {
	net.Conn
	buf     [64]byte // the watch reads into it
	pending []byte   // read by the watch, not yet by the tls.Conn
}

func (u *tlsUnder) Read(p []byte) (int, error) {
	if len(u.pending) > 0 {
		n := copy(p, u.pending)
		u.pending = u.pending[n:]
		return n, nil
	}
	return u.Conn.Read(p)
}

// handshake runs the TLS handshake, bounded by the header deadline.
func (c *conn) handshake(t *weft.Task, deadline time.Time) error {
	c.wc.SetDeadline(deadline)
	ct := &connTLS{}
	ct.raw.Conn = c.nc
	tc := tls.Server(&ct.raw, c.sv.tls)
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
	ct.conn, ct.state = tc, tc.ConnectionState()
	c.tls, c.nc = ct, tc
	return nil
}

func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "CONNE", "TRACE":
		return true
	}
	return false
}
