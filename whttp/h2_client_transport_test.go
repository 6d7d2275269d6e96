package whttp_test

// The client's HTTP/2, in the spirit of x/net/http2's transport tests:
// against net/http's own HTTP/2 server and whttp's, over TLS and h2c, and
// against a scripted server (rawH2) for what well-behaved servers never
// do on cue (GOAWAY, resets, dying mid-body).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Target is an HTTP/2 server for the client: its base URL, a client
// set up to reach it, and the count of TCP connections it accepted.
type h2Target struct {
	name   string
	url    string
	client func() *whttp.Client
	conns  *atomic.Int32
}

// h2Targets starts h, a plain http.Handler, on net/http's HTTP/2 server
// and whttp's, over TLS (the client's default: ALPN) and h2c (prior
// knowledge). blocking: the handler waits on things outside the task
// (channels), so whttp runs it through Blocking.
func h2Targets(t *testing.T, h http.Handler, blocking bool, opts ...weft.Option) []h2Target {
	t.Helper()
	certs := newCerts(t)
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	var out []h2Target
	counter := func() (*atomic.Int32, func(net.Conn, http.ConnState)) {
		n := new(atomic.Int32)
		return n, func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				n.Add(1)
			}
		}
	}
	// net/http over TLS.
	{
		n, cs := counter()
		ns := httptest.NewUnstartedServer(h)
		ns.TLS = certs.ServerConfig()
		ns.EnableHTTP2 = true
		ns.Config.ConnState = cs
		ns.StartTLS()
		t.Cleanup(ns.Close)
		out = append(out, h2Target{"net/http-tls", ns.URL, func() *whttp.Client { return &whttp.Client{TLSConfig: certs.ClientConfig()} }, n})
	}
	// net/http over h2c.
	{
		n, cs := counter()
		ns := httptest.NewUnstartedServer(h)
		ns.Config.Protocols = new(http.Protocols)
		ns.Config.Protocols.SetHTTP1(true)
		ns.Config.Protocols.SetUnencryptedHTTP2(true)
		ns.Config.ConnState = cs
		ns.Start()
		t.Cleanup(ns.Close)
		out = append(out, h2Target{"net/http-h2c", ns.URL, func() *whttp.Client { return &whttp.Client{Protocols: h2c} }, n})
	}
	wh := whttp.Adapt(h)
	if blocking {
		wh = whttp.Blocking(h)
	}
	// whttp over TLS, and over h2c.
	{
		n, cs := counter()
		ws := startServer(t, &whttp.Server{TLSConfig: certs.ServerConfig(), Handler: wh, ConnState: cs}, opts...)
		out = append(out, h2Target{"whttp-tls", "https://" + ws.addr, func() *whttp.Client { return &whttp.Client{TLSConfig: certs.ClientConfig()} }, n})
	}
	{
		n, cs := counter()
		ws := startServer(t, &whttp.Server{Protocols: h2c, Handler: wh, ConnState: cs}, opts...)
		out = append(out, h2Target{"whttp-h2c", "http://" + ws.addr, func() *whttp.Client { return &whttp.Client{Protocols: h2c} }, n})
	}
	return out
}

// runOn runs f as the main task of a Run of loops loops.
func runOn(t *testing.T, loops int, f func(wt *weft.Task) error) {
	t.Helper()
	if _, err := weft.Run(func(wt *weft.Task) (struct{}, error) { return struct{}{}, f(wt) }, weft.WithLoops(loops)); err != nil {
		t.Fatal(err)
	}
}

// spin keeps the loop busy for d without suspending: with several loops,
// it makes the loop hand its other runnable tasks over to an idle one.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// loopSet records the loops tasks were seen on.
type loopSet struct {
	mu sync.Mutex
	m  map[int]int
}

func (ls *loopSet) add(l int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = map[int]int{}
	}
	ls.m[l]++
}

func (ls *loopSet) n() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.m)
}

