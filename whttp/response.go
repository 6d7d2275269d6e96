package whttp

// The server's http.ResponseWriter, and the request body it goes with.
//
// The header is written when the response is committed: at the first
// Flush, when the body held back (up to stageSize bytes) would overflow,
// or when the handler returns. If the handler returns with all of its body
// held back, the response gets a Content-Length; otherwise an HTTP/1.1
// response is chunked and an HTTP/1.0 one is ended by closing the
// connection. As net/http does: a Content-Type is sniffed from the first
// bytes when the handler set none; a Date is added; HEAD responses carry
// the header only; trailers are declared with the "Trailer" header or set
// with http.TrailerPrefix, and force chunking.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// stageSize is how much body a response holds back before committing
// (net/http's bufferBeforeChunkingSize).
const stageSize = 2048

type bodyMode uint8

const (
	modeNone    bodyMode = iota // no body on the wire: HEAD, 1xx, 204, 304
	modeFixed                   // Content-Length
	modeChunked                 // Transfer-Encoding: chunked
	modeClose                   // ended by closing the connection (HTTP/1.0)
)

var errWriteAfterHandler = errors.New("whttp: Write called after the handler returned")

type response struct {
	c             *conn
	req           *http.Request
	header        http.Header
	body          reqBody
	status        int
	wroteHeader   bool
	committed     bool   // the header is in the connection's writer
	done          bool   // the handler has returned
	stage         []byte // body held back until the commit
	written       int64  // body bytes the handler wrote
	contentLength int64  // declared by the handler; -1 if none
	mode          bodyMode
	closeAfter    bool     // the connection ends after this response
	trailers      []string // declared trailer names
}

var stagePool = sync.Pool{New: func() any { b := make([]byte, 0, stageSize); return &b }}

func newResponse(c *conn, req *http.Request) *response {
	w := &response{c: c, req: req, header: make(http.Header), contentLength: -1}
	w.body.w = w
	if req.Body != nil && req.Body != http.NoBody {
		w.body.src = req.Body
		req.Body = &w.body
	}
	return w
}

// Header returns the response header, as http.ResponseWriter's: changes
// after the header is written have no effect, except to trailers.
func (w *response) Header() http.Header { return w.header }

// WriteHeader sends the status code with the header (when the response is
// committed). A 1xx code other than 101 is sent at once, as an
// informational response. Codes outside 100..999 panic, as net/http's do.
func (w *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if w.done {
		return
	}
	if w.wroteHeader {
		w.c.sv.log.Debug("whttp: superfluous WriteHeader call", "code", code, "remote", w.c.remote)
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	if cl := w.header.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err == nil && n >= 0 {
			w.contentLength = n
		} else {
			w.c.sv.log.Warn("whttp: invalid Content-Length; dropped", "value", cl)
			w.header.Del("Content-Length")
		}
	}
}

func (w *response) writeInformational(code int) {
	if w.committed {
		return
	}
	bw := w.c.bw
	writeStatusLine(bw, w.req.ProtoAtLeast(1, 1), code)
	if code != http.StatusContinue {
		w.header.WriteSubset(bw, nil)
	}
	bw.WriteString("\r\n")
	bw.Flush()
	if code == http.StatusContinue {
		w.body.expect = false
	}
}

