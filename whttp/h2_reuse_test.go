package whttp_test

// What an HTTP/2 handler may keep after it returns, and the check that it
// keeps nothing else (reuse.go, h2_stream.go): the stream's request, URL,
// header and response header are reused by later streams.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
	"golang.org/x/net/http2"
)

func TestH2WhatAHandlerMayKeepStaysValid(t *testing.T) {
	type kept struct {
		ctx  context.Context
		w    http.ResponseWriter
		body io.ReadCloser
	}
	var first kept
	_, ts := h2cServer(t, whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" {
			first = kept{ctx: r.Context(), w: w, body: r.Body}
			if whttp.TaskOf(r) != t || r.Context().Err() != nil {
				panic("TaskOf or Err wrong during the request")
			}
			io.WriteString(w, "first")
			return
		}
		// The second request: the first's objects are done.
		var problems []string
		if err := first.ctx.Err(); !errors.Is(err, context.Canceled) {
			problems = append(problems, "kept context Err: "+errString(err))
		}
		select {
		case <-first.ctx.Done():
		default:
			problems = append(problems, "kept context not done")
		}
		if cause := context.Cause(first.ctx); !errors.Is(cause, context.Canceled) {
			problems = append(problems, "kept context's cause: "+errString(cause))
		}
		if _, err := first.w.Write([]byte("late")); err == nil {
			problems = append(problems, "a kept ResponseWriter wrote")
		}
		first.w.Header().Set("X-Leak", "1")
		if _, err := first.body.Read(make([]byte, 1)); !errors.Is(err, http.ErrBodyReadAfterClose) {
			problems = append(problems, "kept body read: "+errString(err))
		}
		io.WriteString(w, "second "+strings.Join(problems, "; "))
	}))
	c := h2cClient(t)
	resp, err := c.Post(ts.url("/first"), "text/plain", strings.NewReader("abc"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "first" || resp.ProtoMajor != 2 {
		t.Fatalf("first: %q %s", b, resp.Proto)
	}
	resp.Body.Close()
	resp, err = c.Get(ts.url("/second"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "second " {
		t.Fatalf("second: %q", b)
	}
	if resp.Header.Get("X-Leak") != "" {
		t.Fatal("a kept ResponseWriter's header reached the next response")
	}
}

// Streams one after the other on a connection get their own request,
// header and response header each time, with nothing of the earlier
// stream's left in them.
func TestH2ReusedStateStartsEmpty(t *testing.T) {
	_, ts := h2cServer(t, whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if len(w.Header()) != 0 {
			w.WriteHeader(500)
			io.WriteString(w, "response header not empty")
			return
		}
		w.Header().Set("X-Path", r.URL.Path)
		io.WriteString(w, r.URL.Path+" "+r.URL.RawQuery+" "+r.Header.Get("X-Only-Once")+" "+r.Header.Get("X-N"))
	}))
	c := h2cClient(t)
	for i, q := range []string{"a=1", "", "b=2"} {
		req, _ := http.NewRequest("GET", ts.url("/p"+q), nil)
		if i == 0 {
			req.Header.Set("X-Only-Once", "yes")
		}
		req.Header.Set("X-N", q)
		if q != "" {
			req.URL.RawQuery = q
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		once := ""
		if i == 0 {
			once = "yes"
		}
		if want := "/p" + q + " " + q + " " + once + " " + q; string(b) != want || resp.Header.Get("X-Path") != "/p"+q {
			t.Fatalf("request %d: %d %q (X-Path %q), want %q", i, resp.StatusCode, b, resp.Header.Get("X-Path"), want)
		}
	}
}

// With the race detector on, an HTTP/2 handler that hands its request to
// a goroutine that reads it after the handler returned is a data race the
// race detector reports, as on HTTP/1.1.
func TestH2KeptRequestUsedByAGoroutineIsARace(t *testing.T) {
	if os.Getenv("WHTTP_RACE_CHILD") == "1" {
		used := make(chan string, 1)
		_, ts := h2cServer(t, whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			go func() {
				time.Sleep(50 * time.Millisecond) // the handler has returned
				used <- r.URL.Path
			}()
			io.WriteString(w, "ok")
		}))
		resp, err := h2cClient(t).Get(ts.url("/kept"))
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		<-used
		return
	}
	if !raceEnabled {
		t.Skip("the race detector is off")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestH2KeptRequestUsedByAGoroutineIsARace$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WHTTP_RACE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "WARNING: DATA RACE") || !strings.Contains(string(out), "whttp.retire") {
		t.Fatalf("the child did not fail with a race on the retired request (err %v):\n%s", err, out)
	}
}

// An idle HTTP/2 connection holds no large read buffer, even after a
// request body came in frames larger than its small one.
func TestH2IdleConnectionHoldsNoReadBuffer(t *testing.T) {
	srv, ts := h2cServer(t, whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	}))
	c := h2cClient(t)
	post := func(path string) {
		resp, err := c.Post(ts.url(path), "application/octet-stream", strings.NewReader(strings.Repeat("x", 200<<10)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "204800" || resp.ProtoMajor != 2 {
			t.Fatalf("%s: %q %s", path, b, resp.Proto)
		}
	}
	post("/first")
	post("/second")
	deadline := time.Now().Add(10 * time.Second)
	for {
		bufs := whttp.H2ReadBuffers(srv)
		if len(bufs) == 1 && !bufs[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle connection: large read buffers %v, want [false]", bufs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A PING that comes just before a request (as grpc-go's client sends its
// BDP ping, then its next call) is acknowledged in the same write as the
// response: the writer is woken once the reader has acted on all it read.
func TestH2PingAckLeavesWithTheResponse(t *testing.T) {
	srv := &whttp.Server{Protocols: new(http.Protocols), Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "pong")
	})}
	srv.Protocols.SetUnencryptedHTTP2(true)
	ts := startServer(t, srv, weft.WithLoops(1))
	r := dialH2(t, ts.addr)
	// The connection's start: SETTINGS both ways.
	r.mu.Lock()
	r.fr.WriteSettingsAck()
	r.flush()
	r.mu.Unlock()
	r.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for acked := false; !acked; {
		f, err := r.fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := f.(*http2.SettingsFrame); ok && f.IsAck() {
			acked = true
		}
	}
	const rounds = 20
	w0 := whttp.H2Writes(srv)
	for i := range rounds {
		id := uint32(2*i + 1)
		r.mu.Lock()
		r.fr.WritePing(false, [8]byte{byte(i)})
		r.headers(id, "/", true)
		r.flush() // one write: the server reads both at once
		r.mu.Unlock()
		for pinged, ended := false, false; !pinged || !ended; {
			f, err := r.fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			switch f := f.(type) {
			case *http2.PingFrame:
				pinged = f.IsAck() && f.Data[0] == byte(i)
			case *http2.DataFrame:
				ended = f.StreamID == id && f.StreamEnded()
			}
		}
	}
	// Without the coalescing, two writes a round. TCP may split what the
	// client wrote, and the portable backend read it in two: a few rounds
	// may take two.
	if n := whttp.H2Writes(srv) - w0; n > rounds+rounds/4 {
		t.Fatalf("%d writes for %d rounds of PING and request; want about one each", n, rounds)
	}
}