// Many tasks, on one loop and on two, send requests at once to one host:
// they share one TCP connection, each on a stream, and each gets its own
// answer.
func TestClientH2ManyTasksShareOneConnection(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %d", r.Proto, r.URL.Path, len(b))
	})
	for _, loops := range []int{1, 2} {
		for _, tg := range h2Targets(t, h, false) {
			t.Run(fmt.Sprintf("%s/loops=%d", tg.name, loops), func(t *testing.T) {
				before := openSockets()
				client := tg.client()
				var seen loopSet
				runOn(t, loops, func(wt *weft.Task) error {
					const n = 40
					var ps []*weft.Promise[string]
					for i := range n {
						ps = append(ps, weft.Go(wt, func(wt *weft.Task) (string, error) {
							spin(200 * time.Microsecond)
							if err := wt.Yield(); err != nil {
								return "", err
							}
							seen.add(wt.Loop())
							resp, err := client.Post(wt, fmt.Sprintf("%s/p%d", tg.url, i), "text/plain", strings.NewReader(strings.Repeat("x", i*1000)))
							if err != nil {
								return "", err
							}
							defer resp.Body.Close()
							b, err := io.ReadAll(resp.Body)
							seen.add(wt.Loop())
							return string(b), err
						}))
					}
					got, err := weft.All(wt, ps...)
					if err != nil {
						return err
					}
					for i, g := range got {
						if want := fmt.Sprintf("HTTP/2.0 /p%d %d", i, i*1000); g != want {
							t.Errorf("request %d: %q, want %q", i, g, want)
						}
					}
					return nil
				})
				if c := tg.conns.Load(); c != 1 {
					t.Errorf("%d TCP connections for the requests of 40 tasks, want 1", c)
				}
				if loops > 1 && seen.n() < 2 {
					t.Errorf("the tasks ran on loops %v only: want several", seen.m)
				}
				waitSockets(t, before)
			})
		}
	}
}

// An upload far larger than every flow-control window (the stream's 64
// KiB by default, the connection's) arrives whole, with a length known
// ahead and without.
func TestClientH2HugeUpload(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.New()
		n, err := io.Copy(sum, r.Body)
		fmt.Fprintf(w, "%d %x %v %d", n, sum.Sum(nil), err, r.ContentLength)
	})
	const size = 24 << 20
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	want := fmt.Sprintf("%d %x <nil>", size, sha256.Sum256(data))
	for _, tg := range h2Targets(t, h, false) {
		t.Run(tg.name, func(t *testing.T) {
			client := tg.client()
			run(t, func(wt *weft.Task) error {
				for _, known := range []bool{true, false} {
					var body io.Reader = bytes.NewReader(data)
					if !known {
						body = io.MultiReader(body) // hides the length
					}
					req, _ := http.NewRequest("PUT", tg.url+"/up", body)
					resp, err := client.Do(wt, req)
					if err != nil {
						return err
					}
					got := bodyOf(t, resp)
					cl := " -1"
					if known {
						cl = fmt.Sprintf(" %d", size)
					}
					if got != want+cl {
						t.Errorf("known length %v: server got %q, want %q", known, got, want+cl)
					}
				}
				return nil
			})
		})
	}
}

// trailerBody fills in the request's trailer as its end is read, as
// net/http allows.
type trailerBody struct {
	r   io.Reader
	req *http.Request
}

func (b *trailerBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.req.Trailer.Set("X-Sum", "late")
	}
	return n, err
}

// The request's trailer reaches the server, with values set before the
// body is sent and while it is read.
func TestClientH2RequestTrailers(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s|%s|%s", b, r.Trailer.Get("X-Early"), r.Trailer.Get("X-Sum"))
	})
	for _, tg := range h2Targets(t, h, false) {
		t.Run(tg.name, func(t *testing.T) {
			client := tg.client()
			run(t, func(wt *weft.Task) error {
				req, _ := http.NewRequest("POST", tg.url+"/t", nil)
				req.Body = io.NopCloser(&trailerBody{r: strings.NewReader("payload"), req: req})
				req.ContentLength = -1
				req.Trailer = http.Header{"X-Early": {"early"}, "X-Sum": nil}
				resp, err := client.Do(wt, req)
				if err != nil {
					return err
				}
				if got := bodyOf(t, resp); got != "payload|early|late" {
					t.Errorf("server saw %q, want payload|early|late", got)
				}
				return nil
			})
		})
	}
}

// A request body that fails midway resets the stream (the server's
// handler sees its body fail) and Do returns the body's error; the
// connection goes on.
func TestClientH2RequestBodyErrorResetsStream(t *testing.T) {
	bodyErr := errors.New("disk on fire")
	seen := make(chan string, 4)
	var entered atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			io.WriteString(w, "ok")
			return
		}
		entered.Add(1)
		_, err := io.Copy(io.Discard, r.Body)
		seen <- fmt.Sprint(err != nil)
	})
	for _, tg := range h2Targets(t, h, true) {
		t.Run(tg.name, func(t *testing.T) {
			client := tg.client()
			run(t, func(wt *weft.Task) error {
				// The body fails once the handler runs (whttp's server starts
				// no handler for a stream reset before it began).
				entered.Store(0)
				body := io.MultiReader(strings.NewReader(strings.Repeat("y", 100<<10)), &iotestErrReader{err: bodyErr, after: &entered})
				_, err := client.Post(wt, tg.url+"/fail", "text/plain", body)
				if !errors.Is(err, bodyErr) {
					t.Errorf("Do: %v, want the body's error", err)
				}
				if got, ok := recvWithin(wt, seen, 10*time.Second); !ok {
					t.Errorf("the handler never saw the stream end")
				} else if got != "true" {
					t.Errorf("the handler read the whole body without error")
				}
				resp, err := client.Get(wt, tg.url+"/ok")
				if err != nil {
					return err
				}
				if got := bodyOf(t, resp); got != "ok" {
					t.Errorf("next request: %q", got)
				}
				return nil
			})
			if c := tg.conns.Load(); c != 1 {
				t.Errorf("%d connections, want 1: the reset must not end the connection", c)
			}
		})
	}
}

