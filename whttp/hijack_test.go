package whttp_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/testcert"
	"github.com/weft-go/weft/whttp"
)

// lineEcho is a protocol after an upgrade: each line the client sends
// comes back upper-cased, read by the handler's task and written by a
// task of its own, handed over on a weft channel (a reader task and a
// writer task sharing the hijacked connection). The handler writes the
// 101 itself when manual, else through WriteHeader.
func lineEcho(manual bool) whttp.Handler {
	return whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		nc, brw := upgradeLines(w, manual)
		if nc == nil {
			return
		}
		defer nc.Close()
		lines := weft.NewChan[string](16)
		writer := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			for {
				l, err := lines.Recv(t)
				if err != nil {
					return struct{}{}, nil
				}
				if _, err := io.WriteString(nc, strings.ToUpper(l)); err != nil {
					return struct{}{}, err
				}
			}
		})
		for {
			l, err := brw.ReadString('\n')
			if err != nil || l == "quit\n" {
				break
			}
			if err := lines.Send(t, l); err != nil {
				break
			}
		}
		lines.Close()
		writer.Await(t)
	})
}

// upgradeLines switches the connection of w to the lines protocol: it
// writes the 101 through WriteHeader (or, when manual, itself after the
// Hijack), checks that the hijacked writer refuses more, and tells the
// client how many bytes the handed-over reader held. It returns a nil
// conn, having answered 500, if the Hijack fails.
func upgradeLines(w http.ResponseWriter, manual bool) (net.Conn, *bufio.ReadWriter) {
	if !manual {
		w.Header().Set("Upgrade", "lines")
		w.Header().Set("Connection", "Upgrade")
		w.WriteHeader(http.StatusSwitchingProtocols)
	}
	nc, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), 500)
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			nc.Close()
			panic(r)
		}
	}()
	if _, err := w.Write([]byte("x")); err != http.ErrHijacked {
		panic(fmt.Sprintf("Write after Hijack: %v", err))
	}
	if _, _, err := w.(http.Hijacker).Hijack(); err != http.ErrHijacked {
		panic(fmt.Sprintf("second Hijack: %v", err))
	}
	if manual {
		io.WriteString(nc, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: lines\r\nConnection: Upgrade\r\n\r\n")
	}
	fmt.Fprintf(nc, "buffered %d\n", brw.Reader.Buffered())
	return nc, brw
}

// lineEchoGo is lineEcho for a standard handler run by Blocking, on
// goroutines: the handler's goroutine reads the lines and a goroutine of
// its own writes them back (the pumps of gorilla/websocket's examples).
func lineEchoGo(manual bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, brw := upgradeLines(w, manual)
		if nc == nil {
			return
		}
		defer nc.Close()
		lines := make(chan string, 16)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for l := range lines {
				if _, err := io.WriteString(nc, strings.ToUpper(l)); err != nil {
					return
				}
			}
		}()
		for {
			l, err := brw.ReadString('\n')
			if err != nil || l == "quit\n" {
				break
			}
			lines <- l
		}
		close(lines)
		<-done
	})
}

// hijackServer serves the line protocol after an upgrade: on the
// handler's task (lineEcho) or, blocking, on goroutines (lineEchoGo);
// over TLS when certs is not nil.
func hijackServer(t *testing.T, blocking, manual bool, certs *testcert.Certs, states *connStates, opts ...weft.Option) *testServer {
	h := lineEcho(manual)
	if blocking {
		h = whttp.Blocking(lineEchoGo(manual))
	}
	srv := &whttp.Server{Handler: h, ConnState: states.hook}
	if certs != nil {
		srv.TLSConfig = certs.ServerConfig()
	}
	return startServer(t, srv, opts...)
}

// dialHijack connects a rawConn to ts, over TLS when certs is not nil.
func dialHijack(t *testing.T, ts *testServer, certs *testcert.Certs) *rawConn {
	rc := dialRaw(t, ts.addr)
	if certs != nil {
		cfg := certs.ClientConfig()
		cfg.ServerName = "127.0.0.1"
		tc := tls.Client(rc.c, cfg)
		t.Cleanup(func() { tc.Close() })
		rc.c, rc.br = tc, bufio.NewReader(tc)
	}
	return rc
}

// connStates records the ConnState hook's calls.
type connStates struct {
	mu  sync.Mutex
	got []http.ConnState
}

func (cs *connStates) hook(_ net.Conn, s http.ConnState) {
	cs.mu.Lock()
	cs.got = append(cs.got, s)
	cs.mu.Unlock()
}

func (cs *connStates) has(s http.ConnState) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, x := range cs.got {
		if x == s {
			return true
		}
	}
	return false
}

