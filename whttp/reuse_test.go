package whttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

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

// With the race detector on, a handler that hands its *http.Request to a
// goroutine that reads it after the handler returned is a data race the
// race detector reports (the server writes over the request at once): run
// in a child process, which must fail with a race naming the read and
// the server's write.
func TestKeptRequestUsedByAGoroutineIsARace(t *testing.T) {
	if os.Getenv("WHTTP_RACE_CHILD") == "1" {
		used := make(chan string, 1)
		ts := startServer(t, &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			go func() {
				time.Sleep(50 * time.Millisecond) // the handler has returned
				used <- r.URL.Path
			}()
			io.WriteString(w, "ok")
		})})
		resp, err := newClient(t).Get(ts.url("/kept"))
		if err != nil {
			t.Fatal(err)
		}
		bodyOf(t, resp)
		<-used
		return
	}
	if !raceEnabled {
		t.Skip("the race detector is off")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeptRequestUsedByAGoroutineIsARace$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WHTTP_RACE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "WARNING: DATA RACE") || !strings.Contains(string(out), "whttp.retire") {
		t.Fatalf("the child did not fail with a race on the retired request (err %v):\n%s", err, out)
	}
}

// Middleware shaped as chi's Logger and Timeout (a log entry holding the
// request in the context, then context.WithTimeout on top) keeps the
// request reachable after the handler returns, through the stopped timer
// the runtime still holds: that is no error, and nothing is reported,
// with the race detector on or off. So is a request kept in a variable
// and never used.
func TestRequestStillReferencedButUnusedIsNoError(t *testing.T) {
	type entryKey struct{}
	type logEntry struct{ r *http.Request }
	var mu sync.Mutex
	var kept []*http.Request
	logger := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			e := &logEntry{r: r}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), entryKey{}, e)))
			_ = e.r.Method + " " + e.r.URL.Path // the log line, before the handler returns
		})
	}
	timeout := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
			defer func() {
				cancel()
				if ctx.Err() == context.DeadlineExceeded {
					w.WriteHeader(http.StatusGatewayTimeout)
				}
			}()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		kept = append(kept, r) // kept, never used again
		mu.Unlock()
		io.WriteString(w, "ok")
	})
	logs := &logBuffer{}
	ts := startServer(t, &whttp.Server{Handler: whttp.Adapt(logger(timeout(h))), Logger: logs.logger()})
	client := newClient(t)
	for range 40 {
		resp, err := client.Get(ts.url("/x"))
		if err != nil {
			t.Fatal(err)
		}
		if got := bodyOf(t, resp); got != "ok" {
			t.Fatalf("body %q", got)
		}
	}
	if err := ts.stop(t); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("an error was logged:\n%s", logs.String())
	}
	if len(kept) != 40 {
		t.Fatal(len(kept))
	}
}
