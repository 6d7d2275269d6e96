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
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// hangupBound is how soon a handler must see its client go, in tests run
// under load (-race, several packages at once); the benchmark measures the
// real figure (BenchmarkHangup).
const hangupBound = 2 * time.Second

// waitKinds are handlers, each suspended in one kind of wait until the
// request ends early; each reports what its wait returned and the cause of
// r.Context().
var waitKinds = []struct {
	name string
	h    func(ready chan<- struct{}, out chan<- string) whttp.Handler
}{
	{"Sleep", func(ready chan<- struct{}, out chan<- string) whttp.Handler {
		return whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			close(ready)
			err := t.Sleep(time.Hour)
			out <- fmt.Sprintf("%v|%v", errors.Is(err, context.Canceled), context.Cause(r.Context()))
		})
	}},
	{"Recv", func(ready chan<- struct{}, out chan<- string) whttp.Handler {
		return whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			ch := weft.NewChan[int](0)
			close(ready)
			_, err := ch.Recv(t)
			out <- fmt.Sprintf("%v|%v", errors.Is(err, context.Canceled), context.Cause(r.Context()))
		})
	}},
	{"weft.Blocking", func(ready chan<- struct{}, out chan<- string) whttp.Handler {
		return whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			close(ready)
			_, err := weft.Blocking(t, func(ctx context.Context) (int, error) {
				<-ctx.Done() // a blocking call that ends with its context
				return 0, ctx.Err()
			})
			out <- fmt.Sprintf("%v|%v", errors.Is(err, context.Canceled), context.Cause(r.Context()))
		})
	}},
	{"whttp.Blocking", func(ready chan<- struct{}, out chan<- string) whttp.Handler {
		return whttp.Blocking(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(ready)
			<-r.Context().Done()
			out <- fmt.Sprintf("%v|%v", errors.Is(r.Context().Err(), context.Canceled), context.Cause(r.Context()))
		}))
	}},
	{"Await", func(ready chan<- struct{}, out chan<- string) whttp.Handler {
		return whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			p := weft.Go(t, func(t *weft.Task) (int, error) { return 0, t.Sleep(time.Hour) })
			close(ready)
			_, err := p.Await(t)
			out <- fmt.Sprintf("%v|%v", errors.Is(err, context.Canceled), context.Cause(r.Context()))
		})
	}},
	{"Offload", func(ready chan<- struct{}, out chan<- string) whttp.Handler {
		return whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			close(ready)
			_, err := weft.Offload(t, func() (int, error) {
				<-ctx.Done() // off the loop: it ends when the request does
				return 0, nil
			})
			out <- fmt.Sprintf("%v|%v", errors.Is(err, context.Canceled), context.Cause(r.Context()))
		})
	}},
	{"Checkpoint", func(ready chan<- struct{}, out chan<- string) whttp.Handler {
		return whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			close(ready)
			var err error
			for err == nil { // a CPU-bound loop: it never waits
				err = t.Checkpoint()
			}
			out <- fmt.Sprintf("%v|%v", errors.Is(err, context.Canceled), context.Cause(r.Context()))
		})
	}},
	{"Write", func(ready chan<- struct{}, out chan<- string) whttp.Handler {
		return whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			chunk := make([]byte, 64<<10)
			var err error
			for i := 0; err == nil; i++ {
				if i == 4 {
					close(ready) // the client reads nothing: the writes soon wait
				}
				_, err = w.Write(chunk)
			}
			// The write may fail first (a reset); the context follows.
			for i := 0; i < 1000 && r.Context().Err() == nil; i++ {
				t.Sleep(time.Millisecond)
			}
			out <- fmt.Sprintf("%v|%v", err != nil, context.Cause(r.Context()))
		})
	}},
}

