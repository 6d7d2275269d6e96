package main

// The chat: a hub task that keeps the members and hands each message to
// every member's outbox, and per member the connection's task, which
// reads the member's messages, and a writer task, which alone writes the
// member's connection (messages, pongs, the closing frame), from its
// outbox. The hub talks to them only through weft channels, so the chat
// runs on one loop or several alike.

import (
	"errors"
	"sync/atomic"

	"github.com/weft-go/weft"
)

// outbox is how much a member may lag behind before the hub drops it.
const outbox = 64

// frame is what a member's writer sends: a message, or a control frame the
// reader asked for (the reader never writes: see serveGorilla).
type frame struct {
	kind int // a gorilla message type (TextMessage, PongMessage, CloseMessage...)
	data []byte
}

// member is one connected client.
type member struct {
	out *weft.Chan[frame]
}

type hubOp struct {
	join, leave *member
	msg         []byte
}

// Hub relays every message to every member. Its methods may be called by
// any task of the Run.
type Hub struct {
	ops     *weft.Chan[hubOp]
	members atomic.Int64 // how many, for /api/stats and the tests
	sent    atomic.Int64 // messages relayed
}

// StartHub starts the hub's task; it runs until Close.
func StartHub(t *weft.Task) *Hub {
	h := &Hub{ops: weft.NewChan[hubOp](256)}
	weft.Go(t, func(t *weft.Task) (struct{}, error) { return struct{}{}, h.run(t) })
	return h
}

// Close ends the hub: every member's outbox is closed, so its writer says
// goodbye and ends.
func (h *Hub) Close() { h.ops.Close() }

func (h *Hub) run(t *weft.Task) error {
	members := map[*member]struct{}{}
	defer func() {
		for m := range members {
			m.out.Close()
		}
	}()
	for {
		op, err := h.ops.Recv(t)
		if err != nil {
			return nil // closed, or the Run stops
		}
		switch {
		case op.join != nil:
			members[op.join] = struct{}{}
		case op.leave != nil:
			if _, ok := members[op.leave]; ok {
				delete(members, op.leave)
				op.leave.out.Close()
			}
		default:
			for m := range members {
				if !m.out.TrySend(frame{kind: textMessage, data: op.msg}) {
					delete(members, m) // too slow: dropped, its writer closes it
					m.out.Close()
				}
			}
			h.sent.Add(1)
		}
		h.members.Store(int64(len(members)))
	}
}

// join adds m; it suspends t while the hub is busy.
func (h *Hub) join(t *weft.Task, m *member) error { return h.ops.Send(t, hubOp{join: m}) }

// leave removes m (its outbox is closed).
func (h *Hub) leave(t *weft.Task, m *member) error { return h.ops.Send(t, hubOp{leave: m}) }

// Broadcast sends msg to every member.
func (h *Hub) Broadcast(t *weft.Task, msg []byte) error {
	if err := h.ops.Send(t, hubOp{msg: msg}); err != nil {
		return errors.New("chat: the hub is closed")
	}
	return nil
}

// Members returns how many members the hub has.
func (h *Hub) Members() int { return int(h.members.Load()) }

// textMessage is gorilla's and the WebSocket protocol's text opcode.
const textMessage = 1
