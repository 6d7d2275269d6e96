package whttp_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

func TestChunkedResponseWithFlushAndTrailers(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		for i := range 3 {
			fmt.Fprintf(w, "part%d;", i)
			w.(http.Flusher).Flush()
			t.Sleep(10 * time.Millisecond)
		}
		w.Header().Set("X-Sum", "3 parts")
		w.Header().Set(http.TrailerPrefix+"X-Late", "undeclared")
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := rc.response("GET")
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("Transfer-Encoding %v, want chunked", resp.TransferEncoding)
	}
	if got := bodyOf(t, resp); got != "part0;part1;part2;" {
		t.Fatalf("body %q", got)
	}
	if resp.Trailer.Get("X-Sum") != "3 parts" || resp.Trailer.Get("X-Late") != "undeclared" {
		t.Fatalf("trailers %v", resp.Trailer)
	}
}

func TestHTTP10StreamingResponseEndsWithTheConnection(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "a")
		w.(http.Flusher).Flush()
		io.WriteString(w, "b")
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	resp := rc.response("GET")
	if got := bodyOf(t, resp); got != "ab" || resp.ContentLength != -1 || !resp.Close {
		t.Fatalf("body %q, length %d, close %v", got, resp.ContentLength, resp.Close)
	}
}

func TestBodylessStatusesAndHEADSendNoBody(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(http.StatusNoContent)
			if _, err := w.Write([]byte("x")); !errors.Is(err, http.ErrBodyNotAllowed) {
				panic("write to a 204 did not fail")
			}
		case "/len":
			w.Header().Set("Content-Length", "3")
			if _, err := io.WriteString(w, "abcd"); !errors.Is(err, http.ErrContentLength) {
				panic("write past Content-Length did not fail")
			}
			io.WriteString(w, "abc")
		default:
			io.WriteString(w, strings.Repeat("z", 5000)) // more than is held back
		}
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("GET /204 HTTP/1.1\r\nHost: x\r\n\r\nGET /len HTTP/1.1\r\nHost: x\r\n\r\nHEAD /big HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp := rc.response("GET"); resp.StatusCode != 204 || bodyOf(t, resp) != "" {
		t.Fatalf("204: status %d", resp.StatusCode)
	}
	if resp := rc.response("GET"); bodyOf(t, resp) != "abc" || resp.ContentLength != 3 {
		t.Fatal("declared length")
	}
	if resp := rc.response("HEAD"); resp.StatusCode != 200 || bodyOf(t, resp) != "" {
		t.Fatal("HEAD of a streamed response")
	}
	if resp := rc.response("GET"); len(bodyOf(t, resp)) != 5000 {
		t.Fatal("the request after the HEAD")
	}
}

// A handler that ends its response short, by writing less than its
// Content-Length or by panicking after the header went out, gets its
// connection closed at once (the client sees the body cut short, not a
// wait), and the server logs why; net/http, beside, does the same.
func TestShortResponseClosesTheConnectionAtOnce(t *testing.T) {
	short := func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/short":
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "12345")
		case "/panic":
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "12345")
			w.(http.Flusher).Flush()
			panic("after the header")
		case "/panic-chunked":
			io.WriteString(w, "part")
			w.(http.Flusher).Flush()
			panic("after the header")
		}
	}
	logs := &logBuffer{}
	ws := startServer(t, &whttp.Server{Handler: whttp.Adapt(http.HandlerFunc(short)), Logger: logs.logger()})
	naddr := startNetHTTP(t, http.HandlerFunc(short))
	for _, path := range []string{"/short", "/panic", "/panic-chunked"} {
		for _, srv := range []struct{ name, addr string }{{"whttp", ws.addr}, {"net/http", naddr}} {
			c, err := net.Dial("tcp", srv.addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(20 * time.Second))
			io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			start := time.Now()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("%s %s: %v", srv.name, path, err)
			}
			body, err := io.ReadAll(resp.Body)
			el := time.Since(start)
			c.Close()
			if resp.StatusCode != 200 || err == nil {
				t.Errorf("%s %s: status %d, body %q, %v: want 200 and the body cut short", srv.name, path, resp.StatusCode, body, err)
			}
			if el > 5*time.Second {
				t.Errorf("%s %s: the cut took %v: the connection was not closed at once", srv.name, path, el)
			}
		}
	}
	out := logs.String()
	for _, want := range []string{"wrote less than its Content-Length", "written=5", "content_length=10", "panicked after the response began"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
}

