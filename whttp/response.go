package whttp

// The server's response to a request, behind the http.ResponseWriter a
// handler gets (its reqHandle, request_handle.go).
//
// The header is written when the response is committed: at the first
// Flush, when the body held back (up to stageSize bytes) would overflow,
// or when the handler returns. If the handler returns with all of its body
// held back, the response gets a Content-Length; otherwise an HTTP/1.1
// response is chunked and an HTTP/1.0 one is ended by closing the
// connection. As net/http does: a Content-Type is sniffed from the first
// bytes when the handler set none; a Date is added; HEAD responses carry
// the header only; trailers are declared with the "Trailer" header or set
// with http.TrailerPrefix, and force chunking. Header fields go out in the
// map's order, unsorted (their order carries no meaning, RFC 9110 section
// 5.3); a field name that is not a token is left out and CR or LF in a
// value become spaces, as net/http does.
//
// Everything goes into the connection's output buffer (outSize), which is
// written when it fills, on Flush, and when the connection waits for
// input: a response that fits (and the responses to pipelined requests
// before it) costs one write.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// stageSize is how much body a response holds back before committing: a
// response whose body fits gets a Content-Length and goes out in one
// write with its header. (net/http holds back 2 KB.)
const stageSize = 6 << 10

type bodyMode uint8

const (
	modeNone    bodyMode = iota // no body on the wire: HEAD, 1xx, 204, 304
	modeFixed                   // Content-Length
	modeChunked                 // Transfer-Encoding: chunked
	modeClose                   // ended by closing the connection (HTTP/1.0)
)

var errWriteAfterHandler = errors.New("whttp: Write called after the handler returned")

// response is a request's response; the connection's reqState holds one,
// reset for each request.
type response struct {
	c             *conn
	req           *http.Request
	body          *reqBody // nil: none
	header        http.Header
	status        int
	wroteHeader   bool
	committed     bool   // the header is in the connection's writer
	done          bool   // the handler has returned
	stage         []byte // body held back until the commit
	sniff         []byte // commitSniffing's bytes, for a Content-Type
	written       int64  // body bytes the handler wrote
	contentLength int64  // declared by the handler; -1 if none
	mode          bodyMode
	hijacked      bool     // the handler took the connection over (hijack.go)
	failed        bool     // a write to the connection failed
	closeAfter    bool     // the connection ends after this response
	trailers      []string // declared trailer names
}

// reset prepares w for req.
func (w *response) reset(c *conn, req *http.Request, body *reqBody) {
	hdr, stage, trailers := w.header, w.stage, w.trailers
	if checkRetention || hdr == nil || len(hdr) > 64 {
		hdr = make(http.Header, 4)
	} else {
		clear(hdr)
	}
	if stage == nil {
		stage = make([]byte, 0, stageSize)
	}
	*w = response{c: c, req: req, body: body, header: hdr, stage: stage[:0], trailers: trailers[:0], contentLength: -1}
}

// release drops what w refers to of the request, once it is over.
func (w *response) release() {
	w.done = true
	w.req, w.body = nil, nil
	clear(w.trailers)
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
	if vv := w.header["Content-Length"]; len(vv) > 0 {
		n, ok := parseDecimal(trimOWS(vv[0]))
		if ok && len(vv) == 1 {
			w.contentLength = n
		} else {
			w.c.sv.log.Warn("whttp: invalid Content-Length; dropped", "value", vv)
			delete(w.header, "Content-Length")
		}
	}
}

func (w *response) writeInformational(code int) {
	if w.committed {
		return
	}
	bw := w.c.st.bw
	writeStatusLine(bw, w.req.ProtoAtLeast(1, 1), code)
	if code != http.StatusContinue {
		writeHeader(bw, w.header, nil)
	}
	bw.WriteString("\r\n")
	bw.Flush()
	if code == http.StatusContinue && w.body != nil {
		w.body.expect = false
	}
}

