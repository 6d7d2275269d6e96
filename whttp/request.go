package whttp

// One request on a connection: its head is read (readHead) and parsed
// (parse.go), the connection's *http.Request (reuse.go) is filled in with
// the body framed as RFC 9112 section 6 says (body.go), the handler runs
// with the request's handle (request_handle.go) as its ResponseWriter and
// context, and the response is finished (response.go). A request the
// server will not serve is refused with the status the RFCs give (or none
// when nobody is left to read it), and the connection ends; so does one
// whose handler panicked.

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weft-go/weft"
)

// serveRequest reads one request and answers it. It reports whether the
// connection may carry another. The reading is a call of its own, whose
// frame (the parsed head's) is gone while the handler runs: a handler's
// task, a WebSocket's reader for one, waits under fewer bytes of stack
// (DESIGN.md, A task's stack).
func (c *conn) serveRequest(t *weft.Task) bool {
	req, body, expect, refused, keep := c.readRequest(t)
	if refused {
		return keep
	}
	return c.respond(t, req, body, expect)
}

// readRequest reads and parses one request head into the connection's
// request state. When the head is refused it reports refused, and keep
// is refuse's answer: whether the connection may carry another.
func (c *conn) readRequest(t *weft.Task) (req *http.Request, body *reqBody, expect string, refused, keep bool) {
	s := c.sv.s
	st := c.st
	head, herr := c.readHead()
	if herr != nil {
		return nil, nil, "", true, c.refuse(herr)
	}
	// The header is read: the read deadline is now ReadTimeout's alone.
	if d := s.ReadTimeout; d > 0 {
		c.setReadDeadline(c.reqStart.Add(d))
	} else {
		c.setReadDeadline(time.Time{})
	}
	if d := s.WriteTimeout; d > 0 {
		c.setWriteDeadline(t.Now().Add(d))
	} else {
		c.setWriteDeadline(time.Time{})
	}
	hdr := st.header()
	h, herr := parseHead(head, hdr, &st.alloc, s.maxHeaderBytes())
	if herr != nil {
		return nil, nil, "", true, c.refuse(herr)
	}
	req = st.request()
	u, err := parseTarget(st.urlFor(), h.method, h.target)
	if err != nil {
		return nil, nil, "", true, c.refuse(badHead("invalid request target: " + err.Error()))
	}
	req.Method = h.method
	req.URL = u
	req.Proto, req.ProtoMajor, req.ProtoMinor = h.proto, h.major, h.minor
	req.Header = hdr
	req.RequestURI = h.target
	req.RemoteAddr = c.remote
	if c.tls != nil {
		req.TLS = &c.tls.state
	}
	req.Host = u.Host // the absolute form's wins (RFC 9112 section 3.2.2)
	if req.Host == "" {
		req.Host = h.host
	}
	if h.pragmaNoCache && !h.cacheControl { // as net/http does
		hdr["Cache-Control"] = []string{"no-cache"}
	}
	// Persistence (RFC 9112 section 9.3).
	if h.minor == 0 {
		req.Close = h.connClose || !h.keepAlive
	} else {
		req.Close = h.connClose
	}
	// Framing (RFC 9112 section 6).
	switch {
	case h.tes > 0 && h.minor == 0:
		// Faulty framing in HTTP/1.0 (section 6.1): the body is what
		// Content-Length says, and the connection ends after this.
		delete(hdr, "Transfer-Encoding")
		req.Close = true
		body = c.fixedBody(h.contentLength)
	case h.tes > 0:
		delete(hdr, "Transfer-Encoding")
		if h.cls > 0 {
			// Both: chunked framing, then close (section 6.1).
			delete(hdr, "Content-Length")
			req.Close = true
		}
		st.te[0] = "chunked"
		req.TransferEncoding = st.te[:1:1]
		req.ContentLength = -1
		body = &reqBody{c: c, gen: c.gen + 1, chunked: true, trailer: &req.Trailer}
		if h.trailer {
			tr, herr := declaredTrailer(hdr)
			if herr != nil {
				return nil, nil, "", true, c.refuse(herr)
			}
			req.Trailer = tr
		}
	default:
		body = c.fixedBody(h.contentLength)
	}
	if body != nil {
		req.Body = body
		if !body.chunked {
			req.ContentLength = body.left
		}
	} else {
		req.Body = http.NoBody
	}
	return req, body, h.expect, false, false
}