// recvWithin receives from ch, a Go channel fed by a goroutine, polling
// with wt.Sleep so that the loop is never blocked.
func recvWithin[T any](wt *weft.Task, ch chan T, d time.Duration) (T, bool) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		select {
		case v := <-ch:
			return v, true
		default:
		}
		if wt.Sleep(2*time.Millisecond) != nil {
			break
		}
	}
	var zero T
	return zero, false
}

// iotestErrReader fails with err, once after is not zero (polled: a
// body's Read may block, as a file's does).
type iotestErrReader struct {
	err   error
	after *atomic.Int32
}

func (r *iotestErrReader) Read([]byte) (int, error) {
	for end := time.Now().Add(10 * time.Second); r.after != nil && r.after.Load() == 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	return 0, r.err
}

// Cancelling a request mid-response, by its context or by cancelling
// the task reading it, resets its stream: the handler's context ends,
// the read returns the cause, and the connection serves on.
func TestClientH2CancelMidResponse(t *testing.T) {
	ended := make(chan struct{}, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "ok")
			return
		case "/slow-header":
			select {
			case <-r.Context().Done():
				ended <- struct{}{}
			case <-time.After(20 * time.Second):
			}
			return
		}
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			ended <- struct{}{}
		case <-time.After(20 * time.Second):
		}
	})
	for _, tg := range h2Targets(t, h, true) {
		t.Run(tg.name, func(t *testing.T) {
			client := tg.client()
			run(t, func(wt *weft.Task) error {
				waitEnded := func(how string) {
					if _, ok := recvWithin(wt, ended, 10*time.Second); !ok {
						t.Errorf("%s: the handler's context did not end", how)
					}
				}
				// By the request's context.
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				cause := errors.New("user went away")
				req, _ := http.NewRequestWithContext(ctx, "GET", tg.url+"/slow", nil)
				resp, err := client.Do(wt, req)
				if err != nil {
					return err
				}
				buf := make([]byte, 5)
				if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first" {
					t.Fatalf("first bytes %q, %v", buf, err)
				}
				time.AfterFunc(20*time.Millisecond, func() { cancel(cause) })
				_, err = io.ReadAll(resp.Body)
				if !errors.Is(err, cause) {
					t.Errorf("read after the context ended: %v, want its cause", err)
				}
				resp.Body.Close()
				waitEnded("context")

				// By cancelling the task that reads.
				resp, err = client.Get(wt, tg.url+"/slow")
				if err != nil {
					return err
				}
				reader := weft.Go(wt, func(wt *weft.Task) ([]byte, error) { return io.ReadAll(resp.Body) })
				if err := wt.Sleep(20 * time.Millisecond); err != nil {
					return err
				}
				reader.Cancel()
				if _, err := reader.Await(wt); !errors.Is(err, context.Canceled) {
					t.Errorf("the cancelled reader: %v, want a cancellation", err)
				}
				resp.Body.Close()
				waitEnded("task")

				// Do's task cancelled while it waits for the header.
				do := weft.Go(wt, func(wt *weft.Task) (*http.Response, error) { return client.Get(wt, tg.url+"/slow-header") })
				resp, err = client.Get(wt, tg.url+"/ok")
				if err != nil {
					return err
				}
				if got := bodyOf(t, resp); got != "ok" {
					t.Errorf("after the cancellations: %q", got)
				}
				if err := wt.Sleep(20 * time.Millisecond); err != nil {
					return err
				}
				do.Cancel()
				if _, err := do.Await(wt); !errors.Is(err, context.Canceled) {
					t.Errorf("the cancelled Do: %v, want a cancellation", err)
				}
				waitEnded("Do")
				return nil
			})
			if c := tg.conns.Load(); c != 1 {
				t.Errorf("%d connections, want 1: cancelling a stream must not end the connection", c)
			}
		})
	}
}

