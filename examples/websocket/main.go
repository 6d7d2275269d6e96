// Command websocket is a chat over WebSockets served by whttp, routed by
// chi with its usual middleware, on gorilla/websocket (/ws) or
// coder/websocket (/coder/chat), with an echo endpoint for each (/echo,
// /coder/echo) and the chat's page at /. Each WebSocket handler is a
// standard http.Handler run by whttp.Adapt on its connection's task: the
// connection's reads and writes suspend the task that makes them, so a
// member's reader and writer are two tasks, and an idle member costs two
// suspended tasks. Under /blocking/, echoes with each library run by
// whttp.Blocking, on goroutines, written as under net/http (blocking.go).
//
//	go run . -addr 127.0.0.1:8080          # then open http://127.0.0.1:8080/
//	go run . -addr 127.0.0.1:8080 -loops 2
//
// Ctrl-C stops it gracefully (the hub says goodbye to every member).
package main

import (
	"context"
	"crypto/tls"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

//go:embed static/index.html
var page []byte

// Reports collects what browser tests POST to /report (see the page).
type Reports struct {
	mu  sync.Mutex
	got map[string]string
	new chan struct{}
}

// Get returns the report named name, if it came.
func (rp *Reports) Get(name string) (string, bool) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	v, ok := rp.got[name]
	return v, ok
}

// NewServer returns the chat's server on hub, over TLS if cfg is not
// nil; logs go to logw. Paths under /blocking/ are served by
// NewBlockingRouter's handlers, run by whttp.Blocking on goroutines; the
// rest by NewRouter's, run by whttp.Adapt on the connection's task.
func NewServer(hub *Hub, logw io.Writer, reports *Reports, cfg *tls.Config) *whttp.Server {
	onTask := whttp.Adapt(NewRouter(hub, logw, reports))
	onGoroutine := whttp.Blocking(NewBlockingRouter(logw))
	h := whttp.HandlerFunc(func(t *weft.Task, w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/blocking/") {
			onGoroutine.ServeHTTP(t, w, r)
			return
		}
		onTask.ServeHTTP(t, w, r)
	})
	return &whttp.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: cfg}
}

// NewRouter returns the chat's routes, a standard http.Handler.
func NewRouter(hub *Hub, logw io.Writer, reports *Reports) http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Use(middleware.RequestLogger(&middleware.DefaultLogFormatter{Logger: log.New(logw, "", log.LstdFlags), NoColor: true}))
	r.Use(middleware.Recoverer)
	// The WebSockets live as long as their clients: no Timeout for them.
	r.Get("/ws", gorillaChat(hub))
	r.Get("/echo", gorillaEcho)
	r.Get("/coder/chat", coderChat(hub))
	r.Get("/coder/echo", coderEcho)
	r.Get("/events", events) // a stream: no Timeout, no Compress either
	r.Group(func(r chi.Router) {
		r.Use(middleware.Timeout(5 * time.Second))
		r.Use(middleware.Compress(5))
		r.Get("/", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(page)
		})
		r.Get("/api/stats", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"members": hub.Members(), "relayed": hub.sent.Load(), "request": middleware.GetReqID(r.Context())})
		})
		r.Post("/report", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<10))
			if reports != nil {
				reports.mu.Lock()
				if reports.got == nil {
					reports.got = map[string]string{}
				}
				reports.got[r.URL.Query().Get("name")] = string(b)
				reports.mu.Unlock()
				select {
				case reports.new <- struct{}{}:
				default:
				}
			}
		})
	})
	return r
}

// Serve runs the chat on ln (over TLS if cfg is not nil) until t is
// cancelled: a graceful stop. The
// WebSocket connections are their handlers' (hijacked): the server's drain
// neither waits for them nor closes them, so the hub closes as the stop
// begins, and each member's writer says goodbye with a closing frame.
func Serve(t *weft.Task, ln *weft.Listener, logw io.Writer, reports *Reports, cfg *tls.Config) error {
	hub := StartHub(t)
	defer hub.Close()
	srv := NewServer(hub, logw, reports, cfg)
	srv.RegisterOnShutdown(hub.Close)                 // a stop by srv.Shutdown
	stop := context.AfterFunc(t.Context(), hub.Close) // a stop by cancelling t
	defer stop()
	return srv.Serve(t, ln)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	loops := flag.Int("loops", 1, "weft loops")
	flag.Parse()
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", *addr)
		if err != nil {
			return struct{}{}, err
		}
		fmt.Printf("chat on http://%s/\n", ln.Addr())
		serving := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			return struct{}{}, Serve(t, ln, os.Stderr, nil, nil)
		})
		sig := weft.Signal(t, os.Interrupt)
		weft.Select(t, weft.RecvCase(sig, new(os.Signal)))
		serving.Cancel()
		return serving.Await(t)
	}, weft.WithLoops(*loops))
	if err != nil {
		log.Fatal(err)
	}
}
