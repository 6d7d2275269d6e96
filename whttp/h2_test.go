package whttp_test

// HTTP/2 served by whttp, driven by Go's own HTTP/2 client
// (golang.org/x/net/http2's Transport, and net/http's with Protocols),
// curl, and raw frames for what no client sends.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
	"golang.org/x/net/http2"
)

// h2cServer serves h with h2c (prior knowledge) beside HTTP/1.
func h2cServer(t *testing.T, h whttp.Handler, opts ...weft.Option) (*whttp.Server, *testServer) {
	t.Helper()
	srv := &whttp.Server{Handler: h, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return srv, startServer(t, srv, opts...)
}

// h2cClient is Go's HTTP/2 client speaking h2c with prior knowledge.
func h2cClient(t *testing.T) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

func TestH2cHello(t *testing.T) {
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s", r.Proto, r.Method, r.URL.Path)
	}))
	c := h2cClient(t)
	for i := range 3 {
		resp, err := c.Get(ts.url(fmt.Sprintf("/x%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("HTTP/2.0 GET /x%d", i); string(b) != want || resp.ProtoMajor != 2 {
			t.Fatalf("got %q (%s), want %q", b, resp.Proto, want)
		}
		if resp.ContentLength != int64(len(b)) {
			t.Fatalf("Content-Length %d, body %d", resp.ContentLength, len(b))
		}
	}
}

// A handler that waits does not hold up the other streams of its
// connection: each stream's handler runs in a task of its own.
func TestH2SlowStreamDoesNotBlockOthers(t *testing.T) {
	release := make(chan struct{})
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			weft.Blocking(wt, func(ctx context.Context) (struct{}, error) {
				<-release
				return struct{}{}, nil
			})
		}
		io.WriteString(w, r.URL.Path)
	}))
	c := h2cClient(t)
	slow := make(chan string, 1)
	go func() {
		resp, err := c.Get(ts.url("/slow"))
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- string(b)
	}()
	time.Sleep(50 * time.Millisecond) // the slow request is in (not needed for correctness)
	for i := range 20 {
		resp, err := c.Get(ts.url(fmt.Sprintf("/fast%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != fmt.Sprintf("/fast%d", i) {
			t.Fatalf("body %q", b)
		}
	}
	select {
	case got := <-slow:
		t.Fatalf("the slow request ended early: %q", got)
	default:
	}
	close(release)
	if got := <-slow; got != "/slow" {
		t.Fatalf("slow: %q", got)
	}
}

// Request bodies larger than every window arrive whole, and echo back.
func TestH2LargeBodiesEcho(t *testing.T) {
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(w, r.Body)
		if err != nil || n != r.ContentLength && r.ContentLength >= 0 {
			t.Errorf("copy: %d of %d: %v", n, r.ContentLength, err)
		}
	}))
	c := h2cClient(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := strings.Repeat(fmt.Sprintf("%c", 'a'+i), 3<<20+i)
			resp, err := c.Post(ts.url("/echo"), "text/plain", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != body {
				t.Errorf("stream %d: echoed %d bytes, want %d", i, len(b), len(body))
			}
		}()
	}
	wg.Wait()
}

// A handler that never reads its (large) body stalls its own stream only:
// another stream's upload on the same connection completes.
func TestH2UnreadBodyDoesNotStallOthers(t *testing.T) {
	release := make(chan struct{})
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lazy" {
			weft.Blocking(wt, func(ctx context.Context) (struct{}, error) {
				<-release
				return struct{}{}, nil
			})
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	}))
	c := h2cClient(t)
	lazy := make(chan error, 1)
	go func() {
		// More than the stream's window: the client blocks on it.
		resp, err := c.Post(ts.url("/lazy"), "text/plain", strings.NewReader(strings.Repeat("x", 8<<20)))
		if err == nil {
			resp.Body.Close()
		}
		lazy <- err
	}()
	time.Sleep(100 * time.Millisecond)
	for i := range 3 {
		body := strings.Repeat("y", 3<<20)
		resp, err := c.Post(ts.url("/eager"), "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != fmt.Sprint(len(body)) {
			t.Fatalf("upload %d: server read %s bytes, want %d", i, b, len(body))
		}
	}
	close(release)
	<-lazy // the handler returned without reading: the server resets the upload
}