// admit checks that n more body bytes may be written, and counts them.
func (w *response) admit(n int) error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if w.done {
		return errWriteAfterHandler
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if n == 0 {
		return nil
	}
	if !bodyAllowed(w.status) {
		return http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(n) > w.contentLength {
		return http.ErrContentLength
	}
	w.written += int64(n)
	return nil
}

// Write writes body bytes, suspending the connection's task when the
// client is slow. As net/http's: it returns http.ErrBodyNotAllowed for a
// status without a body and http.ErrContentLength past a declared length.
func (w *response) Write(p []byte) (int, error) {
	if err := w.admit(len(p)); err != nil || len(p) == 0 {
		return 0, err
	}
	if !w.committed {
		if len(w.stage)+len(p) <= cap(w.stage) {
			w.stage = append(w.stage, p...)
			return len(p), nil
		}
		if err := w.commitSniffing(p); err != nil {
			return 0, err
		}
	}
	if w.mode == modeNone {
		return len(p), nil
	}
	w.chunkHeader(len(p))
	_, err := w.c.st.bw.Write(p)
	return w.wrote(len(p), err)
}

// WriteString is Write for a string, without copying it.
func (w *response) WriteString(s string) (int, error) {
	if err := w.admit(len(s)); err != nil || len(s) == 0 {
		return 0, err
	}
	if !w.committed {
		if len(w.stage)+len(s) <= cap(w.stage) {
			w.stage = append(w.stage, s...)
			return len(s), nil
		}
		if err := w.commitSniffing([]byte(s[:min(len(s), 512)])); err != nil {
			return 0, err
		}
	}
	if w.mode == modeNone {
		return len(s), nil
	}
	w.chunkHeader(len(s))
	_, err := w.c.st.bw.WriteString(s)
	return w.wrote(len(s), err)
}

// chunkHeader starts a chunk of n bytes, when the response is chunked.
func (w *response) chunkHeader(n int) {
	if w.mode == modeChunked {
		bw := w.c.st.bw
		writeInt(bw, int64(n), 16)
		bw.WriteString("\r\n")
	}
}

// wrote ends a write of n body bytes: the chunk's CRLF, and on an error
// the end of the connection.
func (w *response) wrote(n int, err error) (int, error) {
	if err == nil && w.mode == modeChunked {
		_, err = w.c.st.bw.WriteString("\r\n")
	}
	if err != nil {
		w.closeAfter, w.failed = true, true
		return 0, err
	}
	return n, nil
}

// writeOut puts held-back body bytes on the wire, framed for the mode.
func (w *response) writeOut(p []byte) (int, error) {
	if w.mode == modeNone {
		return len(p), nil
	}
	w.chunkHeader(len(p))
	_, err := w.c.st.bw.Write(p)
	return w.wrote(len(p), err)
}

// FlushError sends what is written so far, committing the header
// (http.Flusher's Flush, returning the write error if any, for
// http.ResponseController).
func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
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
	if err := w.c.st.bw.Flush(); err != nil {
		w.closeAfter, w.failed = true, true
		return err
	}
	return nil
}

func bodyAllowed(code int) bool {
	return !(code >= 100 && code < 200 || code == http.StatusNoContent || code == http.StatusNotModified)
}

// commitSniffing commits because p does not fit in what is held back: a
// Content-Type is sniffed from the body's first bytes, which may be p's.
func (w *response) commitSniffing(p []byte) error {
	w.sniff = p
	err := w.commit(false)
	w.sniff = nil
	return err
}

