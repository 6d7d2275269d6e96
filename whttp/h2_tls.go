package whttp

// HTTP/2 over TLS. The handshake is HTTP/1's (tls.go): the connection is
// a weft.TLSConn from its start, and after ALPN chose "h2" the reader task
// reads it while the writer task writes it. That is the pattern TLSConn
// exists for: crypto/tls runs over an in-memory buffer under a weft lock,
// so neither task ever suspends inside crypto/tls holding one of its
// sync.Mutexes, and no loop can block on one (DESIGN.md, "TLS that tasks
// share").

import "github.com/weft-go/weft"

// serveH2TLS serves a TLS connection whose ALPN chose "h2".
func (c *conn) serveH2TLS(t *weft.Task) {
	ct := c.tls
	c.serveH2(t, &h2TLS{tc: ct.conn, rt: t}, &ct.state)
}

// h2TLS is the transport of HTTP/2 over TLS: the connection's TLSConn.
type h2TLS struct {
	tc *weft.TLSConn
	rt *weft.Task // the reader's
}

// Read is the reader task's: plaintext, suspending it until some comes.
func (p *h2TLS) Read(b []byte) (int, error) {
	n, err := p.tc.Read(p.rt, b)
	if n == 0 && err == nil {
		err = errH2PeerGone
	}
	return n, err
}

// write is the writer task's: b encrypted and sent, with whatever
// crypto/tls owes the peer (an alert, a key update's answer).
func (p *h2TLS) write(t *weft.Task, b []byte) error {
	for len(b) > 0 {
		n, err := p.tc.Write(t, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// closeWrite sends close_notify and shuts the socket's sending side.
func (p *h2TLS) closeWrite(t *weft.Task) {
	p.tc.CloseWrite(t)
	p.tc.Conn().CloseWrite()
}
