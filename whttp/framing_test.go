package whttp_test

// The framing corpus: raw requests, in bytes written for this test after
// the kinds of case in nodejs/llhttp's request tests (test/request/*.md),
// Go's net/http server and request-reading tests (serve_test.go's
// TestServerValidates*, readrequest_test.go), Node's request-smuggling
// regression tests (test/parallel/test-http-*smuggling*, -content-length,
// -transfer-encoding) and published request-smuggling cases (CL.TE,
// TE.CL, TE.TE obfuscations). Each runs against whttp and, beside it,
// against net/http's server with the same handler; whttp must answer as
// the case says (RFC 9112 and RFC 9110), and must never be looser than
// net/http: never run a handler for more requests, never serve a request
// net/http refuses. The one deliberate exception, empty lines before a
// request line (RFC 9112 section 2.2), is marked.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft/whttp"
)

// endReq follows each case on its connection: if the server is still in
// step with the client after the case, it answers it (200) and closes.
const endReq = "GET /end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

type framingCase struct {
	name string
	raw  string // sent as is, then endReq
	want []int  // whttp's statuses, in order (endReq's last, if answered)
	// served lists the paths whose handler whttp must run, in order ("/end"
	// included); nil: the path of each 2xx answer.
	served []string
	// looser: whttp may serve more than net/http here (documented).
	looser bool
	// bodyErr: the first request's body is malformed: its handler runs,
	// reads an error and answers 400; the connection then closes.
	bodyErr bool
	// netHangs: net/http waits for the body without end here; it is not
	// run beside.
	netHangs bool
}

// get is a GET of path with the given extra header lines.
func get(path, header string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + header + "\r\n"
}

