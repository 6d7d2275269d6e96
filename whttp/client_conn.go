package whttp

// The client's connections: each exchange runs on a connection from a
// per-host pool of idle keep-alive connections (or a new one, dialled with
// weft.Dial: names resolved off the loop). A connection reads and writes
// through Conn.LoopConn, so the response body can be read by any task of
// the Run. Pools are per Run (a connection belongs to the Run it was made
// in; with several loops, a task using it moves to its loop) and are
// closed when that Run ends.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/loophook"
)

// poolKey names a pool: one Run, one scheme and address.
type poolKey struct {
	run  any    // loophook.Key: the Run
	addr string // "http://host:80"
}

// roundTrip sends req on a pooled or new connection; on a reused one that
// turns out to be closed by the server before it answered, it tries again
// if the request can be sent again, as net/http does.
func (c *Client) roundTrip(t *weft.Task, req *http.Request, deadline time.Time) (*http.Response, error) {
	u := req.URL
	if u.Scheme != "http" && u.Scheme != "https" {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("unsupported protocol scheme %q", u.Scheme)
	}
	if u.Host == "" {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errors.New("http: no Host in request URL")
	}
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	key := poolKey{run: loophook.Key(t), addr: u.Scheme + "://" + net.JoinHostPort(host, port)}
	var fresh *clientConn // the TLS connection made for HTTP/2 where ALPN chose HTTP/1.1
	if c.wantH2(u.Scheme) {
		resp, conn, done, err := c.roundTripH2(t, key, host, req, deadline)
		if done {
			if err != nil && req.Body != nil && req.Body != http.NoBody {
				req.Body.Close()
			}
			return resp, err
		}
		fresh = conn
	}
	for {
		cc, err := fresh, error(nil)
		if cc == nil {
			cc, err = c.getConn(t, key, host, deadline)
		}
		fresh = nil
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		resp, err := cc.exchange(t, req, deadline)
		if err == nil {
			return resp, nil
		}
		cc.close()
		if !cc.reused || cc.gotBytes || !replayable(req) {
			return nil, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			r2 := *req
			r2.Body = body
			req = &r2
		}
	}
}

// replayable reports whether req may be sent again after a connection
// failed under it: idempotent, with a body that can be had again.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// clientConn is one connection of the client.
type clientConn struct {
	client   *Client
	key      poolKey
	wc       *weft.Conn
	nc       net.Conn // wc.LoopConn(), or a tls.Conn over it
	r        countingReader
	br       *bufio.Reader
	bw       *bufio.Writer
	reused   bool      // it served an exchange before this one
	gotBytes bool      // the exchange in flight has read some of a response
	idleAt   time.Time // real time it went idle
	closed   bool      // guarded by client.mu
}

// countingReader notes whether anything was read.
type countingReader struct {
	cc *clientConn
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.cc.nc.Read(p)
	if n > 0 {
		r.cc.gotBytes = true
	}
	return n, err
}

func (c *Client) maxIdle() int {
	if c.MaxIdleConnsPerHost == 0 {
		return DefaultMaxIdleConnsPerHost
	}
	return c.MaxIdleConnsPerHost
}

func (c *Client) idleTimeout() time.Duration {
	if c.IdleConnTimeout > 0 {
		return c.IdleConnTimeout
	}
	return DefaultIdleConnTimeout
}

// getConn returns an idle connection for key, or dials one.
func (c *Client) getConn(t *weft.Task, key poolKey, host string, deadline time.Time) (*clientConn, error) {
	c.mu.Lock()
	var stale []*clientConn
	var cc *clientConn
	list := c.idle[key]
	for len(list) > 0 && cc == nil {
		last := list[len(list)-1]
		list = list[:len(list)-1]
		if time.Since(last.idleAt) > c.idleTimeout() {
			stale = append(stale, last)
			continue
		}
		cc = last
	}
	if c.idle != nil {
		c.idle[key] = list
	}
	c.mu.Unlock()
	for _, s := range stale {
		s.close()
	}
	if cc != nil {
		cc.reused, cc.gotBytes = true, false
		return cc, nil
	}
	return c.dial(t, key, host, deadline)
}

