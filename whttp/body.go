package whttp

// The request body: read through the connection's input buffer (inbuf), by
// Content-Length or chunked (RFC 9112 section 7.1), in the connection's
// task. A request with a body gets a reqBody of its own (a handler that
// keeps r.Body past its return reads only errors from it); one without
// gets http.NoBody.
//
// The chunked decoder is strict: chunk-size is 1*HEXDIG of at most 16
// digits (net/http's bound) and at most 2^63-1; a chunk extension must
// follow the grammar (BWS ";" BWS token [BWS "=" BWS (token /
// quoted-string)]), where net/http ignores anything after ';'; every line
// ends in CRLF; chunk data is followed by CRLF; the trailer section's
// fields are checked as header fields are, and it is bounded (4 KB, as
// net/http's). As net/http does, a body whose framing carries too much
// besides data (extensions, tiny chunks: more than 16 KB of overhead
// beyond 16 bytes per chunk plus twice the data) is refused.

import (
	"bytes"
	"io"
	"net/http"
)

// maxChunkLine bounds a chunk-size line, extensions included.
const maxChunkLine = 4 << 10

// maxTrailerBytes bounds a chunked body's trailer section.
const maxTrailerBytes = 4 << 10

// errBodyFraming is the error a body read returns once its framing is
// found broken; the connection closes after the response.
type bodyError struct{ msg string }

func (e *bodyError) Error() string { return "whttp: malformed request body: " + e.msg }

var (
	errChunkLineTooLong = &bodyError{"chunk-size line too long"}
	errTrailerTooLarge  = &bodyError{"trailer section too large"}
	errChunkOverhead    = &bodyError{"chunked encoding contains too much non-data"}
)

// reqBody is a request's body, for the handler.
type reqBody struct {
	c       *conn
	gen     uint64 // the request's: reads after it ended fail
	chunked bool
	left    int64 // fixed: bytes left; chunked: of the current chunk
	// chunked state
	needCRLF bool  // the current chunk's data is read: CRLF follows
	excess   int64 // non-data bytes beyond the allowance
	trailer  *http.Header
	sawEOF   bool
	err      error // sticky: framing or I/O
	expect   bool  // a 100 Continue is owed before the first read
	closed   bool  // the handler closed it
}

