package weft

// The debug handler: Dump, Stats and the flight recorder over HTTP. A
// layer file: the core uses no net/http.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DebugHandler returns an http.Handler that serves, for every running Run,
// the following; it does not suspend, nor does the handler wait for a
// loop:
//
//	/tasks            Dump's text
//	/stats            AllStats as JSON
//	/trace?seconds=N  the flight recorder's last N seconds (all it holds
//	                  without N) as trace-event JSON, for Perfetto or
//	                  `weft trace`; the Runs must use WithFlightRecorder
//
// It matches the end of the request's path, so it may be mounted under
// any prefix, with or without http.StripPrefix:
//
//	http.Handle("/debug/weft/", weft.DebugHandler())
//
// Since it never waits for a loop, a stuck loop's tasks are shown too.
func DebugHandler() http.Handler { return http.HandlerFunc(serveDebug) }

func serveDebug(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case strings.HasSuffix(path, "/tasks") || path == "tasks":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		Dump(w)
	case strings.HasSuffix(path, "/stats") || path == "stats":
		w.Header().Set("Content-Type", "application/json")
		all := AllStats()
		if all == nil {
			all = []Stats{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(all)
	case strings.HasSuffix(path, "/trace") || path == "trace":
		var d time.Duration
		if s := r.URL.Query().Get("seconds"); s != "" {
			secs, err := strconv.ParseFloat(s, 64)
			if err != nil || secs <= 0 || secs > 3600 {
				http.Error(w, "weft: seconds must be a number of seconds, more than 0 and at most 3600", http.StatusBadRequest)
				return
			}
			d = time.Duration(secs * float64(time.Second))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Disposition", `attachment; filename="weft-trace.json"`)
		if err := WriteFlightRecord(w, d); err != nil {
			if errors.Is(err, ErrNoFlightRecorder) {
				w.Header().Del("Content-Disposition")
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			// The body has begun: nothing better to do than stop.
			panic(http.ErrAbortHandler)
		}
	default:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html><title>weft</title><h1>weft</h1><ul>`+
			`<li><a href="tasks">tasks</a>: every live task, a tree per loop</li>`+
			`<li><a href="stats">stats</a>: statistics (JSON)</li>`+
			`<li><a href="trace?seconds=5">trace?seconds=5</a>: the flight recorder's last seconds (trace-event JSON; needs WithFlightRecorder)</li></ul>`)
	}
}