// A client that closes or resets its connection while the handler waits
// (in Sleep, a channel receive, weft.Blocking, a whttp.Blocking handler,
// an Await, an Offload, a write to it) or runs a CPU-bound loop with
// Checkpoints ends that wait at once and cancels r.Context() with
// ErrClientGone as its cause, on one loop and on two.
func TestClientGoingAwayEndsTheHandlersWait(t *testing.T) {
	for _, loops := range []int{1, 2} {
		for _, kind := range waitKinds {
			for _, reset := range []bool{false, true} {
				name := fmt.Sprintf("%s/loops=%d/reset=%v", kind.name, loops, reset)
				t.Run(name, func(t *testing.T) {
					ready := make(chan struct{})
					out := make(chan string, 1)
					ts := startServer(t, &whttp.Server{Handler: kind.h(ready, out), Logger: (&logBuffer{}).logger()}, weft.WithLoops(loops))
					c, err := net.Dial("tcp", ts.addr)
					if err != nil {
						t.Fatal(err)
					}
					if kind.name == "Write" {
						c.(*net.TCPConn).SetReadBuffer(4 << 10)
					}
					io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
					select {
					case <-ready:
					case <-time.After(10 * time.Second):
						t.Fatal("the handler did not start")
					}
					if reset {
						c.(*net.TCPConn).SetLinger(0)
					}
					start := time.Now()
					c.Close()
					var got string
					select {
					case got = <-out:
					case <-time.After(10 * time.Second):
						t.Fatal("the handler's wait did not end after the client left")
					}
					if el := time.Since(start); el > hangupBound {
						t.Errorf("the handler saw the client go after %v", el)
					}
					ok, cause, _ := strings.Cut(got, "|")
					if ok != "true" || !strings.Contains(cause, whttp.ErrClientGone.Error()) {
						t.Fatalf("wait ended with an error %s, cause %q: want an error and ErrClientGone", ok, cause)
					}
				})
			}
		}
	}
}

// The cause matches ErrClientGone with errors.Is, and CloseNotify fires.
func TestClientGoneCauseAndCloseNotify(t *testing.T) {
	got := make(chan error, 1)
	notified := make(chan bool, 1)
	ready := make(chan struct{})
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		//lint:ignore SA1019 the deprecated interface is what this checks
		cn := w.(http.CloseNotifier).CloseNotify()
		close(ready)
		t.Sleep(time.Hour)
		got <- context.Cause(r.Context())
		select {
		case v := <-cn:
			notified <- v
		default:
			notified <- false
		}
	})})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-ready
	c.Close()
	if err := <-got; !errors.Is(err, whttp.ErrClientGone) || !errors.Is(err, io.EOF) {
		t.Fatalf("cause %v: want ErrClientGone wrapping io.EOF", err)
	}
	if !<-notified {
		t.Fatal("CloseNotify did not fire")
	}
}

// A request whose body the handler has read whole is watched from then
// on; one whose body is still unread is not (as net/http's).
func TestWatchBeginsWhenTheBodyIsRead(t *testing.T) {
	for _, readBody := range []bool{true, false} {
		t.Run(fmt.Sprint("readBody=", readBody), func(t *testing.T) {
			ready := make(chan struct{})
			out := make(chan error, 1)
			ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
				if readBody {
					io.ReadAll(r.Body)
				}
				close(ready)
				out <- t.Sleep(300 * time.Millisecond)
			})})
			c, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody")
			<-ready
			c.Close()
			err = <-out
			if readBody && !errors.Is(err, context.Canceled) {
				t.Fatalf("Sleep returned %v: the client's going was not seen", err)
			}
			if !readBody && err != nil {
				t.Fatalf("Sleep returned %v: a request with its body unread is not watched", err)
			}
		})
	}
}