// A response body is read by tasks other than the one that called Do,
// on another loop than the connection's.
func TestClientH2BodyReadByAnotherTaskOnAnotherLoop(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat(r.URL.Path, 20000))
	})
	for _, tg := range h2Targets(t, h, false) {
		t.Run(tg.name, func(t *testing.T) {
			client := tg.client()
			before := openSockets()
			var elsewhere atomic.Int32
			runOn(t, 2, func(wt *weft.Task) error {
				const n = 8
				var resps []*http.Response
				for i := range n {
					resp, err := client.Get(wt, fmt.Sprintf("%s/%d", tg.url, i))
					if err != nil {
						return err
					}
					resps = append(resps, resp)
				}
				connLoop := wt.Loop() // the connection's: Do's I/O brought the task there
				var ps []*weft.Promise[struct{}]
				for i, resp := range resps {
					ps = append(ps, weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
						// Keep the loop busy until the task is handed to the other.
						// (Once one task has moved, the others stop trying.)
						for end := time.Now().Add(5 * time.Second); wt.Loop() == connLoop && elsewhere.Load() == 0 && time.Now().Before(end); {
							spin(500 * time.Microsecond)
							if err := wt.Yield(); err != nil {
								return struct{}{}, err
							}
						}
						if wt.Loop() != connLoop {
							elsewhere.Add(1)
						}
						b, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						if want := strings.Repeat(fmt.Sprintf("/%d", i), 20000); err != nil || string(b) != want {
							t.Errorf("body %d: %d bytes, %v", i, len(b), err)
						}
						return struct{}{}, nil
					}))
				}
				_, err := weft.All(wt, ps...)
				return err
			})
			if elsewhere.Load() == 0 {
				t.Errorf("no body was read from a task on another loop than the connection's")
			}
			waitSockets(t, before)
		})
	}
}

// Reading an HTTP/2 response body from a goroutine, not a task, panics
// with a "weft:" message instead of hanging.
func TestClientH2BodyReadFromAGoroutinePanics(t *testing.T) {
	tg := h2Targets(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") }), false)[3]
	client := tg.client()
	run(t, func(wt *weft.Task) error {
		resp, err := client.Get(wt, tg.url+"/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		got := make(chan any, 1)
		go func() {
			defer func() { got <- recover() }()
			resp.Body.Read(make([]byte, 1))
		}()
		if r := <-got; !strings.HasPrefix(fmt.Sprint(r), "weft: ") {
			t.Errorf("a read from a goroutine: recovered %v, want a weft: panic", r)
		}
		return nil
	})
}

// The server's SETTINGS_MAX_CONCURRENT_STREAMS holds: extra requests wait
// for a stream on the same connection.
func TestClientH2RespectsMaxConcurrentStreams(t *testing.T) {
	var cur, peak atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		cur.Add(-1)
		io.WriteString(w, r.URL.Path)
	})
	certs := newCerts(t)
	var conns atomic.Int32
	ws := startServer(t, &whttp.Server{TLSConfig: certs.ServerConfig(), Handler: whttp.Blocking(h),
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 3},
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}})
	client := &whttp.Client{TLSConfig: certs.ClientConfig()}
	run(t, func(wt *weft.Task) error {
		// One request first, so that the server's SETTINGS are known.
		resp, err := client.Get(wt, "https://"+ws.addr+"/first")
		if err != nil {
			return err
		}
		bodyOf(t, resp)
		var ps []*weft.Promise[string]
		for i := range 12 {
			ps = append(ps, weft.Go(wt, func(wt *weft.Task) (string, error) {
				resp, err := client.Get(wt, fmt.Sprintf("https://%s/%d", ws.addr, i))
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				return string(b), err
			}))
		}
		got, err := weft.All(wt, ps...)
		for i, g := range got {
			if g != fmt.Sprintf("/%d", i) {
				t.Errorf("request %d: %q", i, g)
			}
		}
		return err
	})
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("at most %d handlers at once: want up to the server's limit of 3", p)
	}
	if c := conns.Load(); c != 1 {
		t.Errorf("%d connections, want 1 (extra requests wait)", c)
	}
}

// Idle connections are reused, and CloseIdleConnections closes HTTP/2
// ones too: the next request dials again.
func TestClientH2IdleReuseAndCloseIdleConnections(t *testing.T) {
	closed := make(chan struct{}, 4)
	certs := newCerts(t)
	var conns atomic.Int32
	ws := startServer(t, &whttp.Server{TLSConfig: certs.ServerConfig(), Handler: whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}), ConnState: func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed:
			closed <- struct{}{}
		}
	}})
	client := &whttp.Client{TLSConfig: certs.ClientConfig()}
	run(t, func(wt *weft.Task) error {
		for range 3 {
			resp, err := client.Get(wt, "https://"+ws.addr+"/")
			if err != nil {
				return err
			}
			if got := bodyOf(t, resp); got != "HTTP/2.0" {
				t.Errorf("proto %q", got)
			}
		}
		if c := conns.Load(); c != 1 {
			t.Errorf("%d connections for 3 requests one after another, want 1", c)
		}
		client.CloseIdleConnections()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Errorf("CloseIdleConnections left the HTTP/2 connection open")
		}
		resp, err := client.Get(wt, "https://"+ws.addr+"/")
		if err != nil {
			return err
		}
		bodyOf(t, resp)
		if c := conns.Load(); c != 2 {
			t.Errorf("%d connections after CloseIdleConnections, want 2", c)
		}
		return nil
	})
}