// adoptConn makes nc, just made over wc (TLS whose ALPN chose HTTP/1.1
// when HTTP/2 was offered), a connection of the client's HTTP/1 pool.
func (c *Client) adoptConn(t *weft.Task, key poolKey, wc *weft.Conn, nc net.Conn) *clientConn {
	cc := &clientConn{client: c, key: key, wc: wc, nc: nc}
	cc.r.cc = cc
	c.register(t, cc)
	return cc
}

func (c *Client) dial(t *weft.Task, key poolKey, host string, deadline time.Time) (*clientConn, error) {
	addr := strings.TrimPrefix(strings.TrimPrefix(key.addr, "http://"), "https://")
	var wc *weft.Conn
	var err error
	if deadline.IsZero() {
		wc, err = weft.Dial(t, "tcp", addr)
	} else {
		wc, err = weft.Timeout(t, deadline.Sub(t.Now()), func(t *weft.Task) (*weft.Conn, error) {
			return weft.Dial(t, "tcp", addr)
		})
		if errors.Is(err, weft.ErrTimeout) {
			err = &timeoutError{err: err, msg: "dial " + addr + ": Client.Timeout exceeded while dialling"}
		}
	}
	if err != nil {
		return nil, err
	}
	cc := &clientConn{client: c, key: key, wc: wc, nc: wc.LoopConn()}
	cc.r.cc = cc
	if strings.HasPrefix(key.addr, "https://") {
		cfg := &tls.Config{}
		if c.TLSConfig != nil {
			cfg = c.TLSConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{"http/1.1"}
		tc := tls.Client(cc.nc, cfg)
		wc.SetDeadline(deadline)
		if err := tc.Handshake(); err != nil {
			wc.Close()
			return nil, err
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
			wc.Close()
			return nil, fmt.Errorf("whttp: server chose protocol %q over TLS; only http/1.1 is spoken", p)
		}
		cc.nc = tc
	}
	c.register(t, cc)
	return cc, nil
}

// register gives cc its buffers and makes it one of the client's
// connections, closed at the end of its Run.
func (c *Client) register(t *weft.Task, cc *clientConn) {
	key := cc.key
	cc.br = bufio.NewReaderSize(&cc.r, 4<<10)
	cc.bw = bufio.NewWriterSize(cc.nc, 4<<10)
	c.mu.Lock()
	if c.conns == nil {
		c.conns = make(map[*clientConn]struct{})
		c.idle = make(map[poolKey][]*clientConn)
		c.runs = make(map[any]struct{})
	}
	c.conns[cc] = struct{}{}
	_, known := c.runs[key.run]
	c.runs[key.run] = struct{}{}
	c.mu.Unlock()
	if !known {
		// The Run's connections are of no use once it ends.
		run := key.run
		loophook.AtEnd(t, func() { c.closeRun(run) })
	}
}

// closeRun closes every connection of a Run that has ended.
func (c *Client) closeRun(run any) {
	c.mu.Lock()
	var all []*clientConn
	for cc := range c.conns {
		if cc.key.run == run {
			all = append(all, cc)
		}
	}
	for k := range c.idle {
		if k.run == run {
			delete(c.idle, k)
		}
	}
	delete(c.runs, run)
	c.mu.Unlock()
	for _, cc := range all {
		cc.close()
	}
	c.closeH2(run, false)
}

// CloseIdleConnections closes the idle connections of every Run. It does
// not suspend; any goroutine may call it.
func (c *Client) CloseIdleConnections() {
	c.mu.Lock()
	var all []*clientConn
	for k, list := range c.idle {
		all = append(all, list...)
		delete(c.idle, k)
	}
	c.mu.Unlock()
	for _, cc := range all {
		cc.close()
	}
	c.closeH2(nil, true)
}

func (cc *clientConn) close() {
	c := cc.client
	c.mu.Lock()
	if cc.closed {
		c.mu.Unlock()
		return
	}
	cc.closed = true
	delete(c.conns, cc)
	c.mu.Unlock()
	cc.wc.Close()
}

// put returns cc to its pool, or closes it.
func (cc *clientConn) put() {
	c := cc.client
	cc.wc.SetDeadline(time.Time{})
	c.mu.Lock()
	if cc.closed || c.DisableKeepAlives || c.idle == nil || len(c.idle[cc.key]) >= c.maxIdle() {
		c.mu.Unlock()
		cc.close()
		return
	}
	cc.idleAt = time.Now()
	c.idle[cc.key] = append(c.idle[cc.key], cc)
	c.mu.Unlock()
}

// timeoutError is an error past Client.Timeout: its Timeout method
// reports true, as url.Error.Timeout needs.
type timeoutError struct {
	err error
	msg string
}

func (e *timeoutError) Error() string { return e.msg }

func (e *timeoutError) Timeout() bool { return true }

func (e *timeoutError) Temporary() bool { return true }

func (e *timeoutError) Unwrap() error { return e.err }

// aLongTimeAgo is a deadline in the past: it ends the connection's waits.
var aLongTimeAgo = time.Unix(1, 0)

// exchange writes req and reads the response header on cc.
func (cc *clientConn) exchange(t *weft.Task, req *http.Request, deadline time.Time) (*http.Response, error) {
	c := cc.client
	cc.wc.SetDeadline(deadline)
	ctx := req.Context()
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { cc.wc.SetDeadline(aLongTimeAgo) })
	}
	fail := func(err error) (*http.Response, error) {
		if stop != nil {
			stop()
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if !deadline.IsZero() && isTimeout(err) {
			return nil, &timeoutError{err: err, msg: err.Error() + " (Client.Timeout exceeded while awaiting headers)"}
		}
		return nil, err
	}
	w := req
	if c.DisableKeepAlives && !req.Close {
		r2 := *req
		r2.Close = true
		w = &r2
	}
	if err := w.Write(cc.bw); err != nil {
		return fail(err)
	}
	if err := cc.bw.Flush(); err != nil {
		return fail(err)
	}
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(cc.br, req)
		if err != nil {
			return fail(err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		// An informational response (100 Continue, 103 Early Hints): the
		// real one follows.
	}
	keep := !resp.Close && !w.Close
	if resp.Body == http.NoBody || resp.Body == nil {
		if stop != nil {
			stop()
		}
		if keep {
			cc.put()
		} else {
			cc.close()
		}
		return resp, nil
	}
	resp.Body = &clientBody{cc: cc, src: resp.Body, keep: keep, stop: stop, ctx: ctx, deadline: !deadline.IsZero()}
	return resp, nil
}

// clientBody is a response body: it reads through the connection's
// buffer, on behalf of whichever task of the Run reads it, and gives the
// connection back when it reaches the end.
type clientBody struct {
	cc       *clientConn
	src      io.ReadCloser
	keep     bool // the connection may serve another exchange
	stop     func() bool
	ctx      context.Context
	deadline bool // Client.Timeout applies
	done     bool
	err      error
}

func (b *clientBody) Read(p []byte) (int, error) {
	if b.done {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n, err := b.src.Read(p)
	switch {
	case err == io.EOF:
		b.finish(b.keep, nil)
	case err != nil:
		if b.ctx.Err() != nil {
			err = context.Cause(b.ctx)
		} else if b.deadline && isTimeout(err) {
			err = &timeoutError{err: err, msg: err.Error() + " (Client.Timeout exceeded while reading body)"}
		}
		b.finish(false, err)
	}
	return n, err
}

// Close ends the body; before its end, that closes the connection.
func (b *clientBody) Close() error {
	if !b.done {
		b.finish(false, errors.New("whttp: read on a closed response body"))
	}
	return nil
}

func (b *clientBody) finish(keep bool, err error) {
	b.done = true
	b.err = err
	if b.stop != nil {
		b.stop()
	}
	if keep {
		b.cc.put()
	} else {
		b.cc.close()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