// Read reads the body; the first read answers Expect: 100-continue.
func (b *reqBody) Read(p []byte) (int, error) {
	c := b.c
	if b.closed || c.gen != b.gen || !c.active || c.hijacked {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.sawEOF {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.expect {
		b.expect = false
		if w := &c.st.resp; !w.committed {
			bw := c.st.bw
			bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			if err := bw.Flush(); err != nil {
				b.err = err
				return 0, err
			}
		}
	}
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	if b.chunked {
		n, err = b.readChunked(p)
	} else {
		n, err = b.readFixed(p)
	}
	if err == io.EOF {
		b.sawEOF = true
		c.startWatch(c.t) // the request is read whole: watch for the client going
	} else if err != nil {
		b.err = err
	}
	return n, err
}

func (b *reqBody) readFixed(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.c.readSome(p)
	b.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && b.left == 0 {
		err = io.EOF
	}
	return n, err
}

func (b *reqBody) readChunked(p []byte) (int, error) {
	c := b.c
	n := 0
	for n < len(p) {
		if b.needCRLF {
			if n > 0 && c.st.in.buffered() < 2 {
				return n, nil // what we have, without waiting
			}
			if err := c.expect2("\r\n"); err != nil {
				return n, err
			}
			b.needCRLF = false
		}
		if b.left == 0 {
			if n > 0 && bytes.IndexByte(c.st.in.buf[c.st.in.r:c.st.in.w], '\n') < 0 {
				return n, nil
			}
			size, err := b.chunkHeader()
			if err != nil {
				return n, err
			}
			if size == 0 {
				if err := b.readTrailer(); err != nil {
					return n, err
				}
				return n, io.EOF
			}
			b.left = size
		}
		q := p[n:]
		if int64(len(q)) > b.left {
			q = q[:b.left]
		}
		m, err := c.readSome(q)
		n += m
		b.left -= int64(m)
		if b.left == 0 {
			b.needCRLF = true
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
		if m < len(q) || c.st.in.buffered() == 0 {
			return n, nil // do not wait for more while we have some
		}
	}
	return n, nil
}

// chunkHeader reads a chunk-size line and returns the size.
func (b *reqBody) chunkHeader() (int64, error) {
	line, err := b.c.readLine(maxChunkLine, errChunkLineTooLong)
	if err != nil {
		return 0, err
	}
	b.excess += int64(len(line)) + 2 + 2 // the line with its CRLF, and the CRLF after the data
	size, err := parseChunkLine(line)
	if err != nil {
		return 0, err
	}
	b.excess -= 16 + 2*size
	b.excess = max(b.excess, 0)
	if b.excess > 16<<10 {
		return 0, errChunkOverhead
	}
	return size, nil
}

// parseChunkLine parses chunk-size [ chunk-ext ] (without the CRLF).
func parseChunkLine(line string) (int64, error) {
	i := 0
	var n uint64
	for i < len(line) && hexVal(line[i]) >= 0 {
		if i == 16 {
			return 0, &bodyError{"chunk size too large"}
		}
		n = n<<4 | uint64(hexVal(line[i]))
		i++
	}
	if i == 0 {
		return 0, &bodyError{"invalid chunk size"}
	}
	if n > 1<<63-1 {
		return 0, &bodyError{"chunk size too large"}
	}
	if i < len(line) && (line[i] == ' ' || line[i] == '\t') && trimOWS(line[i:]) != "" {
		// BWS before ';' is in the grammar, but net/http and llhttp
		// refuse it: so do we. Trailing whitespace alone is allowed,
		// as net/http allows it.
		return 0, &bodyError{"whitespace after the chunk size"}
	}
	if err := checkChunkExt(line[i:]); err != nil {
		return 0, err
	}
	return int64(n), nil
}

// checkChunkExt checks chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "="
// BWS chunk-ext-val ] ), chunk-ext-val = token / quoted-string.
func checkChunkExt(s string) error {
	bad := &bodyError{"invalid chunk extension"}
	skipWS := func() {
		for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
			s = s[1:]
		}
	}
	token := func() bool {
		i := 0
		for i < len(s) && tokenTable[s[i]] {
			i++
		}
		s = s[i:]
		return i > 0
	}
	for {
		skipWS()
		if s == "" {
			return nil
		}
		if s[0] != ';' {
			return bad
		}
		s = s[1:]
		skipWS()
		if !token() {
			return bad
		}
		skipWS()
		if s == "" || s[0] != '=' {
			continue
		}
		s = s[1:]
		skipWS()
		if s != "" && s[0] == '"' {
			end, ok := quotedStringEnd(s)
			if !ok {
				return bad
			}
			s = s[end:]
		} else if !token() {
			return bad
		}
	}
}

// quotedStringEnd returns the length of the quoted-string s begins with
// (RFC 9110 section 5.6.4: qdtext is HTAB, SP and visible bytes but '"'
// and '\'; quoted-pair is '\' followed by HTAB, SP or a visible byte).
func quotedStringEnd(s string) (int, bool) {
	for i := 1; i < len(s); i++ {
		switch b := s[i]; {
		case b == '"':
			return i + 1, true
		case b == '\\':
			i++
			if i == len(s) || !qdTextOrPair(s[i]) {
				return 0, false
			}
		case !qdTextOrPair(b):
			return 0, false
		}
	}
	return 0, false
}

func qdTextOrPair(b byte) bool { return b == '\t' || b >= ' ' && b != 0x7f }

func hexVal(b byte) int {
	switch {
	case '0' <= b && b <= '9':
		return int(b - '0')
	case 'a' <= b && b <= 'f':
		return int(b-'a') + 10
	case 'A' <= b && b <= 'F':
		return int(b-'A') + 10
	}
	return -1
}

// readTrailer reads the trailer section after the last chunk: field lines
// then an empty line, into the request's Trailer (as net/http merges
// them).
func (b *reqBody) readTrailer() error {
	total := 0
	for {
		line, err := b.c.readLine(maxTrailerBytes-total, errTrailerTooLarge)
		if err != nil {
			return err
		}
		total += len(line) + 2
		if line == "" {
			return nil
		}
		key, value, herr := parseField(line)
		if herr != nil {
			return &bodyError{"trailer: " + herr.reason}
		}
		if *b.trailer == nil {
			*b.trailer = make(http.Header)
		}
		b.trailer.Add(key, value)
	}
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
	if b.sawEOF {
		return true
	}
	if b.err != nil || b.expect {
		return false // broken, or the client waits for a 100 Continue: never read
	}
	closed := b.closed
	b.closed = false
	land := getLand()
	defer putLand(land)
	scratch := land[:]
	total := 0
	for total <= maxPostHandlerRead {
		n, err := b.Read(scratch)
		total += n
		if err == io.EOF {
			return true
		}
		if err != nil {
			b.closed = closed
			return false
		}
	}
	b.closed = closed
	return false
}

// maxPostHandlerRead is how much of a request body the handler left unread
// the server reads and discards to keep the connection (net/http's figure).
const maxPostHandlerRead = 256 << 10