// HEAD answers, Content-Length, 1xx responses and response trailers,
// from net/http's server and whttp's.
func TestClientH2HeadContentLength1xxTrailers(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hints":
			w.Header().Set("Link", "</a.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Set("Trailer", "X-Checksum")
			io.WriteString(w, "after hints")
			w.Header().Set("X-Checksum", "abc")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Content-Length", "11")
			io.WriteString(w, "hello world")
		}
	})
	for _, tg := range h2Targets(t, h, false) {
		t.Run(tg.name, func(t *testing.T) {
			client := tg.client()
			run(t, func(wt *weft.Task) error {
				req, _ := http.NewRequest("HEAD", tg.url+"/cl", nil)
				resp, err := client.Do(wt, req)
				if err != nil {
					return err
				}
				if resp.Body != http.NoBody || resp.ContentLength != 11 || resp.ProtoMajor != 2 {
					t.Errorf("HEAD: body %T, ContentLength %d, %s", resp.Body, resp.ContentLength, resp.Proto)
				}
				resp, err = client.Get(wt, tg.url+"/cl")
				if err != nil {
					return err
				}
				if got := bodyOf(t, resp); got != "hello world" || resp.ContentLength != 11 {
					t.Errorf("GET: %q, ContentLength %d", got, resp.ContentLength)
				}
				resp, err = client.Get(wt, tg.url+"/empty")
				if err != nil {
					return err
				}
				if resp.StatusCode != 204 || resp.Body != http.NoBody {
					t.Errorf("204: %d, body %T", resp.StatusCode, resp.Body)
				}
				resp, err = client.Get(wt, tg.url+"/hints")
				if err != nil {
					return err
				}
				if resp.StatusCode != 200 {
					t.Errorf("after 103: status %d, want the final 200", resp.StatusCode)
				}
				if _, ok := resp.Trailer["X-Checksum"]; !ok {
					t.Errorf("declared trailer missing before the body: %v", resp.Trailer)
				}
				if got := bodyOf(t, resp); got != "after hints" || resp.Trailer.Get("X-Checksum") != "abc" {
					t.Errorf("after 103: %q, trailer %v", got, resp.Trailer)
				}
				return nil
			})
		})
	}
}

// rawH2 is a scripted HTTP/2 server (h2c, prior knowledge): each
// connection runs serve on a goroutine of its own.
type rawH2 struct {
	ln       net.Listener
	accepted atomic.Int32
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

// rawH2Conn is one connection of a rawH2.
type rawH2Conn struct {
	c    net.Conn
	fr   *http2.Framer
	enc  *hpack.Encoder
	hbuf bytes.Buffer
}

func startRawH2(t *testing.T, serve func(sc *rawH2Conn, n int)) *rawH2 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawH2{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := int(s.accepted.Add(1))
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(30 * time.Second))
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
					return
				}
				sc := &rawH2Conn{c: c, fr: http2.NewFramer(c, c)}
				sc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
				sc.enc = hpack.NewEncoder(&sc.hbuf)
				sc.fr.WriteSettings()
				serve(sc, n)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *rawH2) url(path string) string { return "http://" + s.ln.Addr().String() + path }

// next returns the next frame that is not SETTINGS, WINDOW_UPDATE or PING
// (settings are acknowledged); nil once the connection ends.
func (sc *rawH2Conn) next() http2.Frame {
	for {
		f, err := sc.fr.ReadFrame()
		if err != nil {
			return nil
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				sc.fr.WriteSettingsAck()
			}
		case *http2.WindowUpdateFrame, *http2.PingFrame:
		default:
			return f
		}
	}
}

// request returns the next request's header block (nil at the end).
func (sc *rawH2Conn) request() *http2.MetaHeadersFrame {
	for {
		switch f := sc.next().(type) {
		case nil:
			return nil
		case *http2.MetaHeadersFrame:
			return f
		}
	}
}

// headers sends a header block of name, value pairs.
func (sc *rawH2Conn) headers(id uint32, end bool, kv ...string) {
	sc.hbuf.Reset()
	for i := 0; i < len(kv); i += 2 {
		sc.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	sc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: sc.hbuf.Bytes(), EndStream: end, EndHeaders: true})
}

func weftH2cClient() *whttp.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &whttp.Client{Protocols: p}
}

