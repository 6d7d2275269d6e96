package whttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// Without the check, a connection's requests (here pipelined) reuse one
// *http.Request, URL and header map, while each gets a ResponseWriter and
// context of its own.
func TestRequestStateIsReusedBetweenRequests(t *testing.T) {
	if whttp.CheckRetention {
		t.Skip("this build checks retention (race detector or weft_debug): nothing is reused")
	}
	type seen struct {
		req, url, hdr, w uintptr
		ctx              context.Context
	}
	var got []seen
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		got = append(got, seen{
			req: reflect.ValueOf(r).Pointer(), url: reflect.ValueOf(r.URL).Pointer(),
			hdr: reflect.ValueOf(r.Header).Pointer(), w: reflect.ValueOf(w).Pointer(), ctx: r.Context(),
		})
		io.WriteString(w, r.URL.Path+" "+r.Header.Get("X-N"))
	})})
	// Pipelined, so that the connection holds its state from one request
	// to the next (waiting for a request with nothing buffered, it gives
	// the state back to a pool, which may hand it another).
	rc := dialRaw(t, ts.addr)
	var pipelined strings.Builder
	for _, n := range []string{"1", "2", "3"} {
		pipelined.WriteString("GET /p" + n + " HTTP/1.1\r\nHost: x\r\nX-N: " + n + "\r\n\r\n")
	}
	rc.send(pipelined.String())
	for _, n := range []string{"1", "2", "3"} {
		if body := bodyOf(t, rc.response("GET")); body != "/p"+n+" "+n {
			t.Fatalf("body %q", body)
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d requests", len(got))
	}
	for i := 1; i < 3; i++ {
		if got[i].req != got[0].req || got[i].url != got[0].url || got[i].hdr != got[0].hdr {
			t.Errorf("request %d: request, URL or header map not reused", i+1)
		}
		if got[i].w == got[i-1].w || got[i].ctx == got[i-1].ctx {
			t.Errorf("request %d: ResponseWriter or context reused", i+1)
		}
	}
}

// What a handler may keep past its return stays right: its context is
// done (Err context.Canceled, Done closed), its ResponseWriter refuses to
// write and its header is not the next response's, its body reads
// http.ErrBodyReadAfterClose, and the context's values stay.
func TestWhatAHandlerMayKeepStaysValid(t *testing.T) {
	type kept struct {
		ctx  context.Context
		w    http.ResponseWriter
		body io.ReadCloser
		task *weft.Task
	}
	var first kept
	ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/first" {
			first = kept{ctx: r.Context(), w: w, body: r.Body, task: whttp.TaskOf(r)}
			if first.task != t || r.Context().Err() != nil {
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
		if whttp.TaskOf((&http.Request{}).WithContext(first.ctx)) != t {
			problems = append(problems, "kept context lost the connection's task")
		}
		if _, err := first.w.Write([]byte("late")); err == nil {
			problems = append(problems, "a kept ResponseWriter wrote")
		}
		first.w.Header().Set("X-Leak", "1")
		if _, err := first.body.Read(make([]byte, 1)); !errors.Is(err, http.ErrBodyReadAfterClose) {
			problems = append(problems, "kept body read: "+errString(err))
		}
		io.WriteString(w, "second "+strings.Join(problems, "; "))
	})})
	rc := dialRaw(t, ts.addr)
	rc.send("POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
	if body := bodyOf(t, rc.response("POST")); body != "first" {
		t.Fatalf("first: %q", body)
	}
	rc.send("GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := rc.response("GET")
	if body := bodyOf(t, resp); body != "second " {
		t.Fatalf("second: %q", body)
	}
	if resp.Header.Get("X-Leak") != "" {
		t.Fatal("a kept ResponseWriter's header reached the next response")
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// With the check on (the race detector, or the weft_debug build tag), a
// handler that keeps its *http.Request past its return is reported: an
// Error in the log at once, and a panic from Serve when it returns. One
// that keeps only what it may (context, ResponseWriter, body, a clone) is
// not.
func TestHandlerThatKeepsItsRequestIsReported(t *testing.T) {
	if !whttp.CheckRetention {
		t.Skip("the check runs with the race detector or the weft_debug build tag")
	}
	var keptReq *http.Request
	var keptOK []any
	for _, keep := range []bool{false, true} {
		logs := &logBuffer{}
		srv := &whttp.Server{Logger: logs.logger(), Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			if keep && r.URL.Path == "/keep" {
				keptReq = r
			}
			keptOK = append(keptOK, r.Context(), w, r.Body, r.Clone(context.Background()))
			io.WriteString(w, r.Method+" "+r.URL.Path+" ") // as getOnce wants
		})}
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				return struct{}{}, err
			}
			serving := weft.Go(wt, func(t *weft.Task) (struct{}, error) { return struct{}{}, srv.Serve(t, ln) })
			_, gerr := weft.Offload(wt, func() (struct{}, error) {
				for _, p := range []string{"/a", "/keep", "/b"} {
					if err := getOnce(ln.Addr().String(), p); err != nil {
						return struct{}{}, err
					}
				}
				return struct{}{}, nil
			})
			if gerr != nil {
				t.Error(gerr)
			}
			serving.Cancel()
			_, err = serving.Await(wt)
			return struct{}{}, err
		})
		reported := err != nil && strings.Contains(err.Error(), "whttp: a handler kept the *http.Request") && strings.Contains(err.Error(), "GET /keep")
		if reported != keep || strings.Contains(logs.String(), "of GET /keep after it returned") != keep {
			t.Fatalf("keep %v: Serve's result %v\nlog:\n%s", keep, err, logs.String())
		}
	}
	_ = keptReq
}
