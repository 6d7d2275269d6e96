// Command http is a small HTTP/1.1 service on one weft loop, with
// net/http's ServeMux routing through whttp.Adapt.
//
//	go run ./examples/http -listen 127.0.0.1:8080
//	curl localhost:8080/hello?name=you      # plain text
//	curl localhost:8080/items/7             # JSON
//	curl -d '{"name":"x"}' localhost:8080/items
//	curl -N localhost:8080/countdown        # a streamed response, a line a second
//	curl localhost:8080/fetch?url=http://localhost:8080/items/1   # the weft client, from a handler
//
// Ctrl-C (SIGINT) stops it gracefully: it stops accepting, lets requests in
// flight finish (up to the drain timeout), and exits.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

type item struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	flag.Parse()
	// SIGINT cancels Run's context, which cancels main, and with it the
	// task in Serve: a graceful stop.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", *listen)
		if err != nil {
			return struct{}{}, err
		}
		slog.Info("serving", "addr", ln.Addr().String())
		srv := &whttp.Server{
			Handler:           whttp.Adapt(routes()),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       60 * time.Second,
			DrainTimeout:      5 * time.Second,
		}
		err = srv.Serve(t, ln)
		slog.Info("stopped", "err", err)
		return struct{}{}, err
	}, weft.WithContext(ctx))
	if err != nil {
		fmt.Fprintln(os.Stderr, "http:", err)
		os.Exit(1)
	}
}

func routes() *http.ServeMux {
	mux := http.NewServeMux()
	var nextID = 1
	items := map[int]item{} // no lock: every handler runs on the one loop

	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		if name == "" {
			name = "world"
		}
		fmt.Fprintf(w, "hello, %s\n", name)
	})
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			http.Error(w, "bad id", http.StatusBadRequest)
			return
		}
		it, ok := items[id]
		if !ok {
			it = item{ID: id, Name: "item " + strconv.Itoa(id)}
		}
		writeJSON(w, http.StatusOK, it)
	})
	mux.HandleFunc("POST /items", func(w http.ResponseWriter, r *http.Request) {
		var it item
		// The body is read in the connection's task: each read suspends.
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&it); err != nil {
			http.Error(w, "bad JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		it.ID = nextID
		nextID++
		items[it.ID] = it
		writeJSON(w, http.StatusCreated, it)
	})
	mux.HandleFunc("GET /countdown", func(w http.ResponseWriter, r *http.Request) {
		t := whttp.TaskOf(r) // the connection's task: sleeping it blocks no one else
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for i := 5; i > 0; i-- {
			fmt.Fprintf(w, "%d\n", i)
			w.(http.Flusher).Flush()
			if err := t.Sleep(time.Second); err != nil {
				return
			}
		}
		io.WriteString(w, "liftoff\n")
	})
	client := &whttp.Client{Timeout: 10 * time.Second}
	mux.HandleFunc("GET /fetch", func(w http.ResponseWriter, r *http.Request) {
		resp, err := client.Get(whttp.TaskOf(r), r.URL.Query().Get("url"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
