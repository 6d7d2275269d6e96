package whttp

// The client: Do follows redirects as net/http's Client does, with the
// cookie jar, and makes each exchange through roundTrip, on one of the
// client's connections (client_conn.go).

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/weft-go/weft"
)

// DefaultMaxIdleConnsPerHost is the pool bound per host when
// Client.MaxIdleConnsPerHost is zero (net/http's figure).
const DefaultMaxIdleConnsPerHost = 2

// DefaultIdleConnTimeout is how long an idle pooled connection is kept
// when Client.IdleConnTimeout is zero (net/http's DefaultTransport's).
const DefaultIdleConnTimeout = 90 * time.Second

// Client is an HTTP client on weft tasks: HTTP/1.1, and HTTP/2 over TLS
// when the server chooses it by ALPN (see Protocols). Its zero value is
// ready to use; it may be shared by tasks of several Runs and by
// goroutines (its pool has a lock), but each connection serves the Run
// that made it (any of its loops: a task moves to a connection's loop to
// use it). Set its fields before first use.
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
	// net/http does. ServerName defaults to the URL's host; NextProtos is
	// set from Protocols ("h2" and "http/1.1" by default).
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

	// Protocols says which protocols the client speaks, as net/http's
	// Transport.Protocols does. Nil: HTTP/1.1, and HTTP/2 over TLS — an
	// https request offers "h2" and "http/1.1" by ALPN and speaks HTTP/2
	// when the server chooses h2, HTTP/1.1 otherwise; http:// URLs get
	// HTTP/1.1. Not nil: over TLS, HTTP2 offers "h2" and HTTP1
	// "http/1.1" (HTTP1 alone: HTTP/1.1 only; HTTP2 alone: a server that
	// does not choose h2 is an error); UnencryptedHTTP2 without HTTP1
	// makes http:// URLs speak HTTP/2 with prior knowledge (h2c), with no
	// fallback (with HTTP1 too they get HTTP/1.1, as with net/http).
	//
	// Over HTTP/2 the requests of every task of a Run to one host share
	// one connection, each on a stream of its own. Past the server's
	// SETTINGS_MAX_CONCURRENT_STREAMS, further requests wait for a stream
	// to end (they open no second connection). A request the server did
	// not process (past a GOAWAY's last stream, or REFUSED_STREAM) is sent
	// again, up to 5 tries, if it has no body or a GetBody, as net/http
	// does (after a GOAWAY on a new connection); other failures are Do's
	// error. A connection that
	// fails fails every stream on it and leaves the pool; one the server
	// sent GOAWAY on takes no new streams and closes after its last.
	// Idle HTTP/2 connections follow IdleConnTimeout and
	// CloseIdleConnections as HTTP/1 ones do (MaxIdleConnsPerHost and
	// DisableKeepAlives are HTTP/1's only).
	Protocols *http.Protocols

	mu    sync.Mutex
	idle  map[poolKey][]*clientConn // guarded by mu: most recently used last
	conns map[*clientConn]struct{}  // guarded by mu: every open connection
	runs  map[any]struct{}          // guarded by mu: Runs whose end closes their connections

	h2conns map[poolKey]*h2ClientConn  // guarded by mu: the HTTP/2 connection of each host that takes new streams
	h2all   map[*h2ClientConn]struct{} // guarded by mu: every open HTTP/2 connection
	noH2    map[poolKey]bool           // guarded by mu: hosts whose ALPN chose HTTP/1
	h2dial  map[poolKey]*weft.Mutex    // guarded by mu: held by the task dialling a host's HTTP/2 connection
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

// Do sends req and returns the response, following redirects. It suspends
// t while it dials, writes and reads the response header, and is a
// cancellation point at each of those waits: if t is cancelled, or req's
// context is done, or Timeout passes, Do returns a *url.Error wrapping the
// cause (for Timeout, one whose Timeout method reports true), and the
// connection is closed. A non-2xx status is not an error.
//
// Redirects are followed as net/http's Client follows them: 301, 302 and
// 303 turn into GET (HEAD stays HEAD) without a body; 307 and 308 keep the
// method and, through req.GetBody, the body (a request with a body and no
// GetBody is not redirected); headers are copied, except Authorization and
// cookies to another domain; at most 10 redirects unless CheckRedirect
// says otherwise.
//
// The caller must close the response body. It may be read by any task of
// t's Run, on any of its loops (each read suspends that task), within
// Timeout; a read from a goroutine or from a task of another Run panics
// with a "weft:" message. If req's context ends, Do, and later reads of
// the body, return its cause; if the task reading the body is cancelled,
// that read returns the cancellation and the body is done. Over HTTP/1.1,
// once the body is read to the end, or closed after that, the connection
// goes back to the pool, and closing it before the end closes the
// connection; over HTTP/2, closing it before the end resets its stream
// (RST_STREAM CANCEL) and the connection goes on, as does a request whose
// Do is cancelled.
//
// A request body is read and sent by the task that calls Do (so a body
// that only that task may read, such as a whttp handler's r.Body being
// relayed, works), within HTTP/2's flow control, before Do returns: a
// response that comes meanwhile is kept, and the rest of the body is not
// sent once the server has answered in full; there is no full-duplex
// exchange (reading the response while the body is still being sent).
// If reading the body fails, the stream is reset and Do returns that
// error.
// req.Trailer is sent after the body (over HTTP/2, as a trailing HEADERS
// frame), read once the body has returned io.EOF. The response's
// trailer is in resp.Trailer once its body has been read to the end.
// Informational (1xx) responses are skipped. A HEAD response, and one
// whose header ends the stream, has the body http.NoBody.
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
