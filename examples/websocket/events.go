package main

// Server-Sent Events, the standard way: write an event, flush, wait. On
// the connection's task (/events) the wait is the task's Sleep; run by
// whttp.Blocking (/blocking/events) it is a select on r.Context().Done(),
// as under net/http. Either ends when the client leaves: whttp watches
// the connection while the handler runs, cancels the request's context
// and, on a task, the task.

import (
	"fmt"
	"net/http"
	"time"

	"github.com/weft-go/weft/whttp"
)

// eventEvery is how often the streams send an event.
const eventEvery = 100 * time.Millisecond

// events streams a counter, on the connection's task.
func events(w http.ResponseWriter, r *http.Request) {
	t := whttp.TaskOf(r)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	for i := 0; ; i++ {
		fmt.Fprintf(w, "data: %d\n\n", i)
		if rc.Flush() != nil {
			return
		}
		if t.Sleep(eventEvery) != nil {
			return // the client left (or the server is cut off)
		}
	}
}

// blockingEvents streams a counter, on a goroutine (whttp.Blocking).
func blockingEvents(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	tick := time.NewTicker(eventEvery)
	defer tick.Stop()
	for i := 0; ; i++ {
		fmt.Fprintf(w, "data: %d\n\n", i)
		if rc.Flush() != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return // the client left
		case <-tick.C:
		}
	}
}