// A handler hijacks the connection (through http.ResponseController), on
// one loop and on two, over plain TCP and TLS, on its task and, run by
// Blocking, on goroutines: the 101 it wrote with WriteHeader, or writes
// itself, reaches the client first; bytes the client sent with the
// request are in the bufio.Reader; a reader and a writer (two tasks, or
// two goroutines) then share the connection; Write on w returns
// http.ErrHijacked; ConnState reports StateHijacked and not StateClosed;
// nothing leaks (descriptors; goroutines: TestMain) once the handler
// closes the connection.
func TestHijackedConnectionIsTheHandlers(t *testing.T) {
	certs := newCerts(t)
	for _, loops := range []int{1, 2} {
		for _, mode := range []string{"task", "blocking"} {
			for _, tlsOn := range []bool{false, true} {
				for _, manual := range []bool{false, true} {
					name := fmt.Sprintf("loops=%d/%s/tls=%v/manual101=%v", loops, mode, tlsOn, manual)
					t.Run(name, func(t *testing.T) {
						var cs *testcert.Certs
						if tlsOn {
							cs = certs
						}
						before := openFDs()
						states := &connStates{}
						ts := hijackServer(t, mode == "blocking", manual, cs, states, weft.WithLoops(loops))
						rc := dialHijack(t, ts, cs)
						// The first line comes with the request, before the 101.
						rc.send("GET /lines HTTP/1.1\r\nHost: x\r\nUpgrade: lines\r\nConnection: Upgrade\r\n\r\nearly\n")
						resp, err := http.ReadResponse(rc.br, nil)
						if err != nil {
							t.Fatal(err)
						}
						if resp.StatusCode != 101 || resp.Header.Get("Upgrade") != "lines" || resp.Header.Get("Connection") != "Upgrade" {
							t.Fatalf("status %d, header %v", resp.StatusCode, resp.Header)
						}
						read := func() string {
							l, err := rc.br.ReadString('\n')
							if err != nil {
								t.Fatal(err)
							}
							return l
						}
						if got := read(); got != fmt.Sprintf("buffered %d\n", len("early\n")) {
							t.Fatalf("%q: the bytes sent with the request are not in the bufio.Reader", got)
						}
						if got := read(); got != "EARLY\n" {
							t.Fatalf("%q", got)
						}
						// Lines one at a time, then many at once: the writer
						// writes while the reader waits for more.
						for i := range 50 {
							rc.send(fmt.Sprintf("line %d\n", i))
							if got, want := read(), fmt.Sprintf("LINE %d\n", i); got != want {
								t.Fatalf("%q, want %q", got, want)
							}
						}
						var burst strings.Builder
						for i := range 2000 {
							fmt.Fprintf(&burst, "burst %d %s\n", i, strings.Repeat("x", 100))
						}
						go io.WriteString(rc.c, burst.String())
						for i := range 2000 {
							if got, want := read(), fmt.Sprintf("BURST %d %s\n", i, strings.Repeat("X", 100)); got != want {
								t.Fatalf("%q, want %q", got, want)
							}
						}
						rc.send("quit\n")
						rc.expectClosed(5 * time.Second)
						if err := ts.stop(t); err != nil {
							t.Fatal(err)
						}
						if !states.has(http.StateHijacked) || states.has(http.StateClosed) {
							t.Fatalf("ConnState calls %v: want StateHijacked and no StateClosed", states.got)
						}
						rc.c.Close()
						waitFDs(t, before)
					})
				}
			}
		}
	}
}

// The server forgets a hijacked connection: its timeouts no longer
// apply, a graceful stop neither waits for it in the drain nor closes it,
// and only once the drain is over is the handler's task cancelled, so
// that Serve can return; the handler then says goodbye on the connection
// and closes it.
func TestGracefulStopLeavesAHijackedConnectionToItsHandler(t *testing.T) {
	hijacked := make(chan struct{})
	srv := &whttp.Server{ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond,
		Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			nc, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer nc.Close()
			close(hijacked)
			err = t.Sleep(time.Hour)
			t.Protect(func(t *weft.Task) error {
				fmt.Fprintf(nc, "bye: %v\n", errors.Is(err, context.Canceled))
				return nil
			})
		})}
	ts := startServer(t, srv)
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-hijacked
	time.Sleep(300 * time.Millisecond) // past every timeout of the server
	start := time.Now()
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("Shutdown took %v", el)
	}
	l, err := rc.br.ReadString('\n')
	if err != nil || l != "bye: true\n" {
		t.Fatalf("%q, %v: want the handler's goodbye, after the server's timeouts and its stop", l, err)
	}
	rc.expectClosed(5 * time.Second)
}

// A handler that hijacks and returns without closing the connection
// leaves it open (it is not the server's to close); the server's own
// bookkeeping keeps nothing of it: Serve returns, and once the client
// closes its end and the handler's code drops it, nothing stays.
func TestHijackedConnectionTheHandlerKeepsOpenIsNotTheServers(t *testing.T) {
	before := openFDs()
	var kept net.Conn
	var mu sync.Mutex
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		nc, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		io.WriteString(nc, "mine\n")
		mu.Lock()
		kept = nc
		mu.Unlock()
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if l, _ := rc.br.ReadString('\n'); l != "mine\n" {
		t.Fatalf("%q", l)
	}
	if err := ts.stop(t); err != nil {
		t.Fatal(err)
	}
	// The server stopped; the connection is still open, the handler's.
	rc.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := rc.br.ReadByte(); err == nil || !errors.Is(err, errTimeoutLike(err)) {
		t.Fatalf("read %v: want the connection still open (a timeout)", err)
	}
	mu.Lock()
	kept.Close()
	mu.Unlock()
	rc.c.Close()
	waitFDs(t, before)
}

// errTimeoutLike returns err if it is a timeout, else a sentinel.
func errTimeoutLike(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return errors.New("not a timeout")
}

// A handler run by Blocking that hijacked its connection is left alone
// by the drain; then its r.Context() is done, Serve waits for it to
// return, and the connection stays open until the handler closes it.
func TestGracefulStopEndsAHijackingBlockingHandlersContext(t *testing.T) {
	hijacked := make(chan struct{})
	srv := &whttp.Server{Handler: whttp.Blocking(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer nc.Close()
		close(hijacked)
		<-r.Context().Done()
		fmt.Fprintf(nc, "bye: %v\n", errors.Is(r.Context().Err(), context.Canceled))
	}))}
	ts := startServer(t, srv)
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-hijacked
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := rc.br.ReadString('\n')
	if err != nil || l != "bye: true\n" {
		t.Fatalf("%q, %v: want the handler's goodbye after the stop", l, err)
	}
	rc.expectClosed(5 * time.Second)
}