// The watch's task starts only when the handler suspends: a handler that
// answers without suspending starts no task (the keep-alive connection's
// requests below spawn none, but for a connection that parked when the
// client was slow), and one that suspends starts the watch then.
func TestWatchStartsOnlyWhenTheHandlerSuspends(t *testing.T) {
	type counts struct{ before, after uint64 }
	seen := make(chan counts, 1)
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		var n counts
		n.before = weft.RunStats(t).Spawned
		if r.URL.Path == "/yield" {
			t.Yield()
		}
		n.after = weft.RunStats(t).Spawned
		seen <- n
	})})
	rc := dialRaw(t, ts.addr)
	const requests = 40
	var prev uint64
	spawning := 0
	for i := range requests {
		rc.send("GET /quick HTTP/1.1\r\nHost: x\r\n\r\n")
		bodyOf(t, rc.response("GET"))
		n := <-seen
		if n.after != n.before {
			t.Fatalf("request %d: a handler that did not suspend saw %d tasks start", i, n.after-n.before)
		}
		if i > 0 && n.before != prev {
			spawning++
		}
		prev = n.before
	}
	if spawning > requests/2 {
		t.Fatalf("%d of %d keep-alive requests whose handler did not suspend started tasks", spawning, requests-1)
	}
	rc.send("GET /yield HTTP/1.1\r\nHost: x\r\n\r\n")
	bodyOf(t, rc.response("GET"))
	if n := <-seen; n.after == n.before {
		t.Fatal("a handler that yielded started no watch")
	}
}

// The watch belongs to the connection, not to the scope the handler's
// code is in when the request has been read whole (or when it first
// waits): a Timeout around the body's read, once past, does not end the
// watch, and a Group around it does not wait for the watch (which waits
// for the client) as it ends. The client's going is seen after either,
// on one loop and on two.
func TestWatchOutlivesTheHandlersScopes(t *testing.T) {
	scopes := map[string]func(t *weft.Task, r *http.Request) error{
		"Timeout": func(t *weft.Task, r *http.Request) error {
			_, err := weft.Timeout(t, 20*time.Millisecond, func(t *weft.Task) (int, error) {
				io.ReadAll(r.Body)
				return 0, t.Sleep(time.Hour) // the deadline ends it
			})
			return err
		},
		"Group": func(t *weft.Task, r *http.Request) error {
			return weft.Group(t, func(g *weft.TaskGroup) error {
				io.ReadAll(r.Body)
				return t.Sleep(time.Millisecond) // suspended inside the group too
			})
		},
	}
	for _, loops := range []int{1, 2} {
		for name, scope := range scopes {
			t.Run(fmt.Sprintf("%s/loops=%d", name, loops), func(t *testing.T) {
				scoped := make(chan error, 1)
				out := make(chan string, 1)
				ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
					scoped <- scope(t, r)
					err := t.Sleep(time.Hour)
					out <- fmt.Sprintf("%v|%v", errors.Is(err, context.Canceled), context.Cause(r.Context()))
				})}, weft.WithLoops(loops))
				c, err := net.Dial("tcp", ts.addr)
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody")
				select {
				case err := <-scoped:
					if name == "Timeout" && !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("the Timeout returned %v", err)
					}
					if name == "Group" && err != nil {
						t.Fatalf("the Group returned %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the handler's scope did not end: it waits for the watch")
				}
				time.Sleep(10 * time.Millisecond) // the handler waits after its scope
				c.Close()
				select {
				case got := <-out:
					ok, cause, _ := strings.Cut(got, "|")
					if ok != "true" || !strings.Contains(cause, whttp.ErrClientGone.Error()) {
						t.Fatalf("wait ended with an error %s, cause %q: want an error and ErrClientGone", ok, cause)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the handler's wait did not end after the client left: the watch ended with the scope")
				}
			})
		}
	}
}

