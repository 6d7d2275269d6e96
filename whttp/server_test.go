package whttp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

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

// Clients that reset their connection before the server accepts it
// (SO_LINGER 0, then close, while the connection waits in the backlog)
// must not stop Serve: well-behaved clients beside them are served, and
// no descriptor is left open. (Issue 17: the accept path once gave such a
// connection a nil RemoteAddr, whttp called String on it and Serve's
// accept loop died with the listener open.)
func TestClientsResettingBeforeAcceptDoNotStopServe(t *testing.T) {
	for _, loops := range []int{1, 2} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			before := openFDs()
			logs := &logBuffer{}
			srv := &whttp.Server{Handler: echoHandler(), Logger: logs.logger()}
			var addr string
			var served atomic.Int64
			done := make(chan error, 1)
			go func() {
				_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
					ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
					if err != nil {
						return struct{}{}, err
					}
					addr = ln.Addr().String()
					// Before Serve accepts anything: clients that connect
					// and reset at once, left in the backlog.
					if _, err := weft.Offload(wt, func() (struct{}, error) { return struct{}{}, resetClients(addr, 20) }); err != nil {
						ln.Close()
						return struct{}{}, err
					}
					serving := weft.Go(wt, func(t *weft.Task) (struct{}, error) { return struct{}{}, srv.Serve(t, ln) })
					// Good clients, with more resets among them.
					_, err = weft.Offload(wt, func() (struct{}, error) {
						var wg sync.WaitGroup
						errs := make(chan error, 8)
						for i := range 8 {
							wg.Go(func() {
								for j := range 5 {
									if j%2 == 0 {
										if err := resetClients(addr, 3); err != nil {
											errs <- err
											return
										}
									}
									if err := getOnce(addr, fmt.Sprintf("/c%d-%d", i, j)); err != nil {
										errs <- err
										return
									}
									served.Add(1)
								}
							})
						}
						wg.Wait()
						close(errs)
						return struct{}{}, <-errs
					})
					serving.Cancel()
					if _, serr := serving.Await(wt); serr != nil && err == nil {
						err = serr
					}
					return struct{}{}, err
				}, weft.WithLoops(loops))
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%v\nlog:\n%s", err, logs.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the server hung")
			}
			if served.Load() != 40 {
				t.Fatalf("%d of 40 requests served", served.Load())
			}
			if strings.Contains(logs.String(), "panic") {
				t.Fatalf("a panic was logged:\n%s", logs.String())
			}
			waitFDs(t, before)
		})
	}
}

// resetClients connects n clients to addr and resets each at once.
func resetClients(addr string, n int) error {
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	return nil
}

// With WithLoops(2), connections are spread over the loops: requests of
// several connections run on both loops, each connection's on one loop
// at a time, and a handler sees where it runs with t.Loop().
func TestServerSpreadsConnectionsOverLoops(t *testing.T) {
	var mu sync.Mutex
	loopsSeen := map[int]int{}
	h := whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		l := t.Loop()
		mu.Lock()
		loopsSeen[l]++
		mu.Unlock()
		fmt.Fprintf(w, "%d", l)
	})
	ts := startServer(t, &whttp.Server{Handler: h}, weft.WithLoops(2))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(c)
			for range 5 {
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(loopsSeen) < 2 || loopsSeen[0]+loopsSeen[1] != 40 {
		t.Fatalf("requests per loop %v: want 40 requests on both loops", loopsSeen)
	}
}

func TestCurlTalksToTheServer(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream":
			for i := range 3 {
				fmt.Fprintf(w, "chunk%d\n", i)
				w.(http.Flusher).Flush()
			}
		default:
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s %d %s\n", r.Method, r.URL.Path, len(b), r.Header.Get("Expect"))
		}
	})})
	base := "http://" + ts.addr
	// Two URLs in one curl: the second on the same connection.
	if got := curl(t, base+"/a", base+"/b"); got != "GET /a 0 \nGET /b 0 \n" {
		t.Fatalf("curl GETs: %q", got)
	}
	if got := curl(t, base+"/stream"); got != "chunk0\nchunk1\nchunk2\n" {
		t.Fatalf("curl chunked: %q", got)
	}
	// A body of 2 MB: curl sends Expect: 100-continue and waits for it.
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, []byte(strings.Repeat("x", 2<<20)), 0o644)
	if got := curl(t, "-H", "Expect: 100-continue", "--data-binary", "@"+big, base+"/up"); got != "POST /up 2097152 100-continue\n" {
		t.Fatalf("curl POST: %q", got)
	}
	if got := curl(t, "-I", base+"/h"); !strings.HasPrefix(got, "HTTP/1.1 200 OK\r\n") || !strings.Contains(got, "Content-Length: 11") {
		t.Fatalf("curl HEAD: %q", got)
	}
	if got := curl(t, "--http1.0", base+"/old"); got != "GET /old 0 \n" {
		t.Fatalf("curl HTTP/1.0: %q", got)
	}
}

