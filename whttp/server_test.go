package whttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// echoHandler answers with the method, the path and the body it read, and
// an X-Len header with the body's length.
func echoHandler() whttp.Handler {
	return whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Len", strconv.Itoa(len(body)))
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, body)
	})
}

func TestNetHTTPClientGetsResponsesOverOneKeptAliveConnection(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler()})
	client := newClient(t)
	reused := 0
	for i := range 5 {
		req, _ := http.NewRequest("POST", ts.url("/p"), strings.NewReader("body"+strconv.Itoa(i)))
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) {
				if info.Reused {
					reused++
				}
			},
		}))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := bodyOf(t, resp), "POST /p body"+strconv.Itoa(i); got != want {
			t.Fatalf("body %q, want %q", got, want)
		}
		if resp.ContentLength != int64(len("POST /p body0")) {
			t.Fatalf("Content-Length %d", resp.ContentLength)
		}
		if resp.Header.Get("Date") == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("header %v: want a Date and a sniffed Content-Type", resp.Header)
		}
	}
	if reused != 4 {
		t.Fatalf("%d of 4 later requests reused the connection", reused)
	}
}

func TestHandlerSuspendsWithoutHoldingUpOtherConnections(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			t.Sleep(500 * time.Millisecond)
		}
		io.WriteString(w, r.URL.Path)
	})})
	client := newClient(t)
	slow := make(chan time.Time, 1)
	go func() {
		resp, err := client.Get(ts.url("/slow"))
		if err == nil {
			resp.Body.Close()
		}
		slow <- time.Now()
	}()
	time.Sleep(50 * time.Millisecond)
	resp, err := client.Get(ts.url("/fast"))
	if err != nil {
		t.Fatal(err)
	}
	fastAt := time.Now()
	if bodyOf(t, resp) != "/fast" {
		t.Fatal("wrong body")
	}
	if slowAt := <-slow; !fastAt.Before(slowAt) {
		t.Fatal("the fast request waited for the slow one")
	}
}

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

func TestChunkedRequestBodyIsReadInTheHandlersTask(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Sleep(0)
			http.Error(w, err.Error(), 400)
			return
		}
		fmt.Fprintf(w, "%s|%s", b, r.Trailer.Get("X-T"))
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n")
	time.Sleep(20 * time.Millisecond) // the handler waits for the rest
	rc.send("6\r\n world\r\n0\r\nX-T: tv\r\n\r\n")
	if got := bodyOf(t, rc.response("POST")); got != "hello world|tv" {
		t.Fatalf("body %q", got)
	}
}

func TestPipelinedRequestsGetResponsesInOrder(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/1" {
			t.Sleep(30 * time.Millisecond) // the first takes longest
		}
		io.WriteString(w, r.URL.Path)
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nHEAD /3 HTTP/1.1\r\nHost: x\r\n\r\nGET /4 HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"/1", "/2", "", "/4"} {
		method := "GET"
		if want == "" {
			method = "HEAD"
		}
		resp := rc.response(method)
		if got := bodyOf(t, resp); got != want {
			t.Fatalf("body %q, want %q", got, want)
		}
		if method == "HEAD" && resp.ContentLength != 2 {
			t.Fatalf("HEAD Content-Length %d, want the GET's 2", resp.ContentLength)
		}
	}
}

func TestExpectContinueIsAnsweredWhenTheHandlerReads(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler()})
	rc := dialRaw(t, ts.addr)
	rc.send("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
	line, err := rc.br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("first line %q, %v: want a 100 Continue", line, err)
	}
	if blank, _ := rc.br.ReadString('\n'); blank != "\r\n" {
		t.Fatalf("after the 100: %q", blank)
	}
	rc.send("data")
	if got := bodyOf(t, rc.response("PUT")); got != "PUT /up data" {
		t.Fatalf("body %q", got)
	}
}

func TestExpectContinueNotReadClosesTheConnection(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden) // without reading the body
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
	resp := rc.response("PUT")
	if resp.StatusCode != 403 || !resp.Close {
		t.Fatalf("status %d, close %v: want 403 and Connection: close, no 100", resp.StatusCode, resp.Close)
	}
	rc.expectClosed(5 * time.Second)
}

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

// A header sent a byte every 50 ms is answered 400 at ReadHeaderTimeout
// and the connection closed, as net/http does.
func TestSlowlorisGets400AtReadHeaderTimeout(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler(), ReadHeaderTimeout: 300 * time.Millisecond, Logger: (&logBuffer{}).logger()})
	rc := dialRaw(t, ts.addr)
	start := time.Now()
	rc.send("GET / HTTP/1.1\r\n")
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() { // a header byte every 50 ms, until the server answers
		defer close(sent)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := io.WriteString(rc.c, "X"); err != nil {
				return
			}
		}
	}()
	resp := rc.response("GET")
	el := time.Since(start)
	close(stop)
	<-sent
	if resp.StatusCode != 400 || !resp.Close {
		t.Fatalf("status %d, close %v: want 400 and Connection: close", resp.StatusCode, resp.Close)
	}
	if el < 250*time.Millisecond || el > 5*time.Second {
		t.Fatalf("answered after %v, want about the 300ms ReadHeaderTimeout", el)
	}
	rc.expectClosed(5 * time.Second)
}

