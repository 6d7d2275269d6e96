package whttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// The request context costs nothing until it is waited on, and then
// behaves as a context.WithCancel's: a child context and an AfterFunc are
// cancelled when the handler returns, and context.Cause gives the drain
// timeout's cause to a handler cut off by it.
func TestRequestContextCancelsItsChildrenAtTheEnd(t *testing.T) {
	childDone := make(chan error, 1)
	after := make(chan struct{})
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		child, cancel := context.WithCancel(r.Context())
		context.AfterFunc(r.Context(), func() { close(after) })
		go func() {
			<-child.Done()
			childDone <- child.Err()
			cancel()
		}()
		io.WriteString(w, "ok")
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	rc.response("GET")
	select {
	case err := <-childDone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("child: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the child context was not cancelled at the end of the request")
	}
	select {
	case <-after:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc did not run")
	}
}

func TestDrainTimeoutIsTheRequestContextsCause(t *testing.T) {
	started := make(chan struct{})
	cause := make(chan error, 1)
	ts := startServer(t, &whttp.Server{DrainTimeout: 100 * time.Millisecond, Logger: (&logBuffer{}).logger(),
		Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			done := r.Context().Done() // asked before the cut
			close(started)
			for {
				select {
				case <-done:
					cause <- context.Cause(r.Context())
					return
				default:
				}
				if t.Sleep(5*time.Millisecond) != nil {
					<-done
					cause <- context.Cause(r.Context())
					return
				}
			}
		})})
	rc := dialRaw(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	ts.stop(t)
	if err := <-cause; err == nil || !strings.Contains(err.Error(), "drain timeout") {
		t.Fatalf("cause %v, want the drain timeout", err)
	}
}

// A keep-alive request allocates nothing of the server's own: its handle
// (the ResponseWriter and r.Context()) comes from a chunk made for many
// requests, its state from a pool. The handler here writes a body and
// sets no header, and the client is a raw connection that allocates
// nothing per request, so the process's allocations are the server's.
// (Under the race detector, sync.Pool drops some of what it is given.)
func TestAKeepAliveRequestAllocatesNothingOfItsOwn(t *testing.T) {
	if raceEnabled || whttp.CheckRetention {
		t.Skip("sync.Pool drops states under the race detector; the retention check allocates on purpose")
	}
	if backend, _ := weft.Run(func(wt *weft.Task) (weft.Backend, error) { return weft.RunStats(wt).Backend, nil }); backend == weft.BackendPortable {
		t.Skip("the portable backend's reads and writes go through helper goroutines, which allocate")
	}
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		w.Write(hello) // a []byte conversion here would be the handler's allocation
	})})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /plaintext HTTP/1.1\r\nHost: " + ts.addr + "\r\n\r\n")
	c.Write(req)
	first := make([]byte, 4096)
	n, err := c.Read(first)
	if err != nil || !strings.HasSuffix(string(first[:n]), "hello") {
		t.Fatalf("first response %q, %v", first[:n], err)
	}
	buf := make([]byte, n) // every response is as long (its Date too)
	const rounds = 3200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range rounds {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := float64(after.Mallocs-before.Mallocs) / rounds; per > 0.25 {
		t.Fatalf("%.2f allocations per keep-alive request, want about 1/16 (a chunk of handles)", per)
	} else {
		t.Logf("%.3f allocations per request", per)
	}
}
