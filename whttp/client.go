package whttp

// The client: Do follows redirects as net/http's Client does, and each
// exchange runs on a connection from a per-host pool of idle keep-alive
// connections (or a new one, dialled with weft.Dial: names resolved off
// the loop). A connection reads and writes through Conn.LoopConn, so the
// response body can be read by any task of the Run. Pools are per Run
// (a connection belongs to the Run it was made in; with several loops, a
// task using it moves to its loop) and are closed when that Run ends.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/loophook"
)

// DefaultMaxIdleConnsPerHost is the pool bound per host when
// Client.MaxIdleConnsPerHost is zero (net/http's figure).
const DefaultMaxIdleConnsPerHost = 2

// DefaultIdleConnTimeout is how long an idle pooled connection is kept
// when Client.IdleConnTimeout is zero (net/http's DefaultTransport's).
const DefaultIdleConnTimeout = 90 * time.Second

// Client is an HTTP/1.1 client on weft tasks. Its zero value is ready to
// use; it may be shared by tasks of several Runs and by goroutines (its
// pool has a lock), but each connection serves the Run that made it (any
// of its loops: a task moves to a connection's loop to use it).
// Set its fields before first use.
type Client struct {
	// Timeout bounds a whole exchange: dialling, every redirect, and the
	// reading of the response body. Zero: none. It is measured on the
	// loop's clock.
	Timeout time.Duration

	// CheckRedirect is called before following a redirect, as net/http's
	// Client's: req is the next request, via those made so far, oldest
	// first. Its error stops the redirects and is returned (wrapped in a
	// *url.Error) with the last response, whose body is closed; returning
	// http.ErrUseLastResponse returns that response unclosed, with no
	// error. Nil: follow up to 10 redirects.
	CheckRedirect func(req *http.Request, via []*http.Request) error

	// Jar, if not nil, adds cookies to requests and keeps those responses
	// set, redirects included.
	Jar http.CookieJar

	// TLSConfig configures https connections; nil: crypto/tls's defaults,
	// which verify the server's certificate against the system's roots, as
	// net/http does. ServerName defaults to the URL's host, and NextProtos
	// is "http/1.1".
	TLSConfig *tls.Config

	// MaxIdleConnsPerHost bounds the idle connections kept per host (and
	// per Run). Zero: DefaultMaxIdleConnsPerHost. Negative: none kept.
	MaxIdleConnsPerHost int

	// IdleConnTimeout is how long an idle connection is kept for reuse.
	// Zero: DefaultIdleConnTimeout.
	IdleConnTimeout time.Duration

	// DisableKeepAlives makes each request use a new connection, closed
	// after it.
	DisableKeepAlives bool

	mu    sync.Mutex
	idle  map[poolKey][]*clientConn // guarded by mu: most recently used last
	conns map[*clientConn]struct{}  // guarded by mu: every open connection
	runs  map[any]struct{}          // guarded by mu: Runs whose end closes their connections
}

// DefaultClient is the Client Get uses.
var DefaultClient = &Client{}

// Get fetches url with DefaultClient (see Client.Do): it suspends t until
// the response header has arrived, and if t is cancelled it returns a
// *url.Error wrapping the cause.
func Get(t *weft.Task, url string) (*http.Response, error) {
	return DefaultClient.Get(t, url)
}

// Get fetches url: a GET request through Do, which says how it suspends
// and what it returns on cancellation.
func (c *Client) Get(t *weft.Task, url string) (*http.Response, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(t, req)
}

// Post sends body to url with the given Content-Type, through Do (which
// says how it suspends and what it returns on cancellation).
func (c *Client) Post(t *weft.Task, url, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	return c.Do(t, req)
}

