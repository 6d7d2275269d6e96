package whttp_test

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

func TestHTTP10GetsKeepAliveOnlyWhenItAsks(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler()})
	rc := dialRaw(t, ts.addr)
	rc.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	resp := rc.response("GET")
	if resp.Proto != "HTTP/1.0" || resp.Close || resp.Header.Get("Connection") != "keep-alive" {
		t.Fatalf("proto %s, close %v, Connection %q", resp.Proto, resp.Close, resp.Header.Get("Connection"))
	}
	if bodyOf(t, resp) != "GET /a " {
		t.Fatal("wrong body")
	}
	rc.send("GET /b HTTP/1.0\r\n\r\n")
	resp = rc.response("GET")
	if bodyOf(t, resp) != "GET /b " || !resp.Close {
		t.Fatalf("close %v: want the connection closed after a 1.0 request without keep-alive", resp.Close)
	}
	rc.expectClosed(5 * time.Second)
}

func TestHeaderOverMaxHeaderBytesGets431(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler(), MaxHeaderBytes: 1 << 10})
	rc := dialRaw(t, ts.addr)
	// Sent while the server answers: it may reset the connection after the
	// 431, so the write is not checked.
	go io.WriteString(rc.c, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 16<<10)+"\r\n\r\n")
	resp := rc.response("GET")
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
	// Under the limit is fine.
	rc2 := dialRaw(t, ts.addr)
	rc2.send("GET / HTTP/1.1\r\nHost: x\r\nX-Small: " + strings.Repeat("a", 512) + "\r\n\r\n")
	if resp := rc2.response("GET"); resp.StatusCode != 200 {
		t.Fatalf("status %d under the limit", resp.StatusCode)
	}
}

func TestHandlerPanicIs500LoggedWithStackAndTheServerGoesOn(t *testing.T) {
	var logs logBuffer
	ts := startServer(t, &whttp.Server{Logger: logs.logger(), Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("kaboom")
		}
		io.WriteString(w, "fine")
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("GET /boom HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := rc.response("GET")
	if resp.StatusCode != 500 || !resp.Close {
		t.Fatalf("status %d, close %v: want 500 and Connection: close", resp.StatusCode, resp.Close)
	}
	rc.expectClosed(5 * time.Second)
	out := logs.String()
	if !strings.Contains(out, "kaboom") || !strings.Contains(out, "request_test.go") {
		t.Fatalf("log lacks the panic or its stack:\n%s", out)
	}
	resp2, err := newClient(t).Get(ts.url("/ok"))
	if err != nil || bodyOf(t, resp2) != "fine" {
		t.Fatalf("after the panic: %v", err)
	}
}

func TestPanicAfterTheHeaderWentOutCutsTheResponse(t *testing.T) {
	var logs logBuffer
	ts := startServer(t, &whttp.Server{Logger: logs.logger(), Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the sentinel: not logged
	})})
	resp, err := newClient(t).Get(ts.url("/"))
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("a cut chunked response read as complete")
	}
	if strings.Contains(logs.String(), "panic") {
		t.Fatalf("ErrAbortHandler was logged:\n%s", logs.String())
	}
}

// The handler sees the same *http.Request from whttp as from net/http for
// valid requests: method, URL (the fast path for plain origin-form targets
// and net/url's for the rest), Host, header fields after the server's
// changes (Host moved out, Transfer-Encoding and Trailer taken, Pragma's
// Cache-Control), length, persistence, body and trailer.
func TestHandlerSeesTheRequestNetHTTPWouldGive(t *testing.T) {
	describe := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		keys := slices.Sorted(maps.Keys(r.Header))
		var hdr []string
		for _, k := range keys {
			hdr = append(hdr, fmt.Sprintf("%s=%q", k, r.Header[k]))
		}
		var tr []string
		for _, k := range slices.Sorted(maps.Keys(r.Trailer)) {
			tr = append(tr, fmt.Sprintf("%s=%q", k, r.Trailer[k]))
		}
		u := r.URL
		fmt.Fprintf(w, "%s %q proto=%s %d.%d url=%q path=%q rawpath=%q query=%q force=%v opaque=%q scheme=%q uhost=%q host=%q cl=%d te=%q close=%v body=%q err=%v hdr=%v trailer=%v remote=%v",
			r.Method, r.RequestURI, r.Proto, r.ProtoMajor, r.ProtoMinor, u.String(), u.Path, u.RawPath, u.RawQuery, u.ForceQuery, u.Opaque, u.Scheme, u.Host,
			r.Host, r.ContentLength, r.TransferEncoding, r.Close, body, err, hdr, tr, r.RemoteAddr != "")
	}
	ws := startServer(t, &whttp.Server{Handler: whttp.Adapt(http.HandlerFunc(describe))})
	naddr := startNetHTTP(t, http.HandlerFunc(describe))
	for _, raw := range []string{
		"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"GET /a/b.c?x=1&y=%20z HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: t\r\nAccept: */*\r\n\r\n",
		"GET /q? HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /q?a?b HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /q?? HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET //double//slash HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /esc%2Fslash%20sp HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /sub-delims!$&'()*+,;=:@ HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a|b^c`d{e}f\"g<h>i\\j HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /frag#ment HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /~user/_x-y.z HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://Example.COM:81/abs/p?q HTTP/1.1\r\nHost: ignored\r\n\r\n",
		"GET https://user:pw@h/ HTTP/1.1\r\nHost: h\r\n\r\n",
		"OPTIONS /opt HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"CONNECT /rpc HTTP/1.1\r\nHost: x\r\n\r\n",
		"get /lower HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost:\r\n\r\n",
		"GET / HTTP/1.1\r\nhost: lower\r\ncontent-type: text/plain\r\nx-custom-header: v\r\nX-CUSTOM-UPPER: w\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nAccept: a\r\nAccept: b\r\nCookie: c=1\r\nCookie: d=2\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-Spaces:   padded \t \r\nX-Empty:\r\nX-Obs: caf\xc3\xa9\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nPragma: no-cache\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
		"GET / HTTP/1.2\r\nHost: x\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
		"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0011\r\n\r\nhello world",
		"POST /p HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\na=1&b=2",
		"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum, x-other\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Sum: 5\r\nX-Other: o\r\nX-Undeclared: u\r\n\r\n",
		"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: only-trailer\r\n\r\n",
		"PUT /big HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n" + strings.Repeat("0123456789", 2000),
	} {
		wb := roundTripRaw(t, ws.addr, raw)
		nb := roundTripRaw(t, naddr, raw)
		if wb != nb {
			t.Errorf("%q:\n whttp:    %s\n net/http: %s", raw, wb, nb)
		}
	}
}

// roundTripRaw sends raw (one request, asking for close) and returns the
// response's status and body.
func roundTripRaw(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go io.WriteString(c, raw)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%q: body: %v", raw, err)
	}
	return resp.Status + " " + string(b)
}