// commit writes the status line and header. final says the handler has
// returned: the held-back body is all of it.
func (w *response) commit(final bool) error {
	w.committed = true
	c, h, req := w.c, w.header, w.req
	bw := c.st.bw
	is11 := req.ProtoAtLeast(1, 1)

	// Trailers declared with the Trailer field stay out of the header.
	hasTrailers := false
	if vv, ok := h["Trailer"]; ok {
		for _, v := range vv {
			for k := range strings.SplitSeq(v, ",") {
				k = http.CanonicalHeaderKey(strings.TrimSpace(k))
				if k != "" && validTrailer(k) {
					w.trailers = append(w.trailers, k)
					hasTrailers = true
				}
			}
		}
	}

	// One pass over the header writes its fields and notes what the
	// framing needs; the fields the server adds follow (their order
	// carries no meaning).
	writeStatusLine(bw, is11, w.status)
	var hasType, hasDate, connClose bool
	te := ""
	for k, vv := range h {
		switch k {
		case "Content-Type":
			hasType = true
		case "Date":
			hasDate = true
		case "Connection":
			connClose = hasToken(vv, "close")
		case "Transfer-Encoding":
			if len(vv) > 0 {
				te = vv[0]
			}
			continue // the server writes its own
		}
		if strings.HasPrefix(k, http.TrailerPrefix) {
			hasTrailers = true
			continue
		}
		if !isToken(k) || len(w.trailers) > 0 && w.isTrailer(k) {
			continue
		}
		for _, v := range vv {
			writeHeaderLine(bw, k, v)
		}
	}

	var extraCL int64 = -1
	allowed := bodyAllowed(w.status)
	switch {
	case req.Method == http.MethodHead || !allowed:
		w.mode = modeNone
		if req.Method == http.MethodHead && allowed && final && w.contentLength < 0 && w.written > 0 && !hasTrailers && te == "" {
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
	if req.Close || c.stopIt.Load() || c.sv.s.DisableKeepAlives || connClose {
		w.closeAfter = true
	}

	if !hasType && allowed && te == "" {
		first := w.stage
		if len(first) == 0 {
			first = w.sniff
		}
		if len(first) > 0 {
			bw.WriteString("Content-Type: ")
			bw.WriteString(http.DetectContentType(first))
			bw.WriteString("\r\n")
		}
	}
	if !hasDate {
		writeDate(bw)
	}
	if extraCL >= 0 {
		bw.WriteString("Content-Length: ")
		writeInt(bw, extraCL, 10)
		bw.WriteString("\r\n")
	}
	if w.mode == modeChunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	switch {
	case w.status == http.StatusSwitchingProtocols:
		// The handler's Connection: Upgrade stands; the connection
		// is about to be hijacked.
	case w.closeAfter:
		// HTTP/1.0 closes by default: net/http says nothing there.
		if is11 && !connClose {
			bw.WriteString("Connection: close\r\n")
		}
	case !is11:
		bw.WriteString("Connection: keep-alive\r\n")
	}
	_, err := bw.WriteString("\r\n")
	if err != nil {
		w.closeAfter, w.failed = true, true
		return err
	}
	if len(w.stage) > 0 {
		stage := w.stage
		w.stage = w.stage[:0]
		if _, err := w.writeOut(stage); err != nil {
			return err
		}
	}
	return nil
}

// isTrailer reports whether k goes in the trailer rather than the header.
func (w *response) isTrailer(k string) bool {
	if strings.HasPrefix(k, http.TrailerPrefix) {
		return true
	}
	for _, t := range w.trailers {
		if t == k {
			return true
		}
	}
	return false
}

// finish completes the response after the handler returned. It reports
// false if the response is cut short (the handler wrote less than its
// Content-Length): the connection must close at once, so that the client
// does not wait for bytes that will not come.
func (w *response) finish() bool {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		// Before the header goes out: can the connection carry another
		// request, the handler having left part of the body unread?
		if w.body != nil && !w.body.drain() {
			w.closeAfter = true
		}
		w.commit(true)
	} else if w.body != nil && !w.body.drain() {
		w.closeAfter = true
	}
	w.done = true
	bw := w.c.st.bw
	switch w.mode {
	case modeChunked:
		bw.WriteString("0\r\n")
		w.writeTrailers()
		bw.WriteString("\r\n")
	case modeFixed:
		if w.written < w.contentLength {
			if !w.failed { // else a write failed: the client is gone, nothing to report
				w.c.sv.log.Error("whttp: closing the connection: the handler wrote less than its Content-Length",
					"remote", w.c.remote, "method", w.req.Method, "uri", w.req.RequestURI,
					"written", w.written, "content_length", w.contentLength)
			}
			w.closeAfter = true
			return false
		}
	}
	return true
}

func (w *response) writeTrailers() {
	bw := w.c.st.bw
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

// writeHeader writes h's fields but those skip says to leave out (nil:
// none), in the map's order.
func writeHeader(bw *bufio.Writer, h http.Header, skip func(string) bool) {
	for k, vv := range h {
		if !isToken(k) || skip != nil && skip(k) {
			continue
		}
		for _, v := range vv {
			writeHeaderLine(bw, k, v)
		}
	}
}

// headerValueCleaner turns each CR and LF into a space, as net/http's
// does: a value cannot start a new field line.
var headerValueCleaner = strings.NewReplacer("\n", " ", "\r", " ")

func writeHeaderLine(bw *bufio.Writer, k, v string) {
	if strings.ContainsAny(v, "\r\n") {
		v = headerValueCleaner.Replace(v)
	}
	bw.WriteString(k)
	bw.WriteString(": ")
	bw.WriteString(strings.TrimSpace(v))
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

// hasToken reports whether comma-separated values hold token.
func hasToken(vv []string, token string) bool {
	for _, v := range vv {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

// statusLines holds "HTTP/1.1 NNN Text\r\n" for the codes with a text.
var statusLines = func() (t [600]string) {
	for code := 100; code < 600; code++ {
		if text := http.StatusText(code); text != "" {
			t[code] = "HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\n"
		}
	}
	return t
}()

func writeStatusLine(bw *bufio.Writer, is11 bool, code int) {
	if line := statusLines[code%600]; code < 600 && line != "" {
		if !is11 {
			bw.WriteString("HTTP/1.0")
			line = line[len("HTTP/1.1"):]
		}
		bw.WriteString(line)
		return
	}
	if is11 {
		bw.WriteString("HTTP/1.1 ")
	} else {
		bw.WriteString("HTTP/1.0 ")
	}
	writeInt(bw, int64(code), 10)
	bw.WriteString(" status code ")
	writeInt(bw, int64(code), 10)
	bw.WriteString("\r\n")
}

// writeInt writes n in the base, without allocating.
func writeInt(bw *bufio.Writer, n int64, base int) {
	if bw.Available() < 20 {
		bw.Flush()
	}
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), n, base))
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

// trimOWS trims optional whitespace (SP, HTAB) from both ends.
func trimOWS(s string) string { return strings.Trim(s, " \t") }

// sniffLen is how many body bytes Content-Type sniffing looks at.
const sniffLen = 512

// ReadFrom copies src to the response body (io.ReaderFrom, which io.Copy
// and http.ServeContent use). From a regular file (an *os.File, or an
// io.LimitedReader of one) on a plain TCP connection, once the header is
// out, the body goes to the socket with sendfile(2) (through the
// connection's own io.ReaderFrom), not through the output buffer: the
// first 512 bytes go through Write first, for Content-Type sniffing, as
// net/http does. A chunked response, a HEAD, TLS, or any other reader:
// through Write.
func (w *response) ReadFrom(src io.Reader) (n int64, err error) {
	rf, ok := w.c.nc.(io.ReaderFrom)
	if !ok || w.c.tls != nil || !isFile(src) || w.hijacked || w.done {
		return io.Copy(writerOnly{w}, src)
	}
	if !w.committed {
		n0, err := io.Copy(writerOnly{w}, io.LimitReader(src, sniffLen))
		n += n0
		if err != nil || n0 < sniffLen {
			return n, err
		}
		if !w.committed {
			if err := w.commit(false); err != nil {
				return n, err
			}
		}
	}
	if w.mode != modeFixed || w.req.Method == http.MethodHead {
		n0, err := io.Copy(writerOnly{w}, src)
		return n + n0, err
	}
	// The declared length bounds what is sent, as Write's checks do.
	left := w.contentLength - w.written
	if left <= 0 {
		n0, err := io.Copy(writerOnly{w}, src) // nothing more fits: Write says so
		return n + n0, err
	}
	if err := w.c.st.bw.Flush(); err != nil {
		w.closeAfter, w.failed = true, true
		return n, err
	}
	n0, err := rf.ReadFrom(&io.LimitedReader{R: src, N: left})
	n += n0
	w.written += n0
	if err != nil {
		w.closeAfter, w.failed = true, true
	}
	return n, err
}

// isFile reports whether r is a file, or io.LimitedReaders of one: what a
// connection's ReadFrom sends with sendfile.
func isFile(r io.Reader) bool {
	for {
		switch x := r.(type) {
		case *os.File:
			return true
		case *io.LimitedReader:
			r = x.R
		default:
			return false
		}
	}
}

// writerOnly hides a writer's ReadFrom from io.Copy.
type writerOnly struct{ io.Writer }
