package whttp

// Parsing a request head (the request line and the header section) as RFC
// 9112 and RFC 9110 require, without net/textproto and without allocating
// beyond the head's one string: every string of the request (method,
// target, field values) is a substring of it, and field names already in
// canonical form (or common ones) are not copied either.
//
// The checks, each answered with the status the RFCs give (the server
// closes the connection after any of them):
//
//   - lines end in CRLF: a bare LF or a bare CR anywhere is 400 (net/http
//     takes a bare LF as a line end);
//   - request-line = method SP request-target SP HTTP-version, single
//     spaces; the method a token; the target visible ASCII only (net/http
//     lets bytes 0x80 and above through); the version HTTP/D.D, 505 for a
//     major version other than 1;
//   - field-name a token followed at once by ':' (whitespace before the
//     colon is 400, RFC 9112 section 5.1); a line that begins with
//     whitespace (obs-fold, or before the first field) is 400 (net/http
//     unfolds it); field values without control bytes other than HTAB;
//   - Host: exactly one in HTTP/1.1, of the characters a host and port
//     use (ASCII only); empty is valid;
//   - Content-Length: one field line of digits; two lines, even equal, are
//     400 (net/http accepts equal duplicates);
//   - Transfer-Encoding in HTTP/1.1: only "chunked" is accepted; chunked
//     not last is 400 (RFC 9112 section 6.3), another coding before it 501;
//     with Content-Length too the body is framed as chunked and the
//     connection closes after the response (section 6.1); in HTTP/1.0 it
//     is faulty framing: ignored for the body, and the connection closes.

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// teKind is what the Transfer-Encoding fields of a request say.
type teKind uint8

const (
	teNone        teKind = iota // no Transfer-Encoding field
	teChunked                   // exactly "chunked"
	teUnsupported               // chunked last, other codings before: 501
	teBad                       // chunked not last, twice, or malformed: 400
)

// reqHead is what the server needs of a request head beyond the fields,
// which go into the header map.
type reqHead struct {
	method, target, proto string
	major, minor          int
	host                  string
	hosts                 int    // Host field lines
	contentLength         int64  // -1: no Content-Length
	cls                   int    // Content-Length field lines
	tes                   int    // Transfer-Encoding field lines
	teCodings             int    // transfer codings in them
	teChunkeds            int    // how many of them are chunked
	teLastChunked         bool   // the last one is chunked
	teMalformed           bool   // an element is not a token
	connClose             bool   // Connection: close
	keepAlive             bool   // Connection: keep-alive
	trailer               bool   // a Trailer field
	expect                string // the first Expect field's value
	pragmaSeen            bool   // a Pragma field
	pragmaNoCache         bool   // the first Pragma field is no-cache
	cacheControl          bool   // a Cache-Control field
}

// headError is a request the server refuses: the status and why (logged at
// debug level; the reason is not sent).
type headError struct {
	code   int
	reason string
}

func (e *headError) Error() string { return "whttp: " + strconv.Itoa(e.code) + ": " + e.reason }

func badHead(reason string) *headError {
	return &headError{code: http.StatusBadRequest, reason: reason}
}

// headAlloc is the storage parseHead reuses: one-element value slices.
type headAlloc struct {
	vals []string
}

// value returns a one-element slice holding v, from the reused storage.
func (a *headAlloc) value(v string) []string {
	if len(a.vals) == cap(a.vals) {
		a.vals = make([]string, 0, max(16, 2*cap(a.vals)))
	}
	n := len(a.vals)
	a.vals = append(a.vals, v)
	return a.vals[n : n+1 : n+1]
}

// mapEntryCost is what a new field name counts against the header budget,
// as net/http counts it: the map entry's memory.
const mapEntryCost = 200