// A request that arrives while the previous one's handler runs is kept
// for its turn: the watch reads it, the first handler is not cancelled,
// and both are answered in order.
func TestPipelinedRequestArrivingDuringAHandlerIsKept(t *testing.T) {
	for _, loops := range []int{1, 2} {
		inFirst := make(chan struct{})
		ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/1" {
				close(inFirst)
				if err := t.Sleep(200 * time.Millisecond); err != nil {
					io.WriteString(w, "cancelled")
					return
				}
			}
			io.WriteString(w, r.URL.Path)
		})}, weft.WithLoops(loops))
		rc := dialRaw(t, ts.addr)
		rc.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")
		<-inFirst
		time.Sleep(20 * time.Millisecond) // the watch is reading
		rc.send("GET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
		for _, want := range []string{"/1", "/2", "/3"} {
			if got := bodyOf(t, rc.response("GET")); got != want {
				t.Fatalf("loops=%d: body %q, want %q", loops, got, want)
			}
		}
	}
}

// A client that only shuts down its writing side still gets the response:
// its handler's context is cancelled (as net/http's is), and what the
// handler writes then goes out.
func TestHalfClosedClientStillGetsTheResponse(t *testing.T) {
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if err := t.Sleep(time.Hour); err != nil {
			fmt.Fprintf(w, "ended early: %v", errors.Is(context.Cause(r.Context()), whttp.ErrClientGone))
		}
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	rc.c.(*net.TCPConn).CloseWrite()
	if got := bodyOf(t, rc.response("GET")); got != "ended early: true" {
		t.Fatalf("body %q", got)
	}
	rc.expectClosed(5 * time.Second)
}

// Over TLS (the watch reads the weft.TLSConn while the handler may write
// it) a client that closes (close_notify, then FIN), resets, or only
// sends close_notify ends the handler's wait, whatever its kind, on one
// loop and on two; a keep-alive client's next request, arriving while
// nothing runs, is served.
func TestClientGoingAwayOverTLS(t *testing.T) {
	certs := newCerts(t)
	for _, loops := range []int{1, 2} {
		for _, kind := range waitKinds {
			for _, how := range []string{"close", "reset", "closenotify", "keepalive"} {
				if kind.name != "Sleep" && (how == "closenotify" || how == "keepalive") {
					continue
				}
				t.Run(fmt.Sprintf("loops=%d/%s/%s", loops, kind.name, how), func(t *testing.T) {
					ready := make(chan struct{})
					out := make(chan string, 1)
					inner := kind.h(ready, out)
					ts := startServer(t, &whttp.Server{TLSConfig: certs.ServerConfig(), Logger: (&logBuffer{}).logger(),
						Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
							if r.URL.Path == "/quick" {
								io.WriteString(w, "quick")
								return
							}
							inner.ServeHTTP(t, w, r)
						})}, weft.WithLoops(loops))
					raw, err := net.Dial("tcp", ts.addr)
					if err != nil {
						t.Fatal(err)
					}
					defer raw.Close()
					if kind.name == "Write" {
						raw.(*net.TCPConn).SetReadBuffer(4 << 10)
					}
					cfg := certs.ClientConfig()
					cfg.ServerName = "127.0.0.1"
					tc := tls.Client(raw, cfg)
					br := bufio.NewReader(tc)
					if how == "keepalive" {
						for range 3 {
							io.WriteString(tc, "GET /quick HTTP/1.1\r\nHost: x\r\n\r\n")
							resp, err := http.ReadResponse(br, nil)
							if err != nil {
								t.Fatal(err)
							}
							if got := bodyOf(t, resp); got != "quick" {
								t.Fatalf("body %q", got)
							}
						}
					}
					if _, err := io.WriteString(tc, "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
						t.Fatal(err)
					}
					select {
					case <-ready:
					case <-time.After(10 * time.Second):
						t.Fatal("the handler did not start")
					}
					start := time.Now()
					switch how {
					case "reset":
						raw.(*net.TCPConn).SetLinger(0)
						raw.Close()
					case "closenotify":
						tc.CloseWrite() // close_notify; the TCP connection stays open
					default:
						tc.Close()
					}
					var got string
					select {
					case got = <-out:
					case <-time.After(10 * time.Second):
						t.Fatal("the handler's wait did not end after the client left")
					}
					if el := time.Since(start); el > hangupBound {
						t.Errorf("seen after %v", el)
					}
					if ok, cause, _ := strings.Cut(got, "|"); ok != "true" || !strings.Contains(cause, whttp.ErrClientGone.Error()) {
						t.Fatalf("wait ended with an error %s, cause %q", ok, cause)
					}
				})
			}
		}
	}
}