// The server sends GOAWAY with the first of two streams as the last it
// will process: the first is answered, the second (a GET, and a POST
// whose body can be had again) is sent again on a new connection; a POST
// whose body cannot be had again fails.
func TestClientH2GoAwayRetriesUnprocessedRequests(t *testing.T) {
	srv := startRawH2(t, func(sc *rawH2Conn, n int) {
		if n == 1 {
			var ids []uint32
			for len(ids) < 3 {
				f := sc.request()
				if f == nil {
					return
				}
				ids = append(ids, f.StreamID)
			}
			sc.fr.WriteGoAway(ids[0], http2.ErrCodeNo, nil)
			sc.headers(ids[0], false, ":status", "200")
			sc.fr.WriteData(ids[0], true, []byte(fmt.Sprintf("conn%d", n)))
			for sc.next() != nil { // until the client closes
			}
			return
		}
		for {
			f := sc.request()
			if f == nil {
				return
			}
			if !f.StreamEnded() {
				for {
					d, ok := sc.next().(*http2.DataFrame)
					if !ok || d.StreamEnded() {
						break
					}
				}
			}
			sc.headers(f.StreamID, false, ":status", "200")
			sc.fr.WriteData(f.StreamID, true, []byte(fmt.Sprintf("conn%d", n)))
		}
	})
	client := weftH2cClient()
	run(t, func(wt *weft.Task) error {
		mk := func(method string, body io.Reader, rewind bool) *weft.Promise[string] {
			return weft.Go(wt, func(wt *weft.Task) (string, error) {
				req, _ := http.NewRequest(method, srv.url("/"), body)
				if !rewind {
					req.GetBody = nil
				}
				resp, err := client.Do(wt, req)
				if err != nil {
					return "", err
				}
				return bodyOf(t, resp), nil
			})
		}
		a := mk("GET", nil, true)
		b := mk("POST", strings.NewReader("again"), true)
		c := mk("POST", io.MultiReader(strings.NewReader("once")), false)
		ra, erra := a.Await(wt)
		rb, errb := b.Await(wt)
		_, errc := c.Await(wt)
		// The three went out on connection 1 in some order; the one the
		// server processed answers "conn1", the others were retried or
		// failed.
		results := map[string]int{}
		for _, r := range []struct {
			s   string
			err error
		}{{ra, erra}, {rb, errb}} {
			if r.err != nil {
				t.Errorf("a retryable request failed: %v", r.err)
			}
			results[r.s]++
		}
		if errc == nil {
			results["conn1"]++ // c was the processed one
		} else if !strings.Contains(errc.Error(), "not processed") {
			t.Errorf("the POST that cannot be sent again: %v", errc)
		}
		if results["conn1"] != 1 {
			t.Errorf("answers %v: want exactly one from the first connection", results)
		}
		return nil
	})
	if n := srv.accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// The server resets one stream (at its header, and mid-body): that
// request fails with the stream's error; the others on the connection
// are not disturbed.
func TestClientH2ServerResetsStream(t *testing.T) {
	srv := startRawH2(t, func(sc *rawH2Conn, n int) {
		for {
			f := sc.request()
			if f == nil {
				return
			}
			switch f.PseudoValue("path") {
			case "/reset":
				sc.fr.WriteRSTStream(f.StreamID, http2.ErrCodeInternal)
			case "/reset-mid-body":
				sc.headers(f.StreamID, false, ":status", "200")
				sc.fr.WriteData(f.StreamID, false, []byte("part"))
				sc.fr.WriteRSTStream(f.StreamID, http2.ErrCodeInternal)
			default:
				sc.headers(f.StreamID, false, ":status", "200", "content-length", "2")
				sc.fr.WriteData(f.StreamID, true, []byte("ok"))
			}
		}
	})
	client := weftH2cClient()
	run(t, func(wt *weft.Task) error {
		_, err := client.Get(wt, srv.url("/reset"))
		var se http2.StreamError
		if !errors.As(err, &se) || se.Code != http2.ErrCodeInternal {
			t.Errorf("a reset at the header: %v, want INTERNAL_ERROR", err)
		}
		resp, err := client.Get(wt, srv.url("/reset-mid-body"))
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "part" || !errors.As(err, &se) || se.Code != http2.ErrCodeInternal {
			t.Errorf("a reset mid-body: %q, %v", b, err)
		}
		if err := getOK(t, wt, client, srv.url("/ok"), "after the resets"); err != nil {
			return err
		}
		return nil
	})
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// The server dies mid-body: the body's read fails, as does a request
// waiting for its header on the same connection, and the next request
// dials a new connection.
func TestClientH2ServerDiesMidBody(t *testing.T) {
	srv := startRawH2(t, func(sc *rawH2Conn, n int) {
		if n == 1 {
			var ids []uint32
			for len(ids) < 2 {
				f := sc.request()
				if f == nil {
					return
				}
				ids = append(ids, f.StreamID)
			}
			sc.headers(ids[0], false, ":status", "200", "content-length", "100")
			sc.fr.WriteData(ids[0], false, []byte("some"))
			time.Sleep(50 * time.Millisecond)
			sc.c.Close()
			return
		}
		for {
			f := sc.request()
			if f == nil {
				return
			}
			sc.headers(f.StreamID, false, ":status", "200")
			sc.fr.WriteData(f.StreamID, true, []byte("fresh"))
		}
	})
	client := weftH2cClient()
	before := openSockets()
	run(t, func(wt *weft.Task) error {
		first := weft.Go(wt, func(wt *weft.Task) (string, error) {
			resp, err := client.Get(wt, srv.url("/body"))
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return string(b), err
		})
		if err := wt.Sleep(10 * time.Millisecond); err != nil {
			return err
		}
		second := weft.Go(wt, func(wt *weft.Task) (*http.Response, error) { return client.Get(wt, srv.url("/header")) })
		b, err := first.Await(wt)
		if err == nil || b != "some" || !strings.Contains(err.Error(), "connection lost") {
			t.Errorf("the body cut short: %q, %v", b, err)
		}
		if resp, err := second.Await(wt); err == nil {
			t.Errorf("the request waiting on the dead connection got %d", resp.StatusCode)
			resp.Body.Close()
		}
		resp, err := client.Get(wt, srv.url("/after"))
		if err != nil {
			return err
		}
		if got := bodyOf(t, resp); got != "fresh" {
			t.Errorf("after the death: %q", got)
		}
		return nil
	})
	if n := srv.accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	waitSockets(t, before)
}

// A response body shorter or longer than its Content-Length is an
// error, not a silent truncation.
func TestClientH2ContentLengthMismatch(t *testing.T) {
	srv := startRawH2(t, func(sc *rawH2Conn, n int) {
		for {
			f := sc.request()
			if f == nil {
				return
			}
			sc.headers(f.StreamID, false, ":status", "200", "content-length", "5")
			if f.PseudoValue("path") == "/short" {
				sc.fr.WriteData(f.StreamID, true, []byte("abc"))
			} else {
				sc.fr.WriteData(f.StreamID, true, []byte("abcdefgh"))
			}
		}
	})
	client := weftH2cClient()
	run(t, func(wt *weft.Task) error {
		for _, path := range []string{"/short", "/long"} {
			resp, err := client.Get(wt, srv.url(path))
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				t.Errorf("%s: read to the end without error", path)
			}
		}
		return nil
	})
}

// Over TLS with Protocols nil the client offers h2 and http/1.1; a
// server that speaks only HTTP/1.1 gets HTTP/1.1 on the same connection.
func TestClientH2FallsBackToHTTP1ByALPN(t *testing.T) {
	certs := newCerts(t)
	var conns atomic.Int32
	ns := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}))
	ns.TLS = certs.ServerConfig()
	ns.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ns.StartTLS()
	defer ns.Close()
	client := &whttp.Client{TLSConfig: certs.ClientConfig()}
	run(t, func(wt *weft.Task) error {
		for range 2 {
			resp, err := client.Get(wt, ns.URL)
			if err != nil {
				return err
			}
			if got := bodyOf(t, resp); got != "HTTP/1.1" {
				t.Errorf("proto %q", got)
			}
		}
		return nil
	})
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1 (the TLS connection made for h2 serves HTTP/1.1)", n)
	}
}