// Shutdown, from a goroutine outside the Run, stops the server as
// cancelling Serve's task does: the request in flight finishes whole (its
// handler not cancelled), idle connections close, the functions given to
// RegisterOnShutdown run, Shutdown returns once Serve has, and Serve
// returns http.ErrServerClosed, as does a later Serve.
func TestShutdownFromAGoroutineStopsGracefully(t *testing.T) {
	started := make(chan struct{})
	hooked := make(chan struct{})
	srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			if err := t.Sleep(300 * time.Millisecond); err != nil {
				io.WriteString(w, "cancelled")
				return
			}
		}
		io.WriteString(w, "done")
	})}
	srv.RegisterOnShutdown(func() { close(hooked) })
	ts := startServer(t, srv)
	idle := dialRaw(t, ts.addr)
	idle.send("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n")
	if bodyOf(t, idle.response("GET")) != "done" {
		t.Fatal("quick request")
	}
	busy := dialRaw(t, ts.addr)
	busy.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	resp := busy.response("GET")
	if got := bodyOf(t, resp); got != "done" || !resp.Close {
		t.Fatalf("in-flight response %q (close %v): want it whole, with Connection: close", got, resp.Close)
	}
	idle.expectClosed(5 * time.Second)
	select {
	case err := <-shut:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	select {
	case err := <-ts.errc:
		if err != http.ErrServerClosed {
			t.Fatalf("Serve: %v, want http.ErrServerClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	select {
	case <-hooked:
	case <-time.After(10 * time.Second):
		t.Fatal("the RegisterOnShutdown function did not run")
	}
	run(t, func(wt *weft.Task) error {
		ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		if err := srv.Serve(wt, ln); err != http.ErrServerClosed {
			return fmt.Errorf("Serve after Shutdown: %v, want http.ErrServerClosed", err)
		}
		if _, err := ln.Accept(wt); !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("Serve after Shutdown left its listener open (Accept: %v)", err)
		}
		return nil
	})
}

// A Shutdown whose context ends first returns its error; the drain goes
// on, and Serve returns once the handler has finished.
func TestShutdownReturnsWhenItsContextEnds(t *testing.T) {
	started := make(chan struct{})
	srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		close(started)
		t.Sleep(500 * time.Millisecond)
		io.WriteString(w, "done")
	})}
	ts := startServer(t, srv)
	busy := dialRaw(t, ts.addr)
	busy.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Shutdown: %v, want context.DeadlineExceeded", err)
	}
	if got := bodyOf(t, busy.response("GET")); got != "done" {
		t.Fatalf("response %q: the drain should go on after Shutdown returned", got)
	}
	if err := <-ts.errc; err != http.ErrServerClosed {
		t.Fatalf("Serve: %v, want http.ErrServerClosed", err)
	}
}

// Close cuts every connection off at once: the handler's task and its
// request context are cancelled, and Serve returns http.ErrServerClosed.
func TestCloseCutsOffAtOnce(t *testing.T) {
	started := make(chan struct{})
	sleepErr := make(chan error, 1)
	srv := &whttp.Server{DrainTimeout: time.Hour, Logger: (&logBuffer{}).logger(),
		Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			close(started)
			err := t.Sleep(time.Hour)
			if r.Context().Err() == nil {
				err = errors.New("the request context is not done")
			}
			sleepErr <- err
		})}
	ts := startServer(t, srv)
	busy := dialRaw(t, ts.addr)
	busy.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	start := time.Now()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sleepErr:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the handler's sleep returned %v, want a cancellation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not cancel the handler")
	}
	if err := <-ts.errc; err != http.ErrServerClosed {
		t.Fatalf("Serve: %v, want http.ErrServerClosed", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Serve returned %v after Close", el)
	}
	busy.expectClosed(5 * time.Second)
}

type ctxKey string

// BaseContext's and ConnContext's values reach r.Context(), and so does
// the base's cancellation; http.ServerContextKey gives the *whttp.Server
// and http.LocalAddrContextKey the listener's address.
func TestBaseContextAndConnContext(t *testing.T) {
	base, cancelBase := context.WithCancel(context.WithValue(context.Background(), ctxKey("base"), "b"))
	defer cancelBase()
	var conns atomic.Int32
	var srv *whttp.Server
	var lnAddr string
	srv = &whttp.Server{
		BaseContext: func(ln *weft.Listener) context.Context { lnAddr = ln.Addr().String(); return base },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, ctxKey("conn"), fmt.Sprint(conns.Add(1), " ", c.RemoteAddr() != nil))
		},
		Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			fmt.Fprintf(w, "%v %v %v %v", ctx.Value(ctxKey("base")), ctx.Value(ctxKey("conn")),
				ctx.Value(http.ServerContextKey) == srv, ctx.Value(http.LocalAddrContextKey).(net.Addr).String() == lnAddr)
			if r.URL.Path == "/wait" {
				done := ctx.Done()
				cancelBase()
				select {
				case <-done:
					io.WriteString(w, " cancelled")
				default:
					io.WriteString(w, " not cancelled")
				}
			}
		}),
	}
	ts := startServer(t, srv)
	for i, want := range []string{"b 1 true true true", "b 2 true true true"} {
		rc := dialRaw(t, ts.addr)
		rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if got := bodyOf(t, rc.response("GET")); got != want {
			t.Fatalf("connection %d: %q, want %q", i, got, want)
		}
	}
	rc := dialRaw(t, ts.addr)
	rc.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
	if got := bodyOf(t, rc.response("GET")); got != "b 3 true true true cancelled" {
		t.Fatalf("%q: want the base's cancellation to reach the request", got)
	}
}
