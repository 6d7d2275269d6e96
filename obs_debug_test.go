package weft_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/trace"
)

// get fetches path from h and returns the status and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// TestDebugHandlerServesTasksStatsAndTrace queries each endpoint while a
// Run's tasks wait, from a plain goroutine.
func TestDebugHandlerServesTasksStatsAndTrace(tt *testing.T) {
	h := http.StripPrefix("/debug/weft", weft.DebugHandler())
	type result struct {
		tasks, stats, trace string
		codes               [3]int
	}
	got := make(chan result, 1)
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		t.SetName("served")
		ch := weft.NewChan[int](0)
		p := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("parked-reader")
			return ch.Recv(t)
		})
		for range 3 {
			if err := t.Yield(); err != nil {
				return 0, err
			}
		}
		_, err := weft.Offload(t, func() (int, error) {
			// The job may start before the main task has suspended and
			// its loop has published its trace records, so ask again
			// until the views agree or ten seconds pass.
			var r result
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				r.codes[0], r.tasks = get(tt, h, "/debug/weft/tasks")
				r.codes[1], r.stats = get(tt, h, "/debug/weft/stats")
				r.codes[2], r.trace = get(tt, h, "/debug/weft/trace?seconds=10")
				if (offloadSeen(r.stats) && strings.Contains(r.trace, `"served"`)) || time.Now().After(deadline) {
					break
				}
			}
			got <- r
			return 0, nil
		})
		ch.Close()
		p.Await(t)
		return 0, err
	}, weft.WithFlightRecorder(time.Minute))
	if err != nil {
		tt.Fatal(err)
	}
	r := <-got
	if r.codes != [3]int{200, 200, 200} {
		tt.Fatalf("status codes %v, want 200s", r.codes)
	}
	if !strings.Contains(r.tasks, `"parked-reader"`) || !strings.Contains(r.tasks, "waiting on channel (Chan.Recv)") {
		tt.Errorf("/tasks does not show the parked reader:\n%s", r.tasks)
	}
	var stats []weft.Stats
	if err := json.Unmarshal([]byte(r.stats), &stats); err != nil {
		tt.Fatalf("/stats is not JSON: %v\n%s", err, r.stats)
	}
	if !offloadSeen(r.stats) {
		tt.Errorf("/stats has no Run with 2 live tasks, one on a channel, one offloading:\n%s", r.stats)
	}
	if err := trace.Validate([]byte(r.trace)); err != nil {
		tt.Errorf("/trace is not a valid trace: %v", err)
	}
	if !strings.Contains(r.trace, `"served"`) {
		tt.Errorf("/trace does not name the task that ran")
	}
}

// offloadSeen reports whether the /stats body holds a Run with two live
// tasks, one waiting on a channel and one on off-loop work.
func offloadSeen(body string) bool {
	var stats []weft.Stats
	if json.Unmarshal([]byte(body), &stats) != nil {
		return false
	}
	for _, s := range stats {
		if s.Live == 2 && s.Waiting.Channel == 1 && s.Waiting.Offload == 1 {
			return true
		}
	}
	return false
}

func TestDebugHandlerRejectsBadSeconds(t *testing.T) {
	code, body := get(t, weft.DebugHandler(), "/trace?seconds=abc")
	if code != http.StatusBadRequest || !strings.HasPrefix(body, "weft:") {
		t.Fatalf("got %d %q, want 400 and a weft: message", code, body)
	}
}

func TestDebugHandlerIndexLinksTheViews(t *testing.T) {
	code, body := get(t, weft.DebugHandler(), "/")
	if code != 200 || !strings.Contains(body, `href="tasks"`) || !strings.Contains(body, `href="stats"`) {
		t.Fatalf("got %d %q", code, body)
	}
}
