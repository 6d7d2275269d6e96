package main

// The WebSocket endpoints, as standard http.Handlers run by whttp.Adapt on
// the connection's task (whttp.TaskOf(r) gives it): the chat with
// gorilla/websocket, and with coder/websocket; an echo with each.
//
// How the connection is shared. Both libraries guard their writer with a
// Go channel used as a mutex, and gorilla's default ping and close
// handlers, like coder's reader, write the reply (a pong, the closing
// frame) themselves, from the reading side. On goroutines that is fine. On
// tasks of one loop it is not: a writer task suspended in the middle of a
// frame (a slow client, a 1 MB message) holds that mutex, and a reader
// task that then waits for it blocks the loop's goroutine on a Go channel,
// so the writer never resumes (the libraries' own timeout, 1 s for
// gorilla, 5 s for coder, ends the wait). So here exactly one task writes
// each connection:
//
//   - gorilla: the reader's ping and close handlers hand their replies to
//     the member's writer task, through its outbox;
//   - coder: the echo reads and writes in one task (its reader answers
//     pings in that task); the chat's writer task is the member's only
//     writer of messages, and coder's reader writes pongs and the closing
//     frame itself: safe only while the writer is not suspended in the
//     middle of a frame when a ping comes (small messages to a client that
//     reads them); otherwise the loop waits up to coder's 5 s. For large
//     messages with coder, read and write in one task, as the echo does.

import (
	"context"
	"net/http"
	"time"

	coder "github.com/coder/websocket"
	"github.com/gorilla/websocket"
	"github.com/weft-go/weft"
	"github.com/weft-go/weft/whttp"
)

// maxMessage bounds a message (1 MB messages pass).
const maxMessage = 2 << 20

// pingEvery is how often the server pings a quiet member.
const pingEvery = 30 * time.Second

var upgrader = websocket.Upgrader{} // the default origin check: same host

// gorillaChat joins each client to hub, with gorilla/websocket.
func gorillaChat(hub *Hub) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := whttp.TaskOf(r)
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return // gorilla has answered (400, 403...)
		}
		defer conn.Close()
		m := &member{out: weft.NewChan[frame](outbox)}
		conn.SetReadLimit(maxMessage)
		// The reader never writes: the writer task answers.
		conn.SetPingHandler(func(data string) error {
			m.out.TrySend(frame{kind: websocket.PongMessage, data: []byte(data)})
			return nil
		})
		conn.SetCloseHandler(func(code int, text string) error {
			m.out.TrySend(frame{kind: websocket.CloseMessage, data: websocket.FormatCloseMessage(code, "")})
			return nil
		})
		if err := hub.join(t, m); err != nil {
			return
		}
		writer := weft.Go(t, func(t *weft.Task) (struct{}, error) { return struct{}{}, gorillaWriter(t, conn, m) })
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				break // the client closed, vanished, or sent too much
			}
			if hub.Broadcast(t, msg) != nil {
				break
			}
		}
		// Even when the server's stop cancels this task: the writer says
		// goodbye before the connection closes.
		t.Protect(func(t *weft.Task) error {
			hub.leave(t, m) // closes the outbox: the writer ends
			writer.Await(t)
			return nil
		})
	}
}

// gorillaWriter writes m's outbox to conn, and pings it when quiet, until
// the outbox is closed; then it says goodbye.
func gorillaWriter(t *weft.Task, conn *websocket.Conn, m *member) error {
	ping := t.Ticker(pingEvery)
	defer ping.Close()
	for {
		var f frame
		var tick time.Time
		i, err := weft.Select(t, weft.RecvCase(m.out, &f), weft.RecvCase(ping, &tick))
		if err != nil {
			// The outbox is closed (the member left, was dropped, or
			// the hub closed), or the server is stopping: goodbye,
			// even while cancelled.
			t.Protect(func(t *weft.Task) error {
				return conn.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			})
			return nil
		}
		conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		switch {
		case i == 1:
			err = conn.WriteMessage(websocket.PingMessage, nil)
		case f.kind == websocket.CloseMessage:
			conn.WriteMessage(websocket.CloseMessage, f.data)
			return nil // the client's close, answered: nothing more goes out
		default:
			err = conn.WriteMessage(f.kind, f.data)
		}
		if err != nil {
			conn.Close() // the reader ends too
			return nil
		}
	}
}

// gorillaEcho sends each message back, reading and writing in the
// handler's task (gorilla's default handlers answer pings and the close
// from the same task).
func gorillaEcho(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	conn.SetReadLimit(maxMessage)
	for {
		typ, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		if err := conn.WriteMessage(typ, msg); err != nil {
			return
		}
	}
}

// coderEcho sends each message back, with coder/websocket, in the
// handler's task.
func coderEcho(w http.ResponseWriter, r *http.Request) {
	c, err := coder.Accept(w, r, nil)
	if err != nil {
		return // coder has answered
	}
	defer c.CloseNow()
	c.SetReadLimit(maxMessage)
	ctx := r.Context()
	for {
		typ, msg, err := c.Read(ctx)
		if err != nil {
			if coder.CloseStatus(err) == coder.StatusNormalClosure {
				c.Close(coder.StatusNormalClosure, "")
			}
			return
		}
		if err := c.Write(ctx, typ, msg); err != nil {
			return
		}
	}
}

// coderChat joins each client to hub, with coder/websocket.
func coderChat(hub *Hub) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := whttp.TaskOf(r)
		c, err := coder.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(maxMessage)
		m := &member{out: weft.NewChan[frame](outbox)}
		if err := hub.join(t, m); err != nil {
			return
		}
		ctx := r.Context()
		writer := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			for f, err := range m.out.All(t) {
				if err != nil {
					break
				}
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := c.Write(wctx, coder.MessageText, f.data)
				cancel()
				if err != nil {
					break
				}
			}
			return struct{}{}, nil
		})
		for {
			_, msg, err := c.Read(ctx)
			if err != nil {
				break // a close (coder's reader has answered it), or the client gone
			}
			if hub.Broadcast(t, msg) != nil {
				break
			}
		}
		t.Protect(func(t *weft.Task) error {
			hub.leave(t, m)
			writer.Await(t)
			return nil
		})
		c.Close(coder.StatusNormalClosure, "")
	}
}