// Write writes body bytes, suspending the connection's task when the
// client is slow. As net/http's: it returns http.ErrBodyNotAllowed for a
// status without a body and http.ErrContentLength past a declared length.
func (w *response) Write(p []byte) (int, error) {
	if w.done {
		return 0, errWriteAfterHandler
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.committed {
		if w.stage == nil {
			w.stage = (*stagePool.Get().(*[]byte))[:0]
		}
		if len(w.stage)+len(p) <= stageSize {
			w.stage = append(w.stage, p...)
			return len(p), nil
		}
		if err := w.commit(false); err != nil {
			return 0, err
		}
	}
	return w.writeOut(p)
}

// WriteString is Write for a string, without copying it.
func (w *response) WriteString(s string) (int, error) {
	if !w.committed || w.mode == modeChunked {
		return w.Write([]byte(s))
	}
	if w.done {
		return 0, errWriteAfterHandler
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(len(s)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(s))
	if w.mode == modeNone {
		return len(s), nil
	}
	n, err := w.c.bw.WriteString(s)
	if err != nil {
		w.closeAfter = true
	}
	return n, err
}

// writeOut puts body bytes on the wire, framed for the mode.
func (w *response) writeOut(p []byte) (int, error) {
	bw := w.c.bw
	var err error
	switch w.mode {
	case modeNone:
		return len(p), nil
	case modeChunked:
		var hex [16]byte
		bw.Write(strconv.AppendInt(hex[:0], int64(len(p)), 16))
		bw.WriteString("\r\n")
		_, err = bw.Write(p)
		if err == nil {
			_, err = bw.WriteString("\r\n")
		}
	default:
		_, err = bw.Write(p)
	}
	if err != nil {
		w.closeAfter = true
		return 0, err
	}
	return len(p), nil
}

// Flush sends what is written so far, committing the header (http.Flusher).
func (w *response) Flush() { w.FlushError() }

// FlushError is Flush, returning the write error if any (used by
// http.ResponseController).
func (w *response) FlushError() error {
	if w.done {
		return errWriteAfterHandler
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		if err := w.commit(false); err != nil {
			return err
		}
	}
	if err := w.c.bw.Flush(); err != nil {
		w.closeAfter = true
		return err
	}
	return nil
}

// SetReadDeadline sets the connection's read deadline, for
// http.ResponseController.
func (w *response) SetReadDeadline(d time.Time) error { return w.c.wc.SetReadDeadline(d) }

// SetWriteDeadline sets the connection's write deadline, for
// http.ResponseController.
func (w *response) SetWriteDeadline(d time.Time) error { return w.c.wc.SetWriteDeadline(d) }

func bodyAllowed(code int) bool {
	return !(code >= 100 && code < 200 || code == http.StatusNoContent || code == http.StatusNotModified)
}

// commit writes the status line and header. final says the handler has
// returned: the held-back body is all of it.
func (w *response) commit(final bool) error {
	w.committed = true
	c, h, req := w.c, w.header, w.req
	bw := c.bw
	is11 := req.ProtoAtLeast(1, 1)
	var exclude map[string]bool
	excl := func(k string) {
		if exclude == nil {
			exclude = make(map[string]bool)
		}
		exclude[k] = true
	}

	// Trailers: declared ones, and TrailerPrefix keys.
	hasTrailers := false
	for _, v := range h["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			k = http.CanonicalHeaderKey(strings.TrimSpace(k))
			if k != "" && validTrailer(k) {
				w.trailers = append(w.trailers, k)
				excl(k)
				hasTrailers = true
			}
		}
	}
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			excl(k)
			hasTrailers = true
		}
	}

	te := h.Get("Transfer-Encoding")
	if te != "" {
		excl("Transfer-Encoding")
	}
	var extraCL int64 = -1
	allowed := bodyAllowed(w.status)
	switch {
	case req.Method == "HEAD" || !allowed:
		w.mode = modeNone
		if req.Method == "HEAD" && allowed && final && w.contentLength < 0 && w.written > 0 {
			extraCL = w.written // what a GET would have carried, as net/http does
		}
	case w.contentLength >= 0:
		w.mode = modeFixed
	case final && !hasTrailers && te == "":
		w.mode = modeFixed
		w.contentLength = int64(len(w.stage))
		extraCL = w.contentLength
	case !is11 || strings.EqualFold(te, "identity"):
		w.mode = modeClose
		w.closeAfter = true
	default:
		w.mode = modeChunked
	}

	if req.Close || c.stopIt.Load() || c.sv.s.DisableKeepAlives || headerHasToken(h, "Connection", "close") {
		w.closeAfter = true
	}

	writeStatusLine(bw, is11, w.status)
	if _, ok := h["Content-Type"]; !ok && allowed && te == "" && len(w.stage) > 0 {
		bw.WriteString("Content-Type: ")
		bw.WriteString(http.DetectContentType(w.stage))
		bw.WriteString("\r\n")
	}
	if _, ok := h["Date"]; !ok {
		writeDate(bw)
	}
	if err := h.WriteSubset(bw, exclude); err != nil {
		w.closeAfter = true
		return err
	}
	if extraCL >= 0 {
		var num [20]byte
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(num[:0], extraCL, 10))
		bw.WriteString("\r\n")
	}
	if w.mode == modeChunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if w.closeAfter {
		if !headerHasToken(h, "Connection", "close") {
			bw.WriteString("Connection: close\r\n")
		}
	} else if !is11 {
		bw.WriteString("Connection: keep-alive\r\n")
	}
	_, err := bw.WriteString("\r\n")
	if err != nil {
		w.closeAfter = true
		return err
	}
	if len(w.stage) > 0 {
		if _, err := w.writeOut(w.stage); err != nil {
			return err
		}
		w.stage = w.stage[:0]
	}
	return nil
}