// A slow TLS client that sends a second request while the first handler
// runs has it served after the first, whole (the watch's bytes reach
// crypto/tls first).
func TestTLSRequestArrivingDuringAHandlerIsKept(t *testing.T) {
	certs := newCerts(t)
	inFirst := make(chan struct{})
	ts := startServer(t, &whttp.Server{TLSConfig: certs.ServerConfig(), Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/1" {
			close(inFirst)
			if err := t.Sleep(200 * time.Millisecond); err != nil {
				io.WriteString(w, "cancelled")
				return
			}
		}
		io.WriteString(w, r.URL.Path)
	})})
	tc, err := tls.Dial("tcp", ts.addr, certs.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	br := bufio.NewReader(tc)
	io.WriteString(tc, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")
	<-inFirst
	time.Sleep(20 * time.Millisecond)
	io.WriteString(tc, "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"/1", "/2"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := bodyOf(t, resp); got != want {
			t.Fatalf("body %q, want %q", got, want)
		}
	}
}

// Standard streaming handlers run by Blocking (Server-Sent Events) end
// when their clients leave: their contexts are done with ErrClientGone as
// the cause; 500 at once over plain TCP, 50 over TLS, on one loop and on
// two; no descriptor stays open (and no goroutine: TestMain).
func TestBlockingSSEHandlersEndWhenTheirClientsLeave(t *testing.T) {
	certs := newCerts(t)
	for _, c := range []struct {
		loops, n int
		tls      bool
	}{{1, 500, false}, {2, 500, false}, {1, 50, true}, {2, 50, true}} {
		t.Run(fmt.Sprintf("loops=%d/n=%d/tls=%v", c.loops, c.n, c.tls), func(t *testing.T) {
			before := openFDs()
			ended := make(chan error, c.n)
			srv := &whttp.Server{Handler: whttp.Blocking(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				tick := time.NewTicker(200 * time.Millisecond) // 500 handlers: 2,500 flushes a second for the loop
				defer tick.Stop()
				for i := 0; ; i++ {
					fmt.Fprintf(w, "data: %d\n\n", i)
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						ended <- context.Cause(r.Context())
						return
					case <-tick.C:
					}
				}
			}))}
			if c.tls {
				srv.TLSConfig = certs.ServerConfig()
			}
			ts := startServer(t, srv, weft.WithLoops(c.loops))
			conns := make([]net.Conn, c.n)
			for i := range conns {
				nc, err := net.Dial("tcp", ts.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer nc.Close()
				if c.tls {
					cfg := certs.ClientConfig()
					cfg.ServerName = "127.0.0.1"
					nc = tls.Client(nc, cfg)
				}
				conns[i] = nc
				nc.SetDeadline(time.Now().Add(30 * time.Second))
				io.WriteString(nc, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
				if err != nil {
					t.Fatal(err)
				}
				line, err := bufio.NewReader(resp.Body).ReadString('\n')
				if err != nil || !strings.HasPrefix(line, "data: ") {
					t.Fatalf("first event %q, %v", line, err)
				}
			}
			for _, nc := range conns {
				nc.Close()
			}
			deadline := time.After(30 * time.Second)
			for i := range c.n {
				select {
				case err := <-ended:
					if !errors.Is(err, whttp.ErrClientGone) {
						t.Fatalf("a handler ended with cause %v", err)
					}
				case <-deadline:
					t.Fatalf("%d of %d SSE handlers went on after their clients left", c.n-i, c.n)
				}
			}
			if err := ts.stop(t); err != nil {
				t.Fatal(err)
			}
			waitFDs(t, before)
		})
	}
}
