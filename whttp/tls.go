package whttp

// HTTPS on the server's side: with Server.TLSConfig set, each connection
// is a weft.TLSConn (weft.TLSServer): crypto/tls over an in-memory buffer,
// never entered by a task that may suspend there, so that several tasks
// may use the connection at once. The connection's task runs the
// handshake before the first request, bounded by the header deadline; the
// watch (watch.go) reads the TLSConn while the handler writes it; a
// hijacker's reader and writer (tasks or goroutines) share it. A client
// that speaks plain HTTP to it gets 400, as from net/http.

import (
	"crypto/tls"
	"errors"
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
	conn  *weft.TLSConn
	state tls.ConnectionState // once the handshake is done
}

// startTLS makes c's connection a TLSConn, read and written by its task
// t through c.nc. It does not suspend: the handshake is run by handshake.
func (c *conn) startTLS(t *weft.Task) {
	tc := weft.TLSServer(c.wc, c.sv.tls)
	c.tls = &connTLS{conn: tc}
	c.nc = tc.NetConn(t)
}

// handshake runs the TLS handshake, bounded by the header deadline. If it
// fails, c is plain TCP again (c.tls nil), for its close.
func (c *conn) handshake(t *weft.Task, deadline time.Time) error {
	c.wc.SetDeadline(deadline)
	ct := c.tls
	err := ct.conn.Handshake(t)
	if err != nil {
		c.tls, c.nc = nil, c.wc.NetConn(t)
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			c.wc.Write(t, []byte("HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"))
		} else {
			c.sv.log.Debug("whttp: TLS handshake error", "remote", c.remote, "err", err)
		}
		return err
	}
	c.wc.SetDeadline(time.Time{})
	ct.state = ct.conn.ConnectionState()
	return nil
}

func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "CONNE", "TRACE":
		return true
	}
	return false
}