// Client.Timeout bounds the reading of an HTTP/2 body too: a stalled
// body fails with an error whose Timeout method reports true, and its
// stream is reset.
func TestClientH2TimeoutWhileReadingBody(t *testing.T) {
	reset := make(chan http2.ErrCode, 1)
	srv := startRawH2(t, func(sc *rawH2Conn, n int) {
		for {
			switch f := sc.next().(type) {
			case nil:
				return
			case *http2.RSTStreamFrame:
				reset <- f.ErrCode
			case *http2.MetaHeadersFrame:
				sc.headers(f.StreamID, false, ":status", "200")
				if f.PseudoValue("path") == "/ok" {
					sc.fr.WriteData(f.StreamID, true, []byte("ok"))
				} else {
					sc.fr.WriteData(f.StreamID, false, []byte("stall"))
				}
			}
		}
	})
	client := weftH2cClient()
	client.Timeout = 200 * time.Millisecond
	run(t, func(wt *weft.Task) error {
		resp, err := client.Get(wt, srv.url("/stall"))
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var ne net.Error
		if string(b) != "stall" || !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("a stalled body: %q, %v: want a timeout", b, err)
		}
		if code, ok := recvWithin(wt, reset, 10*time.Second); !ok || code != http2.ErrCodeCancel {
			t.Errorf("the stream was not reset with CANCEL (%v, %v)", code, ok)
		}
		// The timeout cut the reader's read short: the connection goes on.
		if err := getOK(t, wt, client, srv.url("/ok"), "after the timeout"); err != nil {
			return err
		}
		return nil
	})
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1: a timeout must not end the connection", n)
	}
}