// fixedBody returns the body of a request framed by Content-Length n (-1:
// none), nil for none.
func (c *conn) fixedBody(n int64) *reqBody {
	if n <= 0 {
		return nil
	}
	return &reqBody{c: c, gen: c.gen + 1, left: n}
}

// declaredTrailer returns the Trailer fields a chunked request declares,
// as net/http's: canonical names with no values yet; the framing fields
// are refused.
func declaredTrailer(hdr http.Header) (http.Header, *headError) {
	vv := hdr["Trailer"]
	delete(hdr, "Trailer")
	var tr http.Header
	for _, v := range vv {
		for k := range strings.SplitSeq(v, ",") {
			k = strings.Trim(k, " \t")
			if k == "" {
				continue
			}
			k = http.CanonicalHeaderKey(k)
			switch k {
			case "Transfer-Encoding", "Trailer", "Content-Length":
				return nil, badHead("bad trailer key " + k)
			}
			if tr == nil {
				tr = make(http.Header)
			}
			tr[k] = nil
		}
	}
	return tr, nil
}

// errHeadTooLarge, errBareLF: what readHead finds in the bytes.
var (
	errHeadTooLarge = &headError{code: http.StatusRequestHeaderFieldsTooLarge, reason: "request head too large"}
	errBareLF       = badHead("line ends with a bare LF")
	errBareCRStart  = badHead("bare CR before the request line")
)

// readHead reads a request head, from its request line to the empty line
// that ends it, skipping empty lines before it (RFC 9112 section 2.2), and
// returns it as a string. It checks that every LF follows a CR and that
// the head (with the empty lines before it) stays within MaxHeaderBytes
// plus 4096 bytes (net/http's allowance for the request line); on an I/O
// error it returns a headError whose code is 0 when nobody is left to
// read an answer (a close or reset), 408 past the header's deadline, and
// 400 when the client ended its stream halfway through a head.
func (c *conn) readHead() (string, *headError) {
	in := &c.st.in
	limit := c.sv.s.maxHeaderBytes() + 4096
	skipped := 0   // empty lines before the request line
	scan := 0      // bytes after in.r already looked at for LF
	lineStart := 0 // where the current line begins, after in.r
	for {
		buf := in.buf[in.r:in.w]
		if scan == 0 {
			// Empty lines before the request line.
			for len(buf) >= 2 && buf[0] == '\r' && buf[1] == '\n' {
				in.r += 2
				skipped += 2
				buf = buf[2:]
			}
			if len(buf) > 0 && buf[0] == '\n' {
				return "", errBareLF
			}
			if len(buf) >= 2 && buf[0] == '\r' {
				return "", errBareCRStart
			}
			if skipped > limit {
				return "", errHeadTooLarge
			}
			if len(buf) > 0 && buf[0] == '\r' {
				buf = buf[:0] // a CR alone: wait for what follows it
			}
		}
		for scan < len(buf) {
			i := bytes.IndexByte(buf[scan:], '\n')
			if i < 0 {
				scan = len(buf)
				break
			}
			p := scan + i
			if p == 0 || buf[p-1] != '\r' {
				return "", errBareLF
			}
			if p-1 == lineStart && lineStart > 0 {
				// The empty line: the head is buf[:p+1].
				s := c.st.headString(buf[:p+1])
				in.r += p + 1
				return s, nil
			}
			lineStart = p + 1
			scan = p + 1
		}
		if len(buf)+skipped > limit {
			return "", errHeadTooLarge
		}
		if in.w == len(in.buf) {
			if in.r > 0 {
				in.w = copy(in.buf, in.buf[in.r:in.w])
				in.r = 0
			} else {
				// Grow, up to the limit.
				nb := make([]byte, min(2*len(in.buf), limit+1))
				in.w = copy(nb, in.buf[in.r:in.w])
				in.r = 0
				in.buf = nb
			}
		}
		if err := c.fill(); err != nil {
			// Part of a request has arrived (the idle wait read some).
			// Past the header's deadline: 408 (RFC 9110 section
			// 15.5.9); the client ended it halfway: 400; nobody is
			// left to read an answer: none.
			switch {
			case isClosedOrReset(err):
				return "", &headError{reason: "reading the request head: " + err.Error()}
			case errors.Is(err, os.ErrDeadlineExceeded):
				return "", &headError{code: http.StatusRequestTimeout, reason: "request head incomplete at the deadline: " + err.Error()}
			}
			return "", &headError{code: http.StatusBadRequest, reason: "request head incomplete: " + err.Error()}
		}
	}
}