// finish completes the response after the handler returned.
func (w *response) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		// Before the header goes out: can the connection carry another
		// request, the handler having left part of the body unread?
		if !w.body.drain() {
			w.closeAfter = true
		}
		w.commit(true)
	} else if !w.body.drain() {
		w.closeAfter = true
	}
	w.done = true
	bw := w.c.bw
	switch w.mode {
	case modeChunked:
		bw.WriteString("0\r\n")
		w.writeTrailers()
		bw.WriteString("\r\n")
	case modeFixed:
		if w.written < w.contentLength {
			w.closeAfter = true // the client waits for bytes that will not come
		}
	}
	if w.stage != nil {
		s := w.stage[:0]
		w.stage = nil
		stagePool.Put(&s)
	}
}

func (w *response) writeTrailers() {
	bw := w.c.bw
	for _, k := range w.trailers {
		for _, v := range w.header[k] {
			writeHeaderLine(bw, k, v)
		}
	}
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok && name != "" {
			for _, v := range vv {
				writeHeaderLine(bw, http.CanonicalHeaderKey(name), v)
			}
		}
	}
}

var headerValueCleaner = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ")

func writeHeaderLine(bw *bufio.Writer, k, v string) {
	bw.WriteString(k)
	bw.WriteString(": ")
	bw.WriteString(strings.TrimSpace(headerValueCleaner.Replace(v)))
	bw.WriteString("\r\n")
}

// validTrailer reports whether k may be sent as a trailer (RFC 9110,
// section 6.5.1: not framing, routing, authentication or control fields).
func validTrailer(k string) bool {
	switch k {
	case "Authorization", "Cache-Control", "Connection", "Content-Encoding", "Content-Length",
		"Content-Range", "Content-Type", "Expect", "Host", "Keep-Alive", "Max-Forwards",
		"Pragma", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection", "Range",
		"Realm", "Te", "Trailer", "Transfer-Encoding", "Www-Authenticate":
		return false
	}
	return true
}

// headerHasToken reports whether a comma-separated header holds token.
func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h[key] {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

func writeStatusLine(bw *bufio.Writer, is11 bool, code int) {
	if is11 {
		bw.WriteString("HTTP/1.1 ")
	} else {
		bw.WriteString("HTTP/1.0 ")
	}
	var num [8]byte
	bw.Write(strconv.AppendInt(num[:0], int64(code), 10))
	bw.WriteString(" ")
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	bw.WriteString(text)
	bw.WriteString("\r\n")
}

// The Date header, formatted once a second.
type dateLine struct {
	sec  int64
	line string
}

var dateCache atomic.Pointer[dateLine]

func writeDate(bw *bufio.Writer) {
	now := time.Now()
	d := dateCache.Load()
	if d == nil || d.sec != now.Unix() {
		d = &dateLine{sec: now.Unix(), line: "Date: " + now.UTC().Format(http.TimeFormat) + "\r\n"}
		dateCache.Store(d)
	}
	bw.WriteString(d.line)
}

// reqBody is the request body the handler reads: net/http's body reader
// (http.ReadRequest's), which reads through the connection's buffer in the
// connection's task, with 100-continue and the end of the handler added.
type reqBody struct {
	w      *response
	src    io.ReadCloser // nil: no body
	expect bool          // a 100 Continue is owed before the first read
	sawEOF bool
	closed bool // the handler closed it
	done   bool // the handler returned
}

// Read reads the body; the first read answers Expect: 100-continue.
func (b *reqBody) Read(p []byte) (int, error) {
	if b.src == nil {
		return 0, io.EOF
	}
	if b.done || b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.expect {
		b.expect = false
		if !b.w.committed {
			bw := b.w.c.bw
			bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			if err := bw.Flush(); err != nil {
				return 0, err
			}
		}
	}
	n, err := b.src.Read(p)
	if err == io.EOF {
		b.sawEOF = true
	}
	return n, err
}

// Close marks the body closed; the server reads out what is left (up to a
// bound) after the handler returns, to keep the connection.
func (b *reqBody) Close() error {
	b.closed = true
	return nil
}

// drain reads out what the handler left of the body, up to
// maxPostHandlerRead; it reports whether the connection can carry the
// next request.
func (b *reqBody) drain() bool {
	if b.src == nil || b.sawEOF {
		return true
	}
	if b.expect {
		return false // the client waits for a 100 Continue: never read
	}
	_, err := io.CopyN(io.Discard, b.src, maxPostHandlerRead+1)
	b.sawEOF = err == io.EOF
	return b.sawEOF
}