// Handlers get the response net/http gives them: status, header fields
// (Date aside; a body up to 6 KB gets a Content-Length where net/http,
// past 2 KB, chunks), body and trailers, for GET and HEAD, over HTTP/1.1
// and HTTP/1.0.
func TestResponsesAsNetHTTPGivesThem(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/plain":
			io.WriteString(w, "hello")
		case "/typed":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Add("X-Multi", "a")
			w.Header().Add("X-Multi", "b")
			io.WriteString(w, `{"a":1}`)
		case "/404":
			http.Error(w, "nope", http.StatusNotFound)
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		case "/redirect":
			http.Redirect(w, r, "/plain", http.StatusFound)
		case "/html":
			io.WriteString(w, "<!DOCTYPE html><p>x</p>")
		case "/declared":
			w.Header().Set("Content-Length", "3")
			io.WriteString(w, "abc")
		case "/big":
			io.WriteString(w, strings.Repeat("z", 10000))
		case "/flush":
			io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			io.WriteString(w, "b")
		case "/trailer":
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, "body")
			w.Header().Set("X-Sum", "4")
			w.Header().Set(http.TrailerPrefix+"X-Late", "late")
		case "/newline":
			w.Header().Set("X-Bad", "a\r\nInjected: yes")
			io.WriteString(w, "x")
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		case "/status":
			w.WriteHeader(299)
			io.WriteString(w, "odd")
		case "/empty":
		}
	})
	ws := startServer(t, &whttp.Server{Handler: whttp.Adapt(h)})
	naddr := startNetHTTP(t, h)
	describe := func(addr, method, proto, path string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		io.WriteString(c, method+" "+path+" "+proto+"\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: body: %v", method, path, err)
		}
		hdr := resp.Header.Clone()
		delete(hdr, "Date")
		cl := resp.ContentLength
		if len(resp.TransferEncoding) > 0 || cl == -1 && method != "HEAD" {
			cl = int64(len(body)) // chunked or to the close: the same bytes either way
		}
		delete(hdr, "Content-Length")
		var keys []string
		for k, v := range hdr {
			keys = append(keys, fmt.Sprintf("%s=%q", k, v))
		}
		slices.Sort(keys)
		shown := string(body)
		if len(shown) > 40 {
			shown = fmt.Sprintf("%s...(%d bytes)", shown[:20], len(shown))
		}
		return fmt.Sprintf("%s %d len=%d close=%v %v body=%q trailer=%v", resp.Proto, resp.StatusCode, cl, resp.Close, keys, shown, resp.Trailer)
	}
	for _, path := range []string{"/plain", "/typed", "/404", "/204", "/304", "/redirect", "/html", "/declared", "/big", "/flush", "/trailer", "/newline", "/close", "/status", "/empty"} {
		for _, method := range []string{"GET", "HEAD"} {
			for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
				if w, n := describe(ws.addr, method, proto, path), describe(naddr, method, proto, path); w != n {
					t.Errorf("%s %s %s:\n whttp:    %s\n net/http: %s", method, path, proto, w, n)
				}
			}
		}
	}
}

// A handler may read the body after it has begun to answer (full duplex):
// EnableFullDuplex says yes, under Adapt and under Blocking, and the
// client gets the first part of the answer before it sends the rest of
// its body.
func TestFullDuplexReadsTheBodyAfterWriting(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		io.WriteString(w, "ready;")
		rc.Flush()
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		fmt.Fprintf(w, "got %s", b)
	})
	for _, hh := range []whttp.Handler{whttp.Adapt(h), whttp.Blocking(h)} {
		ts := startServer(t, &whttp.Server{Handler: hh})
		rc := dialRaw(t, ts.addr)
		rc.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello")
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil {
			t.Fatal(err)
		}
		first := make([]byte, len("ready;"))
		if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "ready;" {
			t.Fatalf("first part %q, %v", first, err)
		}
		rc.send("world")
		rest, err := io.ReadAll(resp.Body)
		if err != nil || string(rest) != "got helloworld" {
			t.Fatalf("rest %q, %v", rest, err)
		}
	}
}

// http.FileServer (http.ServeContent: io.CopyN from the file, so the
// writer's io.ReaderFrom, sendfile on Linux) serves a large file whole, a
// Range of it, a HEAD and a conditional request as net/http's server
// does, over keep-alive, with a slow reader at first.
func TestFileServerSendsLargeFiles(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 5<<20+777)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "small.txt"), []byte("small file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := http.FileServer(http.Dir(dir))
	ws := startServer(t, &whttp.Server{Handler: whttp.Adapt(fs)})
	ns := startNetHTTP(t, fs)
	client := newClient(t)
	get := func(addr, path string, hdr map[string]string, method string) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, "http://"+addr+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // the server meets a full socket
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	for _, c := range []struct {
		path, method string
		hdr          map[string]string
	}{
		{"/big.bin", "GET", nil},
		{"/big.bin", "GET", map[string]string{"Range": "bytes=1000-2999999"}},
		{"/big.bin", "HEAD", nil},
		{"/small.txt", "GET", nil},
		{"/big.bin", "GET", map[string]string{"Range": "bytes=0-9,100-109"}},
	} {
		wr, wb := get(ws.addr, c.path, c.hdr, c.method)
		nr, nb := get(ns, c.path, c.hdr, c.method)
		multipart := strings.HasPrefix(nr.Header.Get("Content-Type"), "multipart/") // a random boundary
		if wr.StatusCode != nr.StatusCode || !multipart && !bytes.Equal(wb, nb) || len(wb) != len(nb) || wr.ContentLength != nr.ContentLength ||
			!multipart && wr.Header.Get("Content-Type") != nr.Header.Get("Content-Type") {
			t.Fatalf("%s %s %v: whttp %d (%d bytes, CL %d, %q), net/http %d (%d bytes, CL %d, %q)", c.method, c.path, c.hdr,
				wr.StatusCode, len(wb), wr.ContentLength, wr.Header.Get("Content-Type"), nr.StatusCode, len(nb), nr.ContentLength, nr.Header.Get("Content-Type"))
		}
		if c.path == "/big.bin" && c.hdr == nil && c.method == "GET" && !bytes.Equal(wb, data) {
			t.Fatal("the file's bytes differ")
		}
		if etag := wr.Header.Get("Last-Modified"); c.method == "GET" && c.hdr == nil && etag != "" {
			r2, b2 := get(ws.addr, c.path, map[string]string{"If-Modified-Since": etag}, "GET")
			if r2.StatusCode != http.StatusNotModified || len(b2) != 0 {
				t.Fatalf("conditional: %d, %d bytes", r2.StatusCode, len(b2))
			}
		}
	}
}