// isClosedOrReset reports whether err means nobody can read an answer.
func isClosedOrReset(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || isCancellation(err)
}

// refuse answers a request the server will not serve, and reports false:
// the connection ends.
func (c *conn) refuse(e *headError) bool {
	c.sv.log.Debug("whttp: refused a request", "remote", c.remote, "status", e.code, "reason", e.reason)
	if e.code != 0 {
		c.writeError(e.code, "")
	}
	return false
}

// writeError writes a short plain-text error response and marks the
// connection for closing.
func (c *conn) writeError(code int, msg string) {
	c.stopIt.Store(true)
	text := strconv.Itoa(code) + " " + http.StatusText(code)
	body := text
	if msg != "" {
		body += ": " + msg
	}
	bw := c.st.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(text)
	bw.WriteString("\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ")
	bw.WriteString(strconv.Itoa(len(body)))
	bw.WriteString("\r\nConnection: close\r\n\r\n")
	bw.WriteString(body)
	bw.Flush()
}

// respond runs the handler on req and finishes the response. It reports
// whether the connection may carry another request.
func (c *conn) respond(t *weft.Task, req *http.Request, body *reqBody, expect string) bool {
	hd := c.beginRequest()
	req = setContext(req, hd)
	w := &c.st.resp
	w.reset(c, req, body)
	defer func() {
		w.release()
		c.endRequest()
		if body != nil {
			body.trailer = nil // the request is over: no reference to it
		}
		retire(req, w.header)
	}()
	if expect != "" {
		if !strings.EqualFold(expect, "100-continue") {
			c.writeError(http.StatusExpectationFailed, "")
			return false
		}
		if body != nil && req.ProtoAtLeast(1, 1) {
			body.expect = true
		}
	}
	if body == nil {
		c.startWatch(t) // else when the handler has read the body (body.go)
	}
	ok := c.runHandler(t, hd, w, req)
	c.stopWatch(t)
	if !ok || c.hijacked {
		return false
	}
	if !w.finish() {
		c.abortClose()
		return false
	}
	return !w.closeAfter && !c.isCut()
}

// runHandler calls the handler, turning a panic into a 500 (if nothing
// was sent yet) and a log entry with the stack. It reports false if the
// handler panicked: the connection is then closed, at once if the response
// had begun (the client sees it cut short).
func (c *conn) runHandler(t *weft.Task, hd *reqHandle, w *response, req *http.Request) (ok bool) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if r != http.ErrAbortHandler {
			c.sv.log.Error("whttp: panic serving request", "remote", c.remote,
				"method", req.Method, "uri", req.RequestURI, "panic", r, "stack", string(debug.Stack()))
		}
		c.stopWatch(t) // before the connection's buffers go
		w.done = true
		c.stopIt.Store(true)
		if c.hijacked {
			ok = false // the connection is the hijacker's: nothing more on it
			return
		}
		if !w.committed && !c.isCut() {
			c.writeError(http.StatusInternalServerError, "")
		} else if w.committed {
			if r != http.ErrAbortHandler {
				c.sv.log.Error("whttp: closing the connection: the handler panicked after the response began",
					"remote", c.remote, "method", req.Method, "uri", req.RequestURI)
			}
			c.abortClose()
		}
		ok = false
	}()
	if req.RequestURI == "*" && req.Method == http.MethodOptions {
		serveOptionsStar(hd, req)
	} else {
		c.sv.handler.ServeHTTP(t, hd, req)
	}
	return true
}

// serveOptionsStar answers OPTIONS * for the server itself, as net/http
// does (the handler does not see it): 200, no body; a body past 4 KB
// ends the connection.
func serveOptionsStar(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		io.Copy(io.Discard, io.LimitReader(r.Body, 4<<10))
	}
}