// A connection that sends nothing is closed at ReadHeaderTimeout without
// an answer, as net/http does.
func TestSilentConnectionIsClosedAtReadHeaderTimeoutWithoutAnswer(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler(), ReadHeaderTimeout: 200 * time.Millisecond})
	rc := dialRaw(t, ts.addr)
	start := time.Now()
	rc.expectClosed(5 * time.Second)
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the timeout", el)
	}
}

func TestIdleKeepAliveConnectionClosesAfterIdleTimeout(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler(), IdleTimeout: 200 * time.Millisecond})
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	rc.response("GET")
	start := time.Now()
	rc.expectClosed(5 * time.Second)
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", el)
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
	if !strings.Contains(out, "kaboom") || !strings.Contains(out, "server_test.go") {
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

func TestListenerClosedFromOutsideEndsServeWithErrClosed(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: echoHandler()})
	ts.ln.Close()
	select {
	case err := <-ts.errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Serve: %v, want net.ErrClosed", err)
		}
		ts.errc <- err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its listener closed")
	}
}

func TestGracefulStopFinishesInFlightRequestsAndClosesIdleOnes(t *testing.T) {
	started := make(chan struct{})
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			io.WriteString(w, "begun;")
			w.(http.Flusher).Flush()
			if err := t.Sleep(300 * time.Millisecond); err != nil {
				io.WriteString(w, "cancelled")
				return
			}
			if err := r.Context().Err(); err != nil {
				io.WriteString(w, "context done")
				return
			}
		}
		io.WriteString(w, "done")
	})})
	idle := dialRaw(t, ts.addr)
	idle.send("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n")
	if bodyOf(t, idle.response("GET")) != "done" {
		t.Fatal("quick request")
	}
	busy := dialRaw(t, ts.addr)
	busy.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop(t) }()
	resp := busy.response("GET")
	if got := bodyOf(t, resp); got != "begun;done" {
		t.Fatalf("in-flight response %q: want it whole, its handler not cancelled", got)
	}
	busy.expectClosed(5 * time.Second) // its header had gone out: closed after it
	idle.expectClosed(5 * time.Second)
	if err := <-stopped; err != nil {
		t.Fatalf("Serve after a graceful stop: %v, want nil", err)
	}
	if c, err := net.Dial("tcp", ts.addr); err == nil {
		c.Close()
		t.Fatal("a connection was accepted after the stop")
	}
}

func TestDrainTimeoutCutsOffWhatIsStillBusy(t *testing.T) {
	started := make(chan struct{})
	ctxDone := make(chan error, 1)
	ts := startServer(t, &whttp.Server{DrainTimeout: 200 * time.Millisecond, Logger: (&logBuffer{}).logger(),
		Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			close(started)
			for r.Context().Err() == nil {
				t.Sleep(10 * time.Millisecond)
			}
			ctxDone <- r.Context().Err()
		})})
	busy := dialRaw(t, ts.addr)
	busy.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	start := time.Now()
	if err := ts.stop(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if el := time.Since(start); el < 150*time.Millisecond || el > 10*time.Second {
		t.Fatalf("stopped after %v, want about the 200ms drain timeout", el)
	}
	if err := <-ctxDone; err == nil {
		t.Fatal("the request context was not cancelled")
	}
	busy.expectClosed(5 * time.Second)
}

func TestDrainTimeoutCancelsAHandlerThatOnlySleeps(t *testing.T) {
	started := make(chan struct{})
	sleepErr := make(chan error, 1)
	ts := startServer(t, &whttp.Server{DrainTimeout: 200 * time.Millisecond, Logger: (&logBuffer{}).logger(),
		Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			close(started)
			sleepErr <- t.Sleep(time.Hour)
		})})
	busy := dialRaw(t, ts.addr)
	busy.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	start := time.Now()
	if err := ts.stop(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("stopped after %v", el)
	}
	if err := <-sleepErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler's sleep returned %v, want a cancellation", err)
	}
}

func TestGracefulStopDoesNotCancelTasksAHandlerStarted(t *testing.T) {
	started := make(chan struct{})
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		p := weft.Go(t, func(t *weft.Task) (string, error) {
			close(started)
			if err := t.Sleep(200 * time.Millisecond); err != nil {
				return "", err
			}
			return "child finished", nil
		})
		v, err := p.Await(t)
		if err != nil {
			v = err.Error()
		}
		io.WriteString(w, v)
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop(t) }()
	if got := bodyOf(t, rc.response("GET")); got != "child finished" {
		t.Fatalf("body %q", got)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

func TestServerLeavesNoDescriptorOpen(t *testing.T) {
	before := openFDs()
	srv := &whttp.Server{Handler: echoHandler()}
	ts := startServer(t, srv)
	client := newClient(t)
	for range 3 {
		resp, err := client.Get(ts.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		bodyOf(t, resp)
	}
	idle := dialRaw(t, ts.addr) // an idle connection, closed by the stop
	idle.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	idle.response("GET")
	if err := ts.stop(t); err != nil {
		t.Fatal(err)
	}
	idle.expectClosed(5 * time.Second)
	idle.c.Close()
	client.Transport.(*http.Transport).CloseIdleConnections()
	waitFDs(t, before)
}