// Do sends req and returns the response, following redirects as net/http's
// Client does: 301, 302 and 303 turn into GET (HEAD stays HEAD) without a
// body; 307 and 308 keep the method and, through req.GetBody, the body (a
// request with a body and no GetBody is not redirected); headers are
// copied, except Authorization and cookies to another domain; at most 10
// redirects unless CheckRedirect says otherwise.
//
// Do suspends t while it dials, writes and reads the response header, and
// is a cancellation point at each of those waits: if t is cancelled, or
// req's context is done, or Timeout passes, Do returns a *url.Error
// wrapping the cause (for Timeout, one whose Timeout method reports true),
// and the connection is closed. A non-2xx status is not an error.
//
// The caller must close the response body. It may be read by any task of
// t's Run (each read suspends that task), within Timeout; once it is read
// to the end, or closed after that, the connection goes back to the pool.
// Closing it before the end closes the connection.
func (c *Client) Do(t *weft.Task, req *http.Request) (*http.Response, error) {
	if req == nil || req.URL == nil {
		return nil, errors.New("whttp: Do with a nil request or URL")
	}
	var deadline time.Time
	if c.Timeout > 0 {
		deadline = t.Now().Add(c.Timeout)
	}
	var (
		reqs           []*http.Request
		resp           *http.Response
		redirectMethod string
		includeBody    bool
	)
	uerr := func(err error) error {
		method := req.Method
		if method == "" {
			method = "GET"
		}
		return &url.Error{Op: method[:1] + strings.ToLower(method[1:]), URL: stripPassword(req.URL), Err: err}
	}
	ireq := req
	for {
		if len(reqs) > 0 {
			loc := resp.Header.Get("Location")
			u, err := req.URL.Parse(loc)
			if err != nil {
				resp.Body.Close()
				return nil, uerr(fmt.Errorf("failed to parse Location header %q: %v", loc, err))
			}
			host := ""
			if req.Host != "" && req.Host != req.URL.Host {
				if lu, _ := url.Parse(loc); lu != nil && !lu.IsAbs() {
					host = req.Host
				}
			}
			next := (&http.Request{
				Method:   redirectMethod,
				Response: resp,
				URL:      u,
				Header:   make(http.Header),
				Host:     host,
			}).WithContext(ireq.Context())
			if includeBody && ireq.GetBody != nil {
				body, err := ireq.GetBody()
				if err != nil {
					resp.Body.Close()
					return nil, uerr(err)
				}
				next.Body, next.GetBody, next.ContentLength = body, ireq.GetBody, ireq.ContentLength
			}
			copyHeaders(ireq, next)
			if ref := referer(reqs[len(reqs)-1].URL, next.URL, next.Header.Get("Referer")); ref != "" {
				next.Header.Set("Referer", ref)
			}
			err = c.checkRedirect(next, reqs)
			if err == http.ErrUseLastResponse {
				return resp, nil
			}
			// Read a little of the body so that the connection can be
			// reused; net/http does the same.
			const maxBodySlurp = 2 << 10
			if resp.ContentLength == -1 || resp.ContentLength <= maxBodySlurp {
				io.CopyN(io.Discard, resp.Body, maxBodySlurp)
			}
			resp.Body.Close()
			if err != nil {
				ue := uerr(err)
				ue.(*url.Error).URL = loc
				return resp, ue
			}
			req = next
		}
		reqs = append(reqs, req)
		var err error
		resp, err = c.send(t, req, deadline)
		if err != nil {
			if req.Body != nil && req.Body != http.NoBody && len(reqs) > 1 {
				req.Body.Close()
			}
			return nil, uerr(err)
		}
		var follow bool
		redirectMethod, follow, includeBody = redirectBehavior(req.Method, resp, ireq)
		if !follow {
			return resp, nil
		}
	}
}

func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if c.CheckRedirect != nil {
		return c.CheckRedirect(req, via)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// redirectBehavior says whether and how to follow resp, as net/http does.
func redirectBehavior(method string, resp *http.Response, ireq *http.Request) (redirectMethod string, follow, includeBody bool) {
	if resp.Header.Get("Location") == "" {
		return "", false, false // a 3xx without a Location is a final answer
	}
	switch resp.StatusCode {
	case 301, 302, 303:
		redirectMethod, follow = method, true
		if method != "GET" && method != "HEAD" {
			redirectMethod = "GET"
		}
	case 307, 308:
		redirectMethod, follow, includeBody = method, true, true
		if ireq.GetBody == nil && ireq.Body != nil && ireq.Body != http.NoBody {
			follow = false // the body cannot be sent again
		}
	}
	return redirectMethod, follow, includeBody
}

// copyHeaders gives a redirected request the headers of the first one,
// without credentials when it goes to another domain.
func copyHeaders(ireq, next *http.Request) {
	for k, vv := range ireq.Header {
		if !shouldCopyOnRedirect(k, ireq.URL, next.URL) {
			continue
		}
		next.Header[k] = append([]string(nil), vv...)
	}
}

func shouldCopyOnRedirect(key string, from, to *url.URL) bool {
	switch http.CanonicalHeaderKey(key) {
	case "Authorization", "Www-Authenticate", "Cookie", "Cookie2", "Proxy-Authorization":
		ihost := strings.ToLower(from.Hostname())
		dhost := strings.ToLower(to.Hostname())
		// The same host, or a subdomain of it.
		return ihost == dhost || strings.HasSuffix(dhost, "."+ihost)
	}
	return true
}

func referer(last, next *url.URL, explicit string) string {
	if last.Scheme == "https" && next.Scheme == "http" {
		return ""
	}
	if explicit != "" {
		return explicit
	}
	u := *last
	u.User = nil
	u.Fragment = ""
	return u.String()
}

func stripPassword(u *url.URL) string {
	if _, ok := u.User.Password(); ok {
		c := *u
		c.User = url.UserPassword(u.User.Username(), "***")
		return c.String()
	}
	return u.String()
}

// send makes one exchange, with the cookie jar.
func (c *Client) send(t *weft.Task, req *http.Request, deadline time.Time) (*http.Response, error) {
	if c.Jar != nil {
		for _, ck := range c.Jar.Cookies(req.URL) {
			req.AddCookie(ck)
		}
	}
	resp, err := c.roundTrip(t, req, deadline)
	if err != nil {
		return nil, err
	}
	if c.Jar != nil {
		if rc := resp.Cookies(); len(rc) > 0 {
			c.Jar.SetCookies(req.URL, rc)
		}
	}
	return resp, nil
}

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
	for {
		cc, err := c.getConn(t, key, host, deadline)
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
	return cc, nil
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

func (e *timeoutError) Error() string   { return e.msg }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }
func (e *timeoutError) Unwrap() error   { return e.err }

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
