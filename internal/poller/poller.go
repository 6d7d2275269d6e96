// Package poller is weft's OS readiness layer: the part of a loop that
// sleeps in the kernel until a file descriptor is ready, a deadline passes,
// or another goroutine wakes it.
//
// # The contract
//
// Every backend implements Poller with these rules:
//
//  1. One goroutine at a time uses a Poller (the goroutine running its loop),
//     except Wake, which any goroutine may call at any time.
//  2. Arm registers a one-shot, level-triggered interest: the next Wait that
//     finds fd ready for the mode reports it once, and the interest is then
//     gone; the loop arms again if it still cares. Arming a mode that is
//     already armed is a no-op. An fd that is already ready when armed is
//     reported by the next Wait.
//  3. Disarm withdraws interest in modes that were armed and not yet reported.
//     It never fails for an fd the poller does not know.
//  4. Watch (where Caps().Edge is true) registers fd for edge-triggered
//     reports in both directions until Unwatch: a report means the state may
//     have changed, and the loop retries its system call to find out. An fd
//     is either armed or watched, never both. A watched fd's report adds
//     Hangup to Read when the peer hung up or an error is pending (epoll's
//     RDHUP, HUP, ERR): no further edge may come for it, so whoever keeps
//     "readable since the last drain" state must keep it set for good.
//  5. Wait blocks for at most timeout (negative: no limit; zero: do not
//     block), appends what it found to evs and returns it. Errors and
//     hang-ups are reported as readiness in both directions, so that the
//     waiter retries its call and sees the error from the call itself.
//     A Wait that returns early with nothing (a signal, a Wake) is normal.
//  6. Wake makes the Wait in progress, or else the next one, return soon.
//     Several Wakes before a Wait may collapse into one.
//  7. Close releases the kernel objects. The fds that were armed or watched
//     are not closed: they belong to their owners.
//
// Open hands out the readiness backends (epoll, poll) unopened: their
// kernel objects come with the first Arm, Watch or Wait, so that a Run
// that never touches a descriptor, nor sleeps in the kernel, opens none.
// Caps are known before; a Wake before the open is kept for the first
// Wait; an open that fails is the error of the Arm or Watch that asked
// for it (see lazy.go).
//
// # The completion side
//
// A backend whose Caps().Completion is true (io_uring) is also a
// Completer: the loop hands it whole operations (a receive into a buffer,
// a send, an accept, a connect) instead of waiting for readiness and
// making the system call itself. Its rules, beside the ones above:
//
//  8. Submit queues an Op; nothing reaches the kernel until the next Wait
//     (or Flush), which submits everything queued with one system call and
//     collects completions in the same call. From Submit until the Wait
//     that lists the Op in Completed, the Op and its buffer belong to the
//     kernel: the caller must not touch, reuse or prepare them again, and
//     the backend keeps them reachable (Go's heap does not move objects,
//     and the table of operations in flight keeps the collector off them).
//     A buffer handed to Submit must therefore be on the heap, never on a
//     goroutine stack, which may move: the Op's field that holds it makes
//     the compiler put it there.
//  9. Every submitted Op completes exactly once (a multishot one may
//     complete several times, each Completion but the last with More):
//     Wait sets Res and lists it in Completed, in completion order.
//     Completed is valid until the next Wait. After the last completion
//     the caller owns the Op again and may prepare and submit it anew.
//     A multishot receive takes its buffers from the backend's Provided
//     ring: each completion names one (Buffer), which is the caller's
//     until it gives it back with Recycle; the kernel never writes a
//     buffer between those two points.
//  10. Cancel asks the kernel to give the Op back early. It is only a
//     request: the Op still completes, with -ECANCELED (or -EINTR) if the
//     cancel won, or with its real result (bytes received, bytes sent, a
//     new fd) if the operation had completed first. The caller must honour
//     that result: received bytes are delivered, a sent count is counted,
//     an accepted fd is used or closed. So a cancelled read loses nothing.
//  11. Unwatch cancels every Op in flight on the fd (before the owner closes
//     it); they complete as after Cancel.
//  12. Close cancels whatever is still in flight and waits (boundedly) for
//     the kernel to give it back; buffers the kernel still holds after that
//     are kept reachable for the life of the process.
//
// Arm, Disarm and Wait's events work on a Completer as on any backend (a
// one-shot poll request per armed direction); Watch registers nothing, and
// no edges are reported: the I/O layer uses operations instead.
//
// Backends: epoll (Linux), io_uring (Linux 5.11 and later, chosen with
// WEFT_BACKEND=uring or Open(Uring, ...), falling back to epoll where the
// kernel refuses it), poll(2) (every Unix; forced on Linux with the build
// tag weft_portable or WEFT_BACKEND=portable) and a channel-based one with
// no fd support (other systems).
package poller

import (
	"errors"
	"time"
)

// Mode is a readiness direction.
type Mode uint8

// The readiness directions.
const (
	Read Mode = 1 << iota
	Write
	// Hangup comes with Read in a watched fd's report when the peer has
	// hung up or an error is pending: a state that stays, so a reader
	// must never again wait for an edge before it tries its call.
	Hangup
)

// Event reports readiness of Fd for the modes in Ready.
type Event struct {
	Fd    int32
	Ready Mode
}

// Caps describes what a backend can do.
type Caps struct {
	Name string // "epoll", "io_uring", "poll", "none"
	FDs  bool   // Arm and Disarm work
	Edge bool   // Watch reports edges (epoll)
	// Completion: the backend is a Completer (io_uring).
	Completion bool
	// SingleIssuer: only the thread that called Start may use the poller
	// (see Options.SingleIssuer).
	SingleIssuer bool
}

// ErrUnsupported is returned by operations a backend does not have.
var ErrUnsupported = errors.New("weft: not supported by this poller backend")

// Poller is an OS readiness backend; see the package documentation for the
// rules every implementation follows.
type Poller interface {
	Caps() Caps
	Arm(fd int, m Mode) error
	Disarm(fd int, m Mode) error
	Watch(fd int) error
	Unwatch(fd int) error
	Wait(timeout time.Duration, evs []Event) ([]Event, error)
	Wake() error
	Close() error
}

// Completer is the completion side of a backend; see the package
// documentation, rules 8 to 12.
type Completer interface {
	Submit(op *Op)
	Cancel(op *Op)
	Completed() []Completion
	Flush() error
	// Provided returns the backend's ring of provided buffers for
	// multishot receives, or nil if it has none.
	Provided() *Provided
}

// Completion is one completion of an Op: a multishot Op may complete
// several times in one Wait, each with its own result.
type Completion struct {
	Op    *Op
	Res   int32
	Flags uint32
}

// Kind names a backend for Open.
type Kind int

// The backends Open can build.
const (
	Default  Kind = iota // the best one for this system, or WEFT_BACKEND's
	Portable             // poll(2) on Unix, the backend without fds elsewhere
	Epoll                // epoll (Linux; elsewhere: Default)
	Uring                // io_uring (Linux 5.11+; else epoll, silently)
)

// Options tune a backend.
type Options struct {
	// SingleIssuer: the caller will lock its goroutine to its thread and
	// call Start there before any other use, and use the poller from that
	// thread only (io_uring: IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN).
	// Other backends ignore it.
	SingleIssuer bool
}

// Starter is a backend that must be started on the thread that will use
// it (Options.SingleIssuer).
type Starter interface {
	Start() error
}
