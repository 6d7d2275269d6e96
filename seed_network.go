package weft

// Networks: where Listen, Dial and ListenPacket go. By default they reach
// the host's network (net.go); WithNetwork sends every task of a Run to a
// Network of the caller's, and GoWithNetwork one task and the tasks it
// starts, so that one Run can hold several simulated hosts (simnet).
//
// The core only carries the choice: a Run's default (rs.network) and a
// task's own (taskExtra.network), inherited by the tasks it spawns. The net
// layer reads it (Task.network) and wraps what the Network returns in the
// usual Listener, Conn and PacketConn, so deadlines, NetConn, LoopConn and
// ReadWriter work the same on any Network.

import "net"

// Network is a network that Listen, Dial and ListenPacket can go through
// instead of the host's (WithNetwork, GoWithNetwork): an in-memory one
// (package simnet), a recorder, a fault injector. Its methods are called
// on the loop, by the task doing the operation, and may suspend it; they
// must honour cancellation as the operations they stand for do (return the
// cause, matching context.Canceled, when the task is cancelled while
// waiting), and must wait only on weft's own primitives (channels, events,
// timers, promises), so that a seeded Run stays deterministic.
type Network interface {
	// Listen announces on a local address, as weft.Listen.
	Listen(t *Task, network, address string) (NetListener, error)
	// Dial connects to address, as weft.Dial.
	Dial(t *Task, network, address string) (NetConn, error)
	// ListenPacket opens a datagram endpoint, as weft.ListenPacket.
	ListenPacket(t *Task, network, address string) (NetPacketConn, error)
}

// NetListener is a Network's listener. Accept may suspend the task, as
// Listener.Accept does, and must return the error of an interrupted wait
// (the cause, matching context.Canceled, when the task is cancelled).
// Close may be called from any task or goroutine, must not suspend, and
// must wake a task suspended in Accept with an error matching
// net.ErrClosed.
type NetListener interface {
	Accept(t *Task) (NetConn, error)
	Addr() net.Addr
	Close() error
}

// NetConn is a Network's stream connection. Read and Write may suspend
// the task, as Conn's do, and a wait inside them that is interrupted
// (cancellation, a deadline: the error the wait returned) must return
// that error. Read returns io.EOF at the end of the stream; Write writes
// all of b unless it fails. Close may be called from any task or
// goroutine, must not suspend, and must wake tasks suspended in Read or
// Write with an error matching net.ErrClosed.
type NetConn interface {
	Read(t *Task, b []byte) (int, error)
	Write(t *Task, b []byte) (int, error)
	CloseWrite() error
	Close() error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
}

// NetPacketConn is a Network's datagram endpoint. ReadFrom and WriteTo
// may suspend the task, as PacketConn's do, and must return the error of
// an interrupted wait (the cause, matching context.Canceled, when the task
// is cancelled); Close must not suspend and must wake them with an error
// matching net.ErrClosed.
type NetPacketConn interface {
	ReadFrom(t *Task, b []byte) (int, net.Addr, error)
	WriteTo(t *Task, b []byte, addr net.Addr) (int, error)
	LocalAddr() net.Addr
	Close() error
}

// WithNetwork routes the Listen, Dial and ListenPacket of every task of
// the Run through n (unless GoWithNetwork gives a task another). A nil n
// is the host's network. Under WithSeed, a Network that waits only on
// weft's primitives (simnet does) keeps the run deterministic, and its
// operations are not real I/O.
func WithNetwork(n Network) Option {
	return func(o *options) { o.network = n }
}

// GoWithNetwork starts f as a task, as Go does, whose Listen, Dial and
// ListenPacket, and those of every task it starts, go through n: one Run
// can then hold several simulated hosts, each started with its own
// n.Host(name). It returns the task's promise; the caller suspends as for
// Go (the child runs first), and it is not a cancellation point. A nil n
// panics with "weft:".
//
//go:noinline
func GoWithNetwork[T any](t *Task, n Network, f func(t *Task) (T, error)) *Promise[T] {
	pc := callerPC()
	t.check("GoWithNetwork")
	if f == nil {
		panic("weft: GoWithNetwork called with a nil function")
	}
	if n == nil {
		panic("weft: GoWithNetwork called with a nil Network")
	}
	return spawnIn(t, t.innermost(), f, pc, spawnGoWithNetwork, 0, func(c *Task) { c.ensureRare().network = n })
}

// network returns the Network t's I/O goes through, nil for the host's.
func (t *Task) network() Network {
	if r := t.rareOf(); r != nil && r.network != nil {
		return r.network
	}
	return t.rs.network
}

// inheritNetwork gives the newborn t the Network of the task that spawned
// it, if that one has its own.
func (t *Task) inheritNetwork(parent *scope) {
	if sp := parent.task; sp != nil {
		if r := sp.rareOf(); r != nil && r.network != nil {
			t.ensureRare().network = r.network
		}
	}
}
