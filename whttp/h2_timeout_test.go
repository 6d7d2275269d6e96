package whttp_test

// Server.ReadTimeout, WriteTimeout, IdleTimeout and ReadHeaderTimeout on
// HTTP/2, with net/http's meaning: the first two per stream (the request
// body's reads, the response), the others per connection (GOAWAY). The
// timeouts are short and the bounds generous: what is checked is what
// happens, not how soon.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
	"golang.org/x/net/http2"
)

// h2cServerWith serves h with h2c beside HTTP/1, srv's settings kept.
func h2cServerWith(t *testing.T, srv *whttp.Server, h whttp.Handler) *testServer {
	t.Helper()
	srv.Handler = h
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return startServer(t, srv)
}

// A request body that stops coming: past ReadTimeout the handler's read
// fails with os.ErrDeadlineExceeded after what did come; the stream can
// still answer, and the connection serves other streams.
func TestH2ReadTimeoutEndsTheBodyOfOneStream(t *testing.T) {
	ts := h2cServerWith(t, &whttp.Server{ReadTimeout: 200 * time.Millisecond},
		whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			b, err := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%q %v", b, errors.Is(err, os.ErrDeadlineExceeded))
		}))
	r := dialH2(t, ts.addr)
	r.mu.Lock()
	r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: r.block("POST", "/slow"), EndHeaders: true})
	r.fr.WriteData(1, false, []byte("abc"))
	r.flush()
	r.mu.Unlock()
	body := map[uint32]string{}
	ended := map[uint32]bool{}
	r.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for !ended[1] {
		f, err := r.fr.ReadFrame()
		if err != nil {
			t.Fatalf("no answer to the stalled stream: %v", err)
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			body[f.StreamID] += string(f.Data())
			ended[f.StreamID] = f.StreamEnded()
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			t.Fatalf("got %v", f)
		case *http2.SettingsFrame:
			if !f.IsAck() {
				r.mu.Lock()
				r.fr.WriteSettingsAck()
				r.flush()
				r.mu.Unlock()
			}
		}
	}
	if want := `"abc" true`; body[1] != want {
		t.Fatalf("stalled body: the handler saw %s, want %s", body[1], want)
	}
	// The connection still serves a request (its body is empty).
	r.mu.Lock()
	r.headers(3, "/next", true)
	r.flush()
	r.mu.Unlock()
	for !ended[3] {
		f, err := r.fr.ReadFrame()
		if err != nil {
			t.Fatalf("the next stream got no answer: %v", err)
		}
		if f, ok := f.(*http2.DataFrame); ok {
			body[f.StreamID] += string(f.Data())
			ended[f.StreamID] = f.StreamEnded()
		}
	}
	if want := `"" false`; body[3] != want {
		t.Fatalf("next stream: %s, want %s", body[3], want)
	}
}

// A handler that writes for longer than WriteTimeout: its stream is reset
// with INTERNAL_ERROR, its writes fail and its context ends, with
// os.ErrDeadlineExceeded; other streams are served.
func TestH2WriteTimeoutResetsTheStream(t *testing.T) {
	got := make(chan string, 1)
	ts := h2cServerWith(t, &whttp.Server{WriteTimeout: 300 * time.Millisecond},
		whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/long" {
				io.WriteString(w, "short")
				return
			}
			for i := 0; ; i++ {
				if _, err := io.WriteString(w, "tick\n"); err != nil {
					cause := causeOf(r)
					got <- fmt.Sprintf("write: %v, cause: %v", errors.Is(err, os.ErrDeadlineExceeded), errors.Is(cause, os.ErrDeadlineExceeded))
					return
				}
				w.(http.Flusher).Flush()
				if i > 400 {
					got <- "never timed out"
					return
				}
				if err := t.Sleep(25 * time.Millisecond); err != nil {
					got <- fmt.Sprintf("sleep: %v, cause: %v", errors.Is(err, os.ErrDeadlineExceeded), errors.Is(causeOf(r), os.ErrDeadlineExceeded))
					return
				}
			}
		}))
	c := h2cClient(t)
	resp, err := c.Get(ts.url("/long"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || !strings.Contains(err.Error(), "INTERNAL_ERROR") || !strings.HasPrefix(string(b), "tick\n") {
		t.Fatalf("long response: %d bytes, err %v; want some ticks, then a stream reset with INTERNAL_ERROR", len(b), err)
	}
	if s := <-got; s != "write: true, cause: true" && s != "sleep: true, cause: true" {
		t.Fatalf("the handler saw %s", s)
	}
	resp, err = c.Get(ts.url("/short"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "short" {
		t.Fatalf("after the reset: %q", b)
	}
}

// causeOf is context.Cause of r's context.
func causeOf(r *http.Request) error { return context.Cause(r.Context()) }

// A connection that opens no stream within ReadHeaderTimeout gets GOAWAY
// and is closed; one idle past IdleTimeout after its streams too.
func TestH2HeaderAndIdleTimeoutsEndTheConnection(t *testing.T) {
	ts := h2cServerWith(t, &whttp.Server{ReadHeaderTimeout: 200 * time.Millisecond, IdleTimeout: 400 * time.Millisecond},
		whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	for _, send := range []bool{false, true} {
		r := dialH2(t, ts.addr)
		if send {
			r.mu.Lock()
			r.headers(1, "/", true)
			r.flush()
			r.mu.Unlock()
		}
		start := time.Now()
		out := r.readAll(20*time.Second, false)
		if out.goAway == nil || *out.goAway != http2.ErrCodeNo || !out.closed {
			t.Fatalf("request sent %v: GOAWAY %v, closed %v; want GOAWAY NO_ERROR and the close", send, out.goAway, out.closed)
		}
		if send && out.statuses[1] != "200" {
			t.Fatalf("the request was answered %q", out.statuses[1])
		}
		// The idle deadline runs from the stream's end, past the header's.
		if el := time.Since(start); send && el < 300*time.Millisecond {
			t.Fatalf("closed %v after a request, before IdleTimeout", el)
		}
	}
}
