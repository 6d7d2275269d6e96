package main

// The WebSocket echoes run by whttp.Blocking: standard handlers on
// goroutines of their own, written as under net/http. The hijacked
// connection works from any goroutine, so a reader goroutine and a writer
// goroutine share it (gorilla's read and write pumps), and the libraries'
// own replies (pongs, the closing frame), which their readers write
// beside the writer, need no rule: the Go channels the libraries use as
// mutexes block goroutines, not a loop.

import (
	"context"
	"io"
	"log"
	"net/http"
	"time"

	coder "github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/gorilla/websocket"
)

// NewBlockingRouter returns the routes under /blocking/, run by
// whttp.Blocking: gorilla's echo with a reader and a writer goroutine
// (/blocking/echo), coder's (/blocking/coder/echo), and Server-Sent
// Events (/blocking/events, events.go).
func NewBlockingRouter(logw io.Writer) http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Use(middleware.RequestLogger(&middleware.DefaultLogFormatter{Logger: log.New(logw, "", log.LstdFlags), NoColor: true}))
	r.Use(middleware.Recoverer)
	r.Get("/blocking/echo", blockingGorillaEcho)
	r.Get("/blocking/coder/echo", blockingCoderEcho)
	r.Get("/blocking/events", blockingEvents)
	return r
}

// blockingGorillaEcho sends each message back: the handler's goroutine
// reads, a goroutine of its own writes. gorilla's default handlers answer
// pings and the close from the reader, beside the writer. When the server
// stops (r.Context() is done once its drain is over), the client gets a
// closing frame (1001).
func blockingGorillaEcho(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // gorilla has answered
	}
	defer conn.Close()
	conn.SetReadLimit(maxMessage)
	stop := context.AfterFunc(r.Context(), func() {
		conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(time.Second))
		conn.Close()
	})
	defer stop()
	type message struct {
		typ  int
		data []byte
	}
	out := make(chan message, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range out {
			conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := conn.WriteMessage(m.typ, m.data); err != nil {
				conn.Close() // the reader ends too
				for range out {
				}
				return
			}
		}
	}()
	for {
		typ, data, err := conn.ReadMessage()
		if err != nil {
			break
		}
		out <- message{typ, data}
	}
	close(out)
	<-done
}

// blockingCoderEcho sends each message back with coder/websocket: the
// handler's goroutine reads, a goroutine of its own writes. Its reads and
// writes take r.Context(): when the server stops, coder closes the
// connection.
func blockingCoderEcho(w http.ResponseWriter, r *http.Request) {
	c, err := coder.Accept(w, r, nil)
	if err != nil {
		return // coder has answered
	}
	defer c.CloseNow()
	c.SetReadLimit(maxMessage)
	ctx := r.Context()
	type message struct {
		typ  coder.MessageType
		data []byte
	}
	out := make(chan message, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range out {
			if err := c.Write(ctx, m.typ, m.data); err != nil {
				c.CloseNow()
				for range out {
				}
				return
			}
		}
	}()
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			break // a close (coder's reader has answered it), or the client gone
		}
		out <- message{typ, data}
	}
	close(out)
	<-done
	c.Close(coder.StatusNormalClosure, "")
}