// r.Context() ends when the client resets the stream (it cancels the
// request), and the handler's task is cancelled.
func TestH2ResetCancelsHandler(t *testing.T) {
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		done := r.Context().Done() // made before the reset: closed by it
		started <- struct{}{}
		err := wt.Sleep(time.Minute)
		select {
		case <-done:
		default:
			t.Error("the Done channel taken before the reset is not closed")
		}
		if r.Context().Err() == nil {
			t.Error("the context is not done after the reset")
		}
		select {
		case <-r.Context().Done():
		default:
			t.Error("r.Context().Done() is not closed after the reset")
		}
		ended <- err
	}))
	c := h2cClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.url("/wait"), nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	resp.Body.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep returned %v, want a cancellation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not cancelled by the reset")
	}
}

// Trailers both ways: the request's (read after the body) and the
// response's (declared and with http.TrailerPrefix), as gRPC uses them.
func TestH2Trailers(t *testing.T) {
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-Sum")
		w.WriteHeader(200)
		io.WriteString(w, "body:"+string(b))
		w.Header().Set("X-Sum", "in="+r.Trailer.Get("X-Client"))
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
	}))
	c := h2cClient(t)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", ts.url("/t"), pr)
	req.Trailer = http.Header{"X-Client": nil}
	go func() {
		io.WriteString(pw, "hello")
		req.Trailer.Set("X-Client", "ct")
		pw.Close()
	}()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "body:hello" {
		t.Fatalf("body %q", b)
	}
	if got := resp.Trailer.Get("X-Sum"); got != "in=ct" {
		t.Fatalf("trailer X-Sum %q (%v)", got, resp.Trailer)
	}
	if got := resp.Trailer.Get("X-Late"); got != "late" {
		t.Fatalf("trailer X-Late %q (%v)", got, resp.Trailer)
	}
}

// Flush sends what is written at once: the client reads the first part
// while the handler still waits.
func TestH2Flush(t *testing.T) {
	next := make(chan struct{})
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		weft.Blocking(wt, func(ctx context.Context) (struct{}, error) {
			<-next
			return struct{}{}, nil
		})
		io.WriteString(w, "second\n")
	}))
	c := h2cClient(t)
	resp, err := c.Get(ts.url("/f"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first\n" {
		t.Fatalf("first part %q: %v", buf, err)
	}
	close(next)
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != "second\n" {
		t.Fatalf("rest %q", rest)
	}
}

// A graceful stop sends GOAWAY: the request in flight finishes, and Serve
// returns.
func TestH2GracefulStop(t *testing.T) {
	started := make(chan struct{})
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		close(started)
		wt.Sleep(200 * time.Millisecond)
		io.WriteString(w, "done")
	}))
	c := h2cClient(t)
	got := make(chan string, 1)
	go func() {
		resp, err := c.Get(ts.url("/g"))
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(b)
	}()
	<-started
	ts.stop(t)
	if s := <-got; s != "done" {
		t.Fatalf("in-flight request: %q", s)
	}
}

// curl speaks h2c with prior knowledge to it; HTTP/1.1 still works on the
// same port.
func TestH2cCurl(t *testing.T) {
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s", r.Proto, r.Method, b)
	}))
	if got := curl(t, "--http2-prior-knowledge", "-d", "abc", ts.url("/")); got != "HTTP/2.0 POST abc" {
		t.Fatalf("curl h2c: %q", got)
	}
	if got := curl(t, ts.url("/")); got != "HTTP/1.1 GET " {
		t.Fatalf("curl HTTP/1.1: %q", got)
	}
	// --http2 on an http:// URL asks for the Upgrade: h2c handshake,
	// which whttp does not offer (as net/http): it is answered over
	// HTTP/1.1, and curl goes on with it.
	if got := curl(t, "--http2", "-d", "abc", ts.url("/")); got != "HTTP/1.1 POST abc" {
		t.Fatalf("curl --http2 (Upgrade: h2c): %q", got)
	}
}