// parseHead parses s, a request head from its request line to the empty
// line that ends it (CRLF CRLF included), whose every LF follows a CR (the
// reader checks that as it looks for the end). The fields but Host (which
// goes to the reqHead, as net/http's server takes it out of the header) go
// into hdr (empty on entry), their values into slices from a. budget
// bounds the memory the fields take, as net/http's does: field-name
// lengths plus mapEntryCost per name, plus value lengths.
func parseHead(s string, hdr http.Header, a *headAlloc, budget int) (reqHead, *headError) {
	h := reqHead{contentLength: -1}
	eol := strings.Index(s, "\r\n")
	if eol < 0 {
		return h, badHead("no request line")
	}
	if err := h.parseRequestLine(s[:eol]); err != nil {
		return h, err
	}
	for pos := eol + 2; ; {
		eol = strings.Index(s[pos:], "\r\n")
		if eol < 0 {
			return h, badHead("unterminated header") // not from the reader
		}
		line := s[pos : pos+eol]
		pos += eol + 2
		if line == "" {
			break
		}
		key, value, err := parseField(line)
		if err != nil {
			return h, err
		}
		if err := h.noteField(key, value); err != nil {
			return h, err
		}
		if key == "Host" {
			continue // r.Host has it; net/http's server takes it out of the header too
		}
		vv, seen := hdr[key]
		if !seen {
			budget -= len(key) + mapEntryCost
		}
		budget -= len(value)
		if budget < 0 {
			return h, &headError{code: http.StatusRequestHeaderFieldsTooLarge, reason: "header fields take too much memory"}
		}
		if seen {
			hdr[key] = append(vv, value)
		} else {
			hdr[key] = a.value(value)
		}
	}
	return h, h.check()
}

// parseRequestLine parses method SP request-target SP HTTP-version.
func (h *reqHead) parseRequestLine(line string) *headError {
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return badHead("malformed request line")
	}
	if !isToken(method) {
		return badHead("invalid method")
	}
	if target == "" {
		return badHead("empty request target")
	}
	for i := 0; i < len(target); i++ {
		if b := target[i]; b <= ' ' || b >= 0x7f {
			return badHead("invalid byte in request target")
		}
	}
	major, minor, ok := parseVersion(proto)
	if !ok {
		return badHead("malformed HTTP version")
	}
	if major != 1 {
		return &headError{code: http.StatusHTTPVersionNotSupported, reason: "unsupported protocol version"}
	}
	h.method, h.target, h.major, h.minor = internMethod(method), target, major, minor
	switch proto {
	case "HTTP/1.1":
		h.proto = "HTTP/1.1"
	case "HTTP/1.0":
		h.proto = "HTTP/1.0"
	default:
		h.proto = proto
	}
	return nil
}

// parseVersion parses HTTP-version = "HTTP/" DIGIT "." DIGIT (case
// sensitive, RFC 9112 section 2.3).
func parseVersion(v string) (major, minor int, ok bool) {
	if len(v) != len("HTTP/1.1") || v[:5] != "HTTP/" || v[6] != '.' || !isDigit(v[5]) || !isDigit(v[7]) {
		return 0, 0, false
	}
	return int(v[5] - '0'), int(v[7] - '0'), true
}

// internMethod returns the standard method names as constants, so that a
// request's method does not keep its head's string alive.
func internMethod(m string) string {
	switch m {
	case "GET":
		return http.MethodGet
	case "HEAD":
		return http.MethodHead
	case "POST":
		return http.MethodPost
	case "PUT":
		return http.MethodPut
	case "DELETE":
		return http.MethodDelete
	case "OPTIONS":
		return http.MethodOptions
	case "PATCH":
		return http.MethodPatch
	case "CONNECT":
		return http.MethodConnect
	case "TRACE":
		return http.MethodTrace
	}
	return m
}

// parseField parses field-line = field-name ":" OWS field-value OWS and
// returns the canonical name and the value.
func parseField(line string) (key, value string, err *headError) {
	if b := line[0]; b == ' ' || b == '\t' {
		return "", "", badHead("obsolete line folding or whitespace before a field name")
	}
	i := 0
	for i < len(line) && tokenTable[line[i]] {
		i++
	}
	if i == len(line) || line[i] != ':' {
		return "", "", badHead("invalid field name or no colon")
	}
	if i == 0 {
		return "", "", badHead("empty field name")
	}
	key = http.CanonicalHeaderKey(line[:i])
	v := line[i+1:]
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	if !validFieldValue(v) {
		return "", "", badHead("invalid byte in the value of " + key)
	}
	return key, v, nil
}

