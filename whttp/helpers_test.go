package whttp_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind: no connection task, no
// helper of the portable backend, no net/http client connection.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

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
	if before < 0 {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := openFDs()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open, %d before", n, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