// net/http's own client, with Protocols asking for unencrypted HTTP/2.
func TestH2cNetHTTPProtocols(t *testing.T) {
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(ts.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	if got := bodyOf(t, resp); got != "HTTP/2.0" {
		t.Fatalf("proto %q", got)
	}
}

// nghttp (Debian's nghttp2-client) speaks h2c to it, several streams on
// one connection; the test is skipped where there is no nghttp.
func TestH2cNghttp(t *testing.T) {
	path, err := exec.LookPath("nghttp")
	if err != nil {
		t.Skip("no nghttp:", err)
	}
	_, ts := h2cServer(t, whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "[%s %s]", r.Proto, r.URL.Path)
	}))
	out, err := exec.Command(path, "--timeout=20", ts.url("/a"), ts.url("/b"), ts.url("/c")).CombinedOutput()
	if err != nil {
		t.Fatalf("nghttp: %v\n%s", err, out)
	}
	for _, p := range []string{"/a", "/b", "/c"} {
		if !strings.Contains(string(out), "[HTTP/2.0 "+p+"]") {
			t.Fatalf("nghttp output lacks %s: %q", p, out)
		}
	}
}

// HTTP2Config.SendPingTimeout: a client that stays silent gets a PING
// after SendPingTimeout and is cut PingTimeout later; one that answers
// its PINGs keeps its connection.
func TestH2HealthCheckPings(t *testing.T) {
	srv := &whttp.Server{
		Protocols: new(http.Protocols),
		HTTP2:     &http.HTTP2Config{SendPingTimeout: 50 * time.Millisecond, PingTimeout: 100 * time.Millisecond},
		Handler: whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "ok")
		}),
	}
	srv.Protocols.SetUnencryptedHTTP2(true)
	ts := startServer(t, srv)

	t.Run("silent", func(t *testing.T) {
		r := dialH2(t, ts.addr)
		start := time.Now()
		pings := 0
		r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			f, err := r.fr.ReadFrame()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("the silent connection was still open after 10 s (%d PINGs)", pings)
				}
				break // closed by the server
			}
			if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
				pings++
			}
		}
		if pings == 0 {
			t.Fatal("the server closed the silent connection without a PING first")
		}
		if el := time.Since(start); el < 150*time.Millisecond {
			t.Fatalf("closed after %v: before SendPingTimeout+PingTimeout (150 ms)", el)
		}
	})

	t.Run("answering", func(t *testing.T) {
		r := dialH2(t, ts.addr)
		pings := 0
		end := time.Now().Add(600 * time.Millisecond)
		r.c.SetReadDeadline(end)
		for {
			f, err := r.fr.ReadFrame()
			if err != nil {
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("the connection of a client that answers PINGs ended: %v (after %d PINGs)", err, pings)
				}
				break
			}
			switch f := f.(type) {
			case *http2.PingFrame:
				if !f.IsAck() {
					pings++
					r.mu.Lock()
					r.fr.WritePing(true, f.Data)
					r.flush()
					r.mu.Unlock()
				}
			case *http2.SettingsFrame:
				if !f.IsAck() {
					r.mu.Lock()
					r.fr.WriteSettingsAck()
					r.flush()
					r.mu.Unlock()
				}
			}
		}
		if pings < 2 {
			t.Fatalf("%d PINGs in 600 ms of silence with SendPingTimeout 50 ms", pings)
		}
		// And it still serves a request.
		r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		r.mu.Lock()
		r.headers(1, "/", true)
		r.flush()
		r.mu.Unlock()
		for {
			f, err := r.fr.ReadFrame()
			if err != nil {
				t.Fatalf("after the pings, the request got no answer: %v", err)
			}
			if h, ok := f.(*http2.MetaHeadersFrame); ok && h.StreamID == 1 {
				if st := h.PseudoValue("status"); st != "200" {
					t.Fatalf("after the pings, the request got %q", st)
				}
				break
			}
		}
	})
}