// As with net/http's Transport, http:// URLs speak h2c only when
// Protocols has UnencryptedHTTP2 without HTTP1; with both, HTTP/1.1.
func TestClientH2cOnlyWithoutHTTP1(t *testing.T) {
	both := new(http.Protocols)
	both.SetHTTP1(true)
	both.SetUnencryptedHTTP2(true)
	ws := startServer(t, &whttp.Server{Protocols: both, Handler: whttp.HandlerFunc(func(wt *weft.Task, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	})})
	run(t, func(wt *weft.Task) error {
		for _, c := range []struct {
			client *whttp.Client
			want   string
		}{
			{&whttp.Client{Protocols: both}, "HTTP/1.1"},
			{&whttp.Client{}, "HTTP/1.1"},
			{weftH2cClient(), "HTTP/2.0"},
		} {
			resp, err := c.client.Get(wt, ws.url("/"))
			if err != nil {
				return err
			}
			if got := bodyOf(t, resp); got != c.want {
				t.Errorf("%v: %q, want %q", c.client.Protocols, got, c.want)
			}
		}
		return nil
	})
}

// A stream the server refuses (REFUSED_STREAM: it never processed it) is
// sent again (on the same connection, which is still good, as net/http
// does); a request refused on every try fails after a bounded number of
// them.
func TestClientH2RetriesRefusedStream(t *testing.T) {
	var tries atomic.Int32
	srv := startRawH2(t, func(sc *rawH2Conn, n int) {
		for {
			f := sc.request()
			if f == nil {
				return
			}
			if f.StreamID == 1 || f.PseudoValue("path") == "/always" {
				if f.PseudoValue("path") == "/always" {
					tries.Add(1)
				}
				sc.fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
				continue
			}
			sc.headers(f.StreamID, false, ":status", "200")
			sc.fr.WriteData(f.StreamID, true, []byte(fmt.Sprintf("conn%d", n)))
		}
	})
	client := weftH2cClient()
	run(t, func(wt *weft.Task) error {
		resp, err := client.Get(wt, srv.url("/once"))
		if err != nil {
			return err
		}
		if got := bodyOf(t, resp); got != "conn1" {
			t.Errorf("the refused request answered %q, want conn1", got)
		}
		_, err = client.Get(wt, srv.url("/always"))
		var se http2.StreamError
		if !errors.As(err, &se) || se.Code != http2.ErrCodeRefusedStream {
			t.Errorf("a request refused every time: %v", err)
		}
		return nil
	})
	if n := tries.Load(); n < 2 || n > 8 {
		t.Errorf("a request refused every time was tried %d times: want a few, bounded", n)
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// Close from another task ends a Read that waits for body bytes, and
// resets the stream; the connection goes on.
func TestClientH2CloseEndsAWaitingRead(t *testing.T) {
	reset := make(chan http2.ErrCode, 1)
	srv := startRawH2(t, func(sc *rawH2Conn, n int) {
		for {
			switch f := sc.next().(type) {
			case nil:
				return
			case *http2.RSTStreamFrame:
				reset <- f.ErrCode
			case *http2.MetaHeadersFrame:
				sc.headers(f.StreamID, false, ":status", "200")
				if f.PseudoValue("path") == "/ok" {
					sc.fr.WriteData(f.StreamID, true, []byte("ok"))
				}
			}
		}
	})
	client := weftH2cClient()
	run(t, func(wt *weft.Task) error {
		resp, err := client.Get(wt, srv.url("/hang"))
		if err != nil {
			return err
		}
		reader := weft.Go(wt, func(wt *weft.Task) ([]byte, error) { return io.ReadAll(resp.Body) })
		if err := wt.Sleep(20 * time.Millisecond); err != nil {
			return err
		}
		resp.Body.Close()
		if _, err := reader.Await(wt); err == nil || !strings.Contains(err.Error(), "closed response body") {
			t.Errorf("the waiting Read: %v, want the closed body's error", err)
		}
		if code, ok := recvWithin(wt, reset, 10*time.Second); !ok || code != http2.ErrCodeCancel {
			t.Errorf("the stream was not reset with CANCEL (%v, %v)", code, ok)
		}
		if err := getOK(t, wt, client, srv.url("/ok"), "after the Close"); err != nil {
			return err
		}
		return nil
	})
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// getOK GETs url, which answers "ok", with client and fails the test if
// the answer is anything else, naming when; it returns Get's error.
func getOK(t *testing.T, wt *weft.Task, client *whttp.Client, url, when string) error {
	t.Helper()
	resp, err := client.Get(wt, url)
	if err != nil {
		return err
	}
	if got := bodyOf(t, resp); got != "ok" {
		t.Errorf("%s: %q, want \"ok\"", when, got)
	}
	return nil
}
