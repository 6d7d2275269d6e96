package whttp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

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

// A header sent a byte every 50 ms is answered 408 at ReadHeaderTimeout
// and the connection closed.
func TestSlowlorisGets408AtReadHeaderTimeout(t *testing.T) {
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
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Fatalf("status %d, close %v: want 408 and Connection: close", resp.StatusCode, resp.Close)
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

// A request head sent a byte at a time past ReadHeaderTimeout gets 408
// from whttp (net/http answers 400 when its deadline falls inside a line,
// nothing between lines), and the connection closes; a connection that
// sends nothing is closed by both without an answer.
func TestSlowHeaderBesideNetHTTP(t *testing.T) {
	const timeout = 300 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	ws := startServer(t, &whttp.Server{Handler: whttp.Adapt(h), ReadHeaderTimeout: timeout, Logger: (&logBuffer{}).logger()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ns := &http.Server{Handler: h, ReadHeaderTimeout: timeout, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() { defer close(done); ns.Serve(ln) }()
	defer func() { ns.Close(); <-done }()
	for _, srv := range []struct{ name, addr string }{{"whttp", ws.addr}, {"net/http", ln.Addr().String()}} {
		for _, slow := range []bool{true, false} {
			c, err := net.Dial("tcp", srv.addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(20 * time.Second))
			start := time.Now()
			stop := make(chan struct{})
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				if !slow {
					return
				}
				for _, b := range []byte("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: abcdefghijklmnopqrstuvwxyz\r\n") {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					if _, err := c.Write([]byte{b}); err != nil {
						return
					}
				}
			}()
			got, _ := io.ReadAll(c)
			el := time.Since(start)
			close(stop)
			<-sent
			c.Close()
			switch {
			case el < timeout*3/4 || el > 10*time.Second:
				t.Errorf("%s (slow %v): closed after %v, want about %v", srv.name, slow, el, timeout)
			case slow && srv.name == "whttp" && !strings.HasPrefix(string(got), "HTTP/1.1 408 "):
				t.Errorf("%s: a slow header got %q, want a 408", srv.name, got)
			case slow && srv.name != "whttp" && len(got) > 0 && !strings.HasPrefix(string(got), "HTTP/1.1 400 "):
				t.Errorf("%s: a slow header got %q, want a 400 or nothing", srv.name, got)
			case !slow && len(got) > 0:
				t.Errorf("%s: a silent connection got %q, want nothing", srv.name, got)
			}
		}
	}
}

// A panic while serving one connection outside the handler (here in the
// ConnState hook, at the connection's start or when it goes idle) closes
// that connection only, is logged with its stack, and Serve goes on:
// later clients are served and no descriptor leaks.
func TestPanicServingAConnectionClosesItAndServeGoesOn(t *testing.T) {
	before := openFDs()
	logs := &logBuffer{}
	var n atomic.Int64
	srv := &whttp.Server{Handler: echoHandler(), Logger: logs.logger(),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew && n.Add(1)%2 == 1 {
				panic("hook panics on odd connections")
			}
		}}
	ts := startServer(t, srv)
	ok := 0
	for i := range 6 {
		if err := getOnce(ts.addr, fmt.Sprintf("/%d", i)); err == nil {
			ok++
		}
	}
	if ok != 3 {
		t.Fatalf("%d of the 3 connections whose hook does not panic were served", ok)
	}
	if out := logs.String(); !strings.Contains(out, "hook panics on odd connections") || !strings.Contains(out, "conn_test.go") {
		t.Fatalf("the panic or its stack is not logged:\n%s", out)
	}
	if err := ts.stop(t); err != nil {
		t.Fatal(err)
	}
	waitFDs(t, before)
}

// Idle keep-alive connections wait with no task (GoWhenReadable): Dump
// lists each as a wait on its fd, not as a task in Conn.Read; their next
// requests, pipelined, are answered in order by the tasks that resume
// them; Shutdown closes the connections that are idle again at once.
func TestIdleKeepAliveConnectionsWaitWithNoTask(t *testing.T) {
	const n = 30
	if backend, _ := weft.Run(func(wt *weft.Task) (weft.Backend, error) { return weft.RunStats(wt).Backend, nil }); backend == weft.BackendPortable {
		t.Skip("the portable backend waits for readability in a task (GoWhenReadable starts it at once)")
	}
	srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path)
	})}
	ts := startServer(t, srv)
	fds := openFDs()
	rcs := make([]*rawConn, n)
	for i := range rcs {
		rcs[i] = dialRaw(t, ts.addr)
		rcs[i].send(fmt.Sprintf("GET /first%d HTTP/1.1\r\nHost: x\r\n\r\n", i))
		if got := bodyOf(t, rcs[i].response("GET")); got != fmt.Sprintf("/first%d", i) {
			t.Fatalf("first response %q", got)
		}
	}
	// The last response is written before its connection's task parks.
	var dump string
	for deadline := time.Now().Add(5 * time.Second); ; {
		var b strings.Builder
		weft.Dump(&b)
		dump = b.String()
		if strings.Count(dump, "GoWhenReadable)") == n || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if k := strings.Count(dump, "GoWhenReadable)"); k != n {
		t.Fatalf("Dump lists %d idle connections waiting in GoWhenReadable, want %d:\n%.3000s", k, n, dump)
	}
	if k := strings.Count(dump, " (read)"); k > 1 {
		t.Errorf("%d tasks wait to read an fd (only Serve's Accept should) while every connection is idle:\n%.3000s", k, dump)
	}
	for i, rc := range rcs {
		rc.send(fmt.Sprintf("GET /a%d HTTP/1.1\r\nHost: x\r\n\r\nGET /b%d HTTP/1.1\r\nHost: x\r\n\r\n", i, i))
	}
	for i, rc := range rcs {
		for _, want := range []string{fmt.Sprintf("/a%d", i), fmt.Sprintf("/b%d", i)} {
			if got := bodyOf(t, rc.response("GET")); got != want {
				t.Fatalf("pipelined response %q, want %q", got, want)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for _, rc := range rcs {
		rc.expectClosed(5 * time.Second)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Shutdown and the closes took %v", el)
	}
	for _, rc := range rcs {
		rc.c.Close()
	}
	waitFDs(t, fds)
}
