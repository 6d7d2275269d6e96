package whttp_test

import (
	"testing"
	"time"

	"github.com/weft-go/weft/whttp"
)

func TestMalformedRequestsGet400AndTheConnectionCloses(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler()})
	for _, bad := range []string{
		"GARBAGE\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
		"GET / HTTP/1.1\r\n\r\n", // no Host
		"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n",
	} {
		rc := dialRaw(t, ts.addr)
		rc.send(bad)
		resp := rc.response("GET")
		if resp.StatusCode != 400 || !resp.Close {
			t.Fatalf("%q: status %d, close %v; want 400 and Connection: close", bad, resp.StatusCode, resp.Close)
		}
		rc.expectClosed(5 * time.Second)
	}
	// The server goes on.
	resp, err := newClient(t).Get(ts.url("/after"))
	if err != nil || bodyOf(t, resp) != "GET /after " {
		t.Fatalf("after bad requests: %v", err)
	}
}

func TestOtherBadInputGetsWhatNetHTTPGives(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler()})
	for _, c := range []struct {
		req  string
		code int
	}{
		{"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
		// chunked not the final coding: 400 (RFC 9112 section 6.3; net/http says 501).
		{"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400},
		// A coding we do not know before chunked: 501 (RFC 9112 section 6.1).
		{"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
		{"POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx", 417},
	} {
		rc := dialRaw(t, ts.addr)
		rc.send(c.req)
		if resp := rc.response("GET"); resp.StatusCode != c.code {
			t.Fatalf("%q: status %d, want %d", c.req, resp.StatusCode, c.code)
		}
	}
}
