package whttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// Standard handlers that block (net/http/pprof's profile, a handler that
// calls a blocking database client) run through Blocking, each on a
// goroutine of its own, so that the loop goes on serving the other
// connections; handlers that do not block run through Adapt.
func ExampleBlocking() {
	debug := http.NewServeMux()
	debug.HandleFunc("/debug/pprof/", pprof.Index)
	debug.HandleFunc("/debug/pprof/profile", pprof.Profile) // blocks for ?seconds=N
	debug.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // a blocking call: its goroutine waits, not the loop
		fmt.Fprintln(w, "report ready")
	})
	blocking := whttp.Blocking(debug)
	handler := whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			fmt.Fprintln(w, "ok") // in the connection's task: answers while the others block
			return
		}
		blocking.ServeHTTP(t, w, r)
	})
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		serving := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			return struct{}{}, (&whttp.Server{Handler: handler}).Serve(t, ln)
		})
		for _, path := range []string{"/report", "/health"} {
			resp, err := whttp.Get(t, "http://"+ln.Addr().String()+path)
			if err != nil {
				return struct{}{}, err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Printf("%d %s", resp.StatusCode, body)
		}
		serving.Cancel()
		serving.Await(t)
		return struct{}{}, nil
	})
	// Output:
	// 200 report ready
	// 200 ok
}