func framingCorpus() []framingCase {
	big := strings.Repeat("a", 1100<<10) // over the 1 MB default header limit
	return []framingCase{
		// Baselines.
		{name: "plain GET", raw: get("/a", ""), want: []int{200, 200}},
		{name: "POST with Content-Length", raw: "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", want: []int{200, 200}},
		{name: "POST chunked", raw: "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", want: []int{200, 200}},
		{name: "pipelined", raw: get("/1", "") + get("/2", ""), want: []int{200, 200, 200}},

		// Request line (llhttp request tests, net/http TestServerValidatesMethod).
		{name: "method with a separator", raw: "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "empty method", raw: " / HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "NUL in method", raw: "GE\x00T / HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "two spaces after method", raw: "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "space in target", raw: "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "tab in target", raw: "GET /a\tb HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "NUL in target", raw: "GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "DEL in target", raw: "GET /a\x7fb HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "byte 0x80 in target", raw: "GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "trailing space after version", raw: "GET / HTTP/1.1 \r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "lower-case version", raw: "GET / http/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "version without minor", raw: "GET / HTTP/1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "two-digit major", raw: "GET / HTTP/11.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "version with junk", raw: "GET / HTTP/1.1x\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "HTTP/2.0", raw: "GET / HTTP/2.0\r\nHost: x\r\n\r\n", want: []int{505}},
		{name: "HTTP/0.9 version", raw: "GET / HTTP/0.9\r\nHost: x\r\n\r\n", want: []int{505}},
		{name: "HTTP/2 preface", raw: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", want: []int{505}},
		{name: "HTTP/1.2 is served as 1.1", raw: "GET /v HTTP/1.2\r\nHost: x\r\n\r\n", want: []int{200, 200}},
		{name: "no version", raw: "GET /\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "extension method", raw: "PURGE /m HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{200, 200}},
		// OPTIONS * is the server's to answer, as net/http does.
		{name: "asterisk form", raw: "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{200, 200}, served: []string{"/end"}},
		{name: "absolute form", raw: "GET http://example.com/abs?q=1 HTTP/1.1\r\nHost: other\r\n\r\n", want: []int{200, 200}, served: []string{"/abs", "/end"}},
		// A valid absolute-URI (scheme "example.com"), as net/url reads it.
		{name: "scheme-like target", raw: "GET example.com:80 HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{200, 200}, served: []string{"", "/end"}},

		// Line ends (llhttp: lenient flags off; RFC 9112 section 2.2).
		{name: "bare LF line ends", raw: "GET / HTTP/1.1\nHost: x\n\n", want: []int{400}},
		{name: "bare LF after a header", raw: "GET / HTTP/1.1\r\nHost: x\nX: y\r\n\r\n", want: []int{400}},
		{name: "bare CR in request line", raw: "GET / HTTP/1.1\rHost: x\r\n\r\n", want: []int{400}},
		{name: "bare CR in a value", raw: get("/", "X: a\rb\r\n"), want: []int{400}},
		{name: "bare CR ending a header", raw: "GET / HTTP/1.1\r\nHost: x\r\nX: y\r\r\n\r\n", want: []int{400}},

		// Field names (net/http TestServerValidatesHeaders; RFC 9112 section 5.1).
		{name: "space before colon", raw: get("/", "Foo : bar\r\n"), want: []int{400}},
		{name: "tab before colon", raw: get("/", "Foo\t: bar\r\n"), want: []int{400}},
		{name: "space in name", raw: get("/", "A space: foo\r\n"), want: []int{400}},
		{name: "empty name", raw: get("/", ": empty key\r\n"), want: []int{400}},
		{name: "byte 0xff in name", raw: get("/", "foo\xffbar: foo\r\n"), want: []int{400}},
		{name: "NUL in name", raw: get("/", "foo\x00bar: foo\r\n"), want: []int{400}},
		{name: "@ in name", raw: get("/", "fo@o: 1\r\n"), want: []int{400}},
		{name: "no colon", raw: get("/", "Bad Header Line\r\n"), want: []int{400}},
		{name: "obs-fold", raw: get("/", "X: abc\r\n\tdef\r\n"), want: []int{400}},
		{name: "obs-fold with space", raw: get("/", "X: abc\r\n def\r\n"), want: []int{400}},
		{name: "whitespace before the first field", raw: "GET / HTTP/1.1\r\n Host: x\r\n\r\n", want: []int{400}},

		// Field values.
		{name: "values with spaces and tabs", raw: get("/", "Foo: a space\r\nBar: a\ttab\r\n"), want: []int{200, 200}},
		{name: "NUL in value", raw: get("/", "Foo: foo\x00foo\r\n"), want: []int{400}},
		{name: "0x1f in value", raw: get("/", "Foo: foo\x1ffoo\r\n"), want: []int{400}},
		{name: "DEL in value", raw: get("/", "Foo: foo\x7ffoo\r\n"), want: []int{400}},
		{name: "vertical tab in value", raw: get("/", "Foo: a\x0bb\r\n"), want: []int{400}},
		{name: "obs-text in value", raw: get("/", "Foo: foo\xfffoo\r\n"), want: []int{200, 200}},
		{name: "empty value", raw: get("/", "Foo:\r\n"), want: []int{200, 200}},

		// Host (net/http TestServerValidatesHostHeader; RFC 9112 section 3.2).
		{name: "no Host in HTTP/1.1", raw: "GET / HTTP/1.1\r\n\r\n", want: []int{400}},
		{name: "empty Host", raw: "GET /e HTTP/1.1\r\nHost:\r\n\r\n", want: []int{200, 200}},
		{name: "IPv6 Host with zone", raw: "GET / HTTP/1.1\r\nHost: [::1%25en0]:80\r\n\r\n", want: []int{200, 200}},
		{name: "Host with underscore", raw: "GET / HTTP/1.1\r\nHost: foo-bar_baz.com\r\n\r\n", want: []int{200, 200}},
		{name: "Host with 0x06", raw: "GET / HTTP/1.1\r\nHost: \x06\r\n\r\n", want: []int{400}},
		{name: "Host with 0xff", raw: "GET / HTTP/1.1\r\nHost: \xff\r\n\r\n", want: []int{400}},
		{name: "Host with UTF-8", raw: "GET / HTTP/1.1\r\nHost: b\xc3\xbccher.de\r\n\r\n", want: []int{400}},
		{name: "Host with {", raw: "GET / HTTP/1.1\r\nHost: {\r\n\r\n", want: []int{400}},
		{name: "Host with a space", raw: "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", want: []int{400}},
		{name: "Host with @", raw: "GET / HTTP/1.1\r\nHost: user@x\r\n\r\n", want: []int{400}},
		{name: "two Hosts", raw: "GET / HTTP/1.1\r\nHost: first\r\nHost: second\r\n\r\n", want: []int{400}},
		{name: "two Hosts in HTTP/1.0", raw: "GET / HTTP/1.0\r\nHost: first\r\nHost: second\r\n\r\n", want: []int{400}},
		{name: "HTTP/1.0 without Host", raw: "GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", want: []int{200, 200}},
		{name: "absolute form without Host", raw: "GET http://example.com/ HTTP/1.1\r\n\r\n", want: []int{400}},
		{name: "CONNECT without Host", raw: "CONNECT example.com:443 HTTP/1.1\r\n\r\n", want: []int{200, 200}, served: []string{"", "/end"}},

		// Content-Length (RFC 9110 section 8.6, RFC 9112 section 6.3).
		{name: "CL not digits", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: notdigits\r\n\r\n", want: []int{400}},
		{name: "CL negative", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", want: []int{400}},
		{name: "CL with plus", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello", want: []int{400}},
		{name: "CL hex", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\nhello", want: []int{400}},
		{name: "CL list", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\nhello", want: []int{400}},
		{name: "CL with inner space", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1 2\r\n\r\nhello", want: []int{400}},
		{name: "CL empty", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", want: []int{400}},
		{name: "CL overflow", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", want: []int{400}},
		{name: "CL leading zeros", raw: "POST /z HTTP/1.1\r\nHost: x\r\nContent-Length: 0005\r\n\r\nhello", want: []int{200, 200}},
		{name: "CL duplicate, differing", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", want: []int{400}},
		{name: "CL duplicate, equal", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", want: []int{400}},
		{name: "CL space before colon", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length : 4\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "invalid CL beside chunked", raw: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: notdigits\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", want: []int{400}},

		// Content-Length and Transfer-Encoding together (RFC 9112 section
		// 6.1: chunked framing, then close): CL.TE and TE.CL.
		{name: "CL.TE", raw: "POST /clte HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{200}},
		{name: "TE.CL", raw: "POST /tecl HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n23\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n\r\n0\r\n\r\n", want: []int{200}},
		{name: "TE then CL", raw: "POST /tcl HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 13\r\n\r\n0\r\n\r\nSMUGGLED", want: []int{200}},

		// Transfer-Encoding (RFC 9112 sections 6.1, 6.3; TE.TE obfuscations).
		{name: "TE gzip", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", want: []int{400}},
		{name: "TE identity", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n", want: []int{400}},
		{name: "TE chunked, gzip", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", want: []int{400}},
		{name: "TE gzip, chunked", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", want: []int{501}},
		{name: "TE chunked twice", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", want: []int{400}},
		{name: "TE chunked on two lines", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", want: []int{400}},
		{name: "TE chunked then a second line", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-encoding: x\r\n\r\n0\r\n\r\n", want: []int{400}},
		{name: "TE xchunked", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", want: []int{400}},
		{name: "TE chunked-false", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked , chunked-false\r\n\r\n0\r\n\r\n", want: []int{400}},
		{name: "TE empty element", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked,\r\n\r\n0\r\n\r\n", want: []int{400}},
		{name: "TE empty", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n", want: []int{400}},
		{name: "TE space before colon", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{400}},
		{name: "TE vertical tab", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \x0bchunked\r\n\r\n0\r\n\r\n", want: []int{400}},
		{name: "TE obs-folded", raw: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", want: []int{400}},
		{name: "TE upper case", raw: "POST /uc HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n", want: []int{200, 200}},
		{name: "TE with tab OWS", raw: "POST /tab HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\tchunked\t\r\n\r\n0\r\n\r\n", want: []int{200, 200}},
		{name: "TE in HTTP/1.0", raw: "POST /h10 HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhelloGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{200}},

		// Chunked bodies (RFC 9112 section 7.1).
		{name: "chunk size overflow", bodyErr: true, raw: "POST /ov HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk size 2^63", bodyErr: true, netHangs: true, raw: "POST /ov HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8000000000000000\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk size negative", bodyErr: true, raw: "POST /neg HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk size 0x prefix", bodyErr: true, raw: "POST /hex HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk size empty", bodyErr: true, raw: "POST /e HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk data too long", bodyErr: true, raw: "POST /long HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk line bare LF", bodyErr: true, raw: "POST /lf HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk data bare LF", bodyErr: true, raw: "POST /lf2 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n", want: []int{400}},
		{name: "chunk extension", raw: "POST /ext HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n0\r\n\r\n", want: []int{200, 200}},
		{name: "chunk extension quoted", raw: "POST /extq HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"b \\\"c\\\"\" ; d\r\nhello\r\n0;e=f\r\n\r\n", want: []int{200, 200}},
		// BWS before the first ';' is refused, as net/http and llhttp do.
		{name: "space after chunk size", bodyErr: true, raw: "POST /sp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5 ;a=b\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk extension without name", bodyErr: true, raw: "POST /extn HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk extension control byte", bodyErr: true, raw: "POST /extc HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a\x01=b\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk extension unterminated quote", bodyErr: true, raw: "POST /extu HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a=\"b\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "chunk extension bare CR", bodyErr: true, raw: "POST /extr HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\rc\r\nhello\r\n0\r\n\r\n", want: []int{400}},
		{name: "trailer", raw: "POST /tr HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: v\r\n\r\n", want: []int{200, 200}},
		{name: "trailer obs-fold", bodyErr: true, raw: "POST /trf HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: v\r\n w\r\n\r\n", want: []int{400}},
		{name: "trailer space before colon", bodyErr: true, raw: "POST /trs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T : v\r\n\r\n", want: []int{400}},
		{name: "trailer bare LF", bodyErr: true, raw: "POST /trl HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: v\n\r\n", want: []int{400}},
		{name: "declared trailer Content-Length", raw: "POST /dt HTTP/1.1\r\nHost: x\r\nTrailer: Content-Length\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", want: []int{400}},

		// Empty lines before a request line (RFC 9112 section 2.2: SHOULD
		// ignore); net/http ignores them only after a POST.
		{name: "CRLF after a POST body", raw: "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nq=42\r\n" + get("/next", ""), want: []int{200, 200, 200}},
		{name: "CRLFs before the first request", raw: "\r\n\r\n" + get("/first", ""), want: []int{200, 200}, looser: true},
		{name: "bare LF before a request", raw: "\n" + get("/first", ""), want: []int{400}},

		// Sizes.
		{name: "header over the limit", raw: get("/", "Foo: "+big+"\r\n"), want: []int{431}},
		{name: "request line over the limit", raw: "GET /" + big + " HTTP/1.1\r\nHost: x\r\n\r\n", want: []int{431}},

		// Expect (RFC 9110 section 10.1.1).
		{name: "Expect unknown", raw: "POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx", want: []int{417}},
		{name: "Expect 100-continue without body", raw: "GET /ec HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n", want: []int{200, 200}},
	}
}

// served records the requests whose handler ran.
type servedLog struct {
	mu    sync.Mutex
	paths []string
}

func (l *servedLog) add(p string) {
	l.mu.Lock()
	l.paths = append(l.paths, p)
	l.mu.Unlock()
}

func (l *servedLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.paths
	l.paths = nil
	return p
}

// corpusHandler reads the body and answers 200 with what it saw, or 400
// if the body could not be read; it records every request it ran for.
func corpusHandler(log *servedLog) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		log.add(r.URL.Path)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%s %s %d %q", r.Method, r.URL.Path, len(body), r.Host)
	}
}

// outcome is what a server did with a case.
type outcome struct {
	statuses []int
	served   []string
	err      error // reading the responses failed (not EOF)
}

// exchange sends raw then endReq on a new connection to addr, and reads
// responses until the server closes the connection.
func exchange(t *testing.T, addr, raw string) (statuses []int, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go func() { io.WriteString(c, raw+endReq) }() // the server may stop reading
	br := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) {
				return statuses, nil
			}
			return statuses, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
}

func isReset(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && strings.Contains(oe.Err.Error(), "reset")
}

func TestFramingCorpusBesideNetHTTP(t *testing.T) {
	var wlog, nlog servedLog
	logs := &logBuffer{}
	ws := startServer(t, &whttp.Server{Handler: whttp.Adapt(corpusHandler(&wlog)), Logger: logs.logger()})
	naddr := startNetHTTP(t, corpusHandler(&nlog))

	var stricter []string
	for _, tc := range framingCorpus() {
		t.Run(tc.name, func(t *testing.T) {
			var w, n outcome
			w.statuses, w.err = exchange(t, ws.addr, tc.raw)
			w.served = wlog.take()
			if !tc.netHangs {
				n.statuses, n.err = exchange(t, naddr, tc.raw)
				n.served = nlog.take()
			}
			if w.err != nil {
				t.Fatalf("whttp: reading responses: %v (after %v)", w.err, w.statuses)
			}
			if !slices.Equal(w.statuses, tc.want) {
				t.Errorf("whttp answered %v, want %v (net/http: %v)", w.statuses, tc.want, n.statuses)
			}
			wantServed := tc.served
			if wantServed == nil {
				wantServed = servedPaths(tc)
			}
			if !slices.Equal(w.served, wantServed) {
				t.Errorf("whttp ran the handler for %q, want %q", w.served, wantServed)
			}
			for _, p := range w.served {
				if strings.Contains(strings.ToLower(p), "smuggled") {
					t.Errorf("whttp ran a smuggled request: %q", w.served)
				}
			}
			// Never looser than net/http: no more handler runs, and none
			// for a request net/http did not run.
			if !tc.looser && !tc.netHangs {
				if len(w.served) > len(n.served) {
					t.Errorf("whttp ran %q, more than net/http's %q", w.served, n.served)
				}
				for _, p := range w.served {
					if !slices.Contains(n.served, p) {
						t.Errorf("whttp ran %q, which net/http refused (net/http ran %q)", p, n.served)
					}
				}
			}
			if tc.netHangs {
				stricter = append(stricter, fmt.Sprintf("%s: whttp %v %q, net/http waits for the body", tc.name, w.statuses, w.served))
			} else if !slices.Equal(w.statuses, n.statuses) || !slices.Equal(w.served, n.served) {
				stricter = append(stricter, fmt.Sprintf("%s: whttp %v %q, net/http %v %q", tc.name, w.statuses, w.served, n.statuses, n.served))
			}
		})
	}
	t.Logf("where whttp and net/http differ (%d):\n%s", len(stricter), strings.Join(stricter, "\n"))
}

// servedPaths is the path of each request of tc whose answer is 2xx, in
// order: the case's requests, then /end.
func servedPaths(tc framingCase) []string {
	var paths []string
	for _, line := range strings.Split(tc.raw+endReq, "\r\n") {
		f := strings.Fields(line)
		if len(f) == 3 && strings.HasPrefix(f[2], "HTTP/") && strings.HasPrefix(f[1], "/") {
			path, _, _ := strings.Cut(f[1], "?")
			paths = append(paths, path)
		}
	}
	if tc.bodyErr {
		return paths[:1]
	}
	var out []string
	for i, code := range tc.want {
		if code/100 == 2 && i < len(paths) {
			out = append(out, paths[i])
		}
	}
	return out
}
