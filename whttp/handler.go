package whttp

import (
	"net/http"

	"github.com/weft-go/weft"
)

// Handler responds to an HTTP request, in the task t of the request's
// connection: it may suspend t (Sleep, Await, I/O, Offload) without
// blocking other connections. It reads r.Body and writes w in t, and must
// not use them after it returns. As with net/http, the response is
// complete when ServeHTTP returns. A graceful stop of the server does not
// cancel t; the drain timeout does (see Server.Serve and below).
//
// The server reuses r, r.URL, r.Header and the values in it, and
// w.Header(), for a later request (on this connection or another) once
// ServeHTTP returns: a handler must not keep them past its return, nor
// hand them to a task or goroutine that outlives it. Such code takes a
// copy first: r.Clone(ctx) copies the request with its URL and header. What
// a handler may keep stays valid: r.Context() (done once ServeHTTP
// returns), w (it then refuses to write: Write returns an error, Header a
// throwaway map), r.Body (it then returns http.ErrBodyReadAfterClose),
// r.Trailer, and every string (strings are never reused). Tests run with
// -race check this rule (see the package doc's Cost).
//
// Use r.Context() for work that should end with the request: it is done
// when ServeHTTP returns, when the client goes away, or when the
// connection is cut off (see Server.Serve), with Err context.Canceled
// (context.Cause says why). A graceful stop of the server neither cancels
// t nor r.Context(); the drain timeout cancels both.
//
// The connection is watched while the handler runs, as net/http watches
// it: once the request has been read whole (it has no body, or the
// handler read the body to its end), a client that closes or resets the
// connection cancels r.Context() with a cause matching ErrClientGone, and
// cancels t (and the tasks the handler started): a handler suspended in
// Sleep, a channel, an Await, weft.Blocking, weft.Offload or a write, or
// running a CPU-bound loop with Checkpoints, sees it at once, as an
// error matching context.Canceled. (The task that watches starts only
// when the handler first suspends, or reaches a Checkpoint's slow path: a
// handler that answers at once costs no task.) Work that must finish all the same runs in
// t.Protect. The response the handler then writes is still sent (a client
// that only shut down its writing side reads it), and the connection
// closes after it. Bytes that arrive instead (a pipelined request) are
// kept for the next request.
type Handler interface {
	ServeHTTP(t *weft.Task, w http.ResponseWriter, r *http.Request)
}

// HandlerFunc lets an ordinary function be a Handler.
type HandlerFunc func(t *weft.Task, w http.ResponseWriter, r *http.Request)

// ServeHTTP calls f(t, w, r); it suspends t wherever f does.
func (f HandlerFunc) ServeHTTP(t *weft.Task, w http.ResponseWriter, r *http.Request) {
	f(t, w, r)
}

// Adapt returns a Handler that runs the standard handler h in the
// connection's task: http.ServeMux, http.FileServer, middleware written
// for net/http. Adapt does not suspend; h's reads of r.Body and writes to
// w suspend the connection's task, as a weft Handler's do, and fail once
// the drain timeout cuts the connection off. h runs on the loop, so it
// must not block (no channel receives, mutex waits or blocking calls: use
// Blocking for such a handler). A standard handler that needs to suspend gets the task with
// TaskOf(r), so http.ServeMux patterns can route to code that sleeps or
// awaits.
func Adapt(h http.Handler) Handler {
	if h == nil {
		panic("whttp: Adapt called with a nil handler")
	}
	return HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
	})
}

type taskKey struct{}

// TaskOf returns the task serving r, a request received by a Server (or a
// request made from it with WithContext or Clone): the connection's task,
// which a standard handler run by Adapt may suspend (t.Sleep, Await,
// Offload). It returns nil for other requests. It does not suspend.
func TaskOf(r *http.Request) *weft.Task {
	t, _ := r.Context().Value(taskKey{}).(*weft.Task)
	return t
}