// noteField records what the server needs of the framing and routing
// fields.
func (h *reqHead) noteField(key, value string) *headError {
	switch key {
	case "Host":
		h.hosts++
		if h.hosts > 1 {
			return badHead("more than one Host field")
		}
		if !validHost(value) {
			return badHead("malformed Host field")
		}
		h.host = value
	case "Content-Length":
		h.cls++
		if h.cls > 1 {
			return badHead("more than one Content-Length field")
		}
		n, ok := parseDecimal(value)
		if !ok {
			return badHead("invalid Content-Length")
		}
		h.contentLength = n
	case "Transfer-Encoding":
		h.tes++
		h.addCodings(value)
	case "Connection":
		for f := range strings.SplitSeq(value, ",") {
			f = strings.Trim(f, " \t")
			if strings.EqualFold(f, "close") {
				h.connClose = true
			} else if strings.EqualFold(f, "keep-alive") {
				h.keepAlive = true
			}
		}
	case "Trailer":
		h.trailer = true
	case "Expect":
		if h.expect == "" {
			h.expect = value
		}
	case "Pragma":
		if !h.pragmaSeen {
			h.pragmaSeen = true
			h.pragmaNoCache = value == "no-cache"
		}
	case "Cache-Control":
		h.cacheControl = true
	}
	return nil
}

// addCodings folds one Transfer-Encoding field line's codings into what
// the lines before it said.
func (h *reqHead) addCodings(value string) {
	for f := range strings.SplitSeq(value, ",") {
		f = strings.Trim(f, " \t")
		if !isToken(f) { // an empty element too: net/http accepts only "chunked"
			h.teMalformed = true
			return
		}
		h.teCodings++
		h.teLastChunked = strings.EqualFold(f, "chunked")
		if h.teLastChunked {
			h.teChunkeds++
		}
	}
}

// teKind says how the Transfer-Encoding fields frame the body.
func (h *reqHead) teKind() teKind {
	switch {
	case h.tes == 0:
		return teNone
	case h.teMalformed || !h.teLastChunked || h.teChunkeds > 1:
		return teBad
	case h.teCodings == 1 && h.tes == 1:
		return teChunked
	default:
		return teUnsupported
	}
}

// check applies the rules that need the whole head.
func (h *reqHead) check() *headError {
	if h.major == 1 && h.minor >= 1 && h.hosts == 0 && h.method != http.MethodConnect {
		return badHead("missing required Host header")
	}
	if h.tes > 0 && h.minor >= 1 {
		switch h.teKind() {
		case teBad:
			return badHead("chunked is not the last transfer coding")
		case teUnsupported:
			return &headError{code: http.StatusNotImplemented, reason: "unsupported transfer encoding"}
		}
	}
	return nil
}

// parseDecimal parses 1*DIGIT into an int64, refusing signs, spaces and
// overflow (leading zeros are valid).
func parseDecimal(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	if len(s) > 19 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !isDigit(b) {
			return 0, false
		}
		d := int64(b - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// isToken reports whether s is a non-empty token (RFC 9110 section 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenTable[s[i]] {
			return false
		}
	}
	return true
}

// tokenTable holds tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" /
// "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
var tokenTable = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// validFieldValue reports whether v holds only field-vchar, SP and HTAB:
// no control bytes (CR, LF and NUL among them) and no DEL; obs-text (0x80
// and above) is allowed, as RFC 9110 section 5.5 says.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// validHost reports whether h holds only bytes a host and port use (RFC
// 3986's reg-name, IP literals and port), as net/http checks: ASCII only.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if !hostTable[h[i]] {
			return false
		}
	}
	return true
}

var hostTable = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!$%&'()*+,-.:;=[]_~" {
		t[c] = true
	}
	return t
}()

// pathSafe holds the bytes net/url leaves as they are in a path: a target
// of these alone (and a query) parses to Path = the path, RawPath empty.
var pathSafe = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "-_.~$&+,/:;=@" {
		t[c] = true
	}
	return t
}()

// parseTarget fills u from an origin-form request target without
// allocating when net/url would give the same result with no escaping to
// undo; otherwise (absolute-form, "*", escapes, CONNECT's authority-form)
// it returns url.ParseRequestURI's URL, as net/http does.
func parseTarget(u *url.URL, method, target string) (*url.URL, error) {
	if target[0] == '/' {
		path, query, hasQuery := strings.Cut(target, "?")
		fast := true
		for i := 0; i < len(path); i++ {
			if !pathSafe[path[i]] {
				fast = false
				break
			}
		}
		if fast {
			// As net/url: a lone '?' at the end forces an empty query.
			*u = url.URL{Path: path, RawQuery: query, ForceQuery: hasQuery && query == ""}
			return u, nil
		}
	}
	raw := target
	justAuthority := method == http.MethodConnect && target[0] != '/'
	if justAuthority {
		raw = "http://" + raw
	}
	pu, err := url.ParseRequestURI(raw)
	if err != nil {
		return nil, err
	}
	if justAuthority {
		pu.Scheme = ""
	}
	return pu, nil
}
