package whttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
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
