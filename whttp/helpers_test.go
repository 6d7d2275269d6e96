package whttp_test

// Helpers shared by the package's tests: a whttp server on a loop of its
// own (startServer), a net/http one beside it (startNetHTTP, netServer),
// raw and curl clients, and the checks for leaked descriptors.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/testcert"
	"github.com/weft-go/weft/whttp"
)

// testServer is a whttp.Server serving on a loop of its own, on a
// goroutine of the test.
type testServer struct {
	addr  string
	serve *weft.Promise[struct{}] // the task in Serve
	done  chan error              // Run's result, then closed
	ln    *weft.Listener
	errc  chan error // Serve's result
}

// startServer serves srv on 127.0.0.1 until stop.
func startServer(t testing.TB, srv *whttp.Server, opts ...weft.Option) *testServer {
	t.Helper()
	ts := &testServer{done: make(chan error, 1), errc: make(chan error, 1)}
	ready := make(chan error, 1)
	go func() {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				ready <- err
				return struct{}{}, err
			}
			ts.ln = ln
			ts.addr = ln.Addr().String()
			ts.serve = weft.Go(wt, func(wt *weft.Task) (struct{}, error) {
				err := srv.Serve(wt, ln)
				ts.errc <- err
				return struct{}{}, nil
			})
			ready <- nil
			return ts.serve.Await(wt)
		}, opts...)
		ts.done <- err
		close(ts.done)
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// stop cancels the task in Serve (a graceful stop) and returns Serve's
// error once Run has returned.
func (ts *testServer) stop(t testing.TB) error {
	t.Helper()
	ts.serve.Cancel()
	select {
	case err, ok := <-ts.done:
		if ok && err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop within 20s")
	}
	select {
	case err := <-ts.errc:
		return err
	default:
		return nil // already taken by an earlier stop
	}
}

func (ts *testServer) url(path string) string { return "http://" + ts.addr + path }

// newClient returns a net/http client with a transport of its own, closed
// at the end of the test.
func newClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// rawConn is a plain TCP client for sending bytes as they are.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

// dialRaw connects a rawConn to addr, closed at the end of the test.
func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// send writes s as it is.
func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatal(err)
	}
}

// response reads one response to a request of the given method.
func (rc *rawConn) response(method string) *http.Response {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		rc.t.Fatalf("reading a response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatalf("reading a response body: %v", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp
}

// expectClosed fails unless the server closes the connection (EOF, or a
// reset) within a bound, with nothing more sent.
func (rc *rawConn) expectClosed(within time.Duration) {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(within))
	b, err := io.ReadAll(rc.br)
	if len(b) > 0 {
		rc.t.Fatalf("got %q, want the connection closed", b)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		rc.t.Fatalf("the connection was still open after %v", within)
	}
}

// bodyOf reads resp's body to the end and closes it.
func bodyOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// logBuffer is a slog destination tests can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (lb *logBuffer) Write(p []byte) (int, error) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.buf.Write(p)
}

func (lb *logBuffer) String() string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.buf.String()
}

func (lb *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// openFDs counts the process's open descriptors (-1 without /proc).
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// waitFDs fails unless the count of open descriptors falls back to before
// within a few seconds.
func waitFDs(t *testing.T, before int) {
	t.Helper()
	waitCount(t, "descriptors", openFDs, before)
}

// openSockets counts the process's open sockets (-1 without /proc): the
// connections a test may leak, without the pollers a server on several
// loops opens as its connections first reach each loop (they live as
// long as its Run).
func openSockets() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// waitSockets fails unless the count of open sockets falls back to before
// within a few seconds.
func waitSockets(t *testing.T, before int) {
	t.Helper()
	waitCount(t, "sockets", openSockets, before)
}

// waitCount fails unless count() falls back to before within a few
// seconds (a before of -1: nothing to count here).
func waitCount(t *testing.T, what string, count func() int, before int) {
	t.Helper()
	if before < 0 {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := count()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s open, %d before", n, what, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// netServer is a net/http server counting the connections it accepted.
func netServer(t *testing.T, h http.Handler, config ...func(*http.Server)) (*httptest.Server, *atomic.Int32) {
	var conns atomic.Int32
	ts := httptest.NewUnstartedServer(h)
	for _, f := range config {
		f(ts.Config)
	}
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, &conns
}

// run runs f as the main task of a Run of its own, failing on its error.
func run(t *testing.T, f func(wt *weft.Task) error) {
	t.Helper()
	if _, err := weft.Run(func(wt *weft.Task) (struct{}, error) { return struct{}{}, f(wt) }); err != nil {
		t.Fatal(err)
	}
}

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

// getOnce makes one request on a connection of its own and checks the
// echo.
func getOnce(addr, path string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if want := "GET " + path + " "; string(b) != want {
		return fmt.Errorf("body %q, want %q", b, want)
	}
	return nil
}

// startNetHTTP serves h with net/http's server on 127.0.0.1 until the
// end of the test, and then waits for every connection's goroutine.
func startNetHTTP(t testing.TB, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	ns := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0), ConnState: func(c net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			conns.Done()
		}
	}}
	served := make(chan struct{})
	go func() {
		defer close(served)
		ns.Serve(ln)
	}()
	t.Cleanup(func() {
		ns.Close()
		<-served
		conns.Wait()
	})
	return ln.Addr().String()
}

// curl runs curl with args and returns its output; the test is skipped
// where there is no curl.
func curl(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl:", err)
	}
	out, err := exec.Command(path, append([]string{"-sS", "--max-time", "20"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// newCerts makes a certificate authority and a server certificate for
// 127.0.0.1.
func newCerts(t *testing.T) *testcert.Certs {
	t.Helper()
	certs, err := testcert.New()
	if err != nil {
		t.Fatal(err)
	}
	return certs
}
