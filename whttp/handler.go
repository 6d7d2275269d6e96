package whttp

import (
	"net/http"

	"github.com/weft-go/weft"
)

// Handler responds to an HTTP request, in the task t of the request's
// connection: it may suspend t (Sleep, Await, I/O, Offload) without
// blocking other connections. It reads r.Body and writes w in t, and must
// not use them after it returns. As with net/http, the response is
// complete when ServeHTTP returns.
//
// Use r.Context() for work that should end with the request: it is done
// when ServeHTTP returns or the connection is cut off (see Server.Serve).
// A graceful stop of the server neither cancels t nor r.Context(); the
// drain timeout cancels both.
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
// for net/http. h runs on the loop, so it must not block (no channel
// receives, mutex waits or blocking calls: use Blocking for such a
// handler); its reads of r.Body and writes
// to w suspend the task, as a weft Handler's do. A standard handler that
// needs to suspend gets the task with TaskOf(r), so http.ServeMux
// patterns can route to code that sleeps or awaits.
func Adapt(h http.Handler) Handler {
	if h == nil {
		panic("whttp: Adapt called with a nil handler")
	}
	return HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
	})
}

type taskKey struct{}

// TaskOf returns the task serving r, a request received by a Server: the
// connection's task, which a standard handler run by Adapt may suspend
// (t.Sleep, Await, Offload). It returns nil for other requests.
func TaskOf(r *http.Request) *weft.Task {
	t, _ := r.Context().Value(taskKey{}).(*weft.Task)
	return t
}
