package whttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// A server and a client on one loop: the server's handler suspends its
// connection's task; cancelling the task in Serve stops it gracefully.
func ExampleServer_Serve() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			t.Sleep(10 * time.Millisecond) // suspends this connection only
			fmt.Fprintf(w, "hello, %s", r.URL.Query().Get("name"))
		})}
		serving := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			return struct{}{}, srv.Serve(t, ln)
		})

		resp, err := whttp.Get(t, "http://"+ln.Addr().String()+"/?name=weft")
		if err != nil {
			return struct{}{}, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.Status, string(body))

		serving.Cancel() // graceful stop
		_, err = serving.Await(t)
		fmt.Println("Serve returned:", err)
		return struct{}{}, nil
	})
	// Output:
	// 200 OK hello, weft
	// Serve returned: <nil>
}

// Standard handlers and http.ServeMux patterns run through Adapt; TaskOf
// gives them the connection's task when they need to suspend.
func ExampleAdapt() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		whttp.TaskOf(r).Sleep(time.Millisecond)
		fmt.Fprintf(w, "item %s", r.PathValue("id"))
	})
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, _ := weft.Listen(t, "tcp", "127.0.0.1:0")
		serving := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			return struct{}{}, (&whttp.Server{Handler: whttp.Adapt(mux)}).Serve(t, ln)
		})
		for _, path := range []string{"/items/42", "/nothing"} {
			resp, err := whttp.Get(t, "http://"+ln.Addr().String()+path)
			if err != nil {
				return struct{}{}, err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Printf("%d %s\n", resp.StatusCode, body)
		}
		serving.Cancel()
		serving.Await(t)
		return struct{}{}, nil
	})
	// Output:
	// 200 item 42
	// 404 404 page not found
}

// The client fetches from any HTTP/1.1 server; here net/http's.
func ExampleClient_Do() {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
			return
		}
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	}))
	defer ts.Close()
	client := &whttp.Client{Timeout: 10 * time.Second}
	weft.Run(func(t *weft.Task) (struct{}, error) {
		req, _ := http.NewRequest("GET", ts.URL+"/old", nil)
		resp, err := client.Do(t, req) // follows the redirect
		if err != nil {
			return struct{}{}, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, string(body))
		return struct{}{}, nil
	})
	// Output: 200 GET /new
}

// A handler that starts work outliving it passes that work a copy of the
// request (r.Clone): the server reuses r, its URL and its header for the
// next request once the handler returns. The request's context, also
// passed here, may be kept: it is done when the handler returns.
func ExampleHandler_clone() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		logged := weft.NewChan[string](2)
		srv := &whttp.Server{Handler: whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			kept := r.Clone(context.WithoutCancel(ctx)) // its own URL and header
			weft.Go(t, func(t *weft.Task) (struct{}, error) {
				// Wait, off the loop, until the request is over.
				weft.Offload(t, func() (struct{}, error) { <-ctx.Done(); return struct{}{}, nil })
				return struct{}{}, logged.Send(t, kept.Method+" "+kept.URL.Path+" ua="+kept.Header.Get("User-Agent"))
			})
			io.WriteString(w, "accepted")
		})}
		ln, _ := weft.Listen(t, "tcp", "127.0.0.1:0")
		serving := weft.Go(t, func(t *weft.Task) (struct{}, error) { return struct{}{}, srv.Serve(t, ln) })
		client := &whttp.Client{}
		for _, path := range []string{"/a", "/b"} {
			req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+path, nil)
			req.Header.Set("User-Agent", "example"+path)
			resp, err := client.Do(t, req)
			if err != nil {
				return struct{}{}, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			line, _ := logged.Recv(t)
			fmt.Println(line)
		}
		serving.Cancel()
		serving.Await(t)
		return struct{}{}, nil
	})
	// Output:
	// GET /a ua=example/a
	// GET /b ua=example/b
}
