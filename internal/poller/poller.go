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
// Backends: epoll (Linux), poll(2) (every Unix; forced on Linux with the
// build tag weft_portable or WEFT_BACKEND=portable) and a channel-based one
// with no fd support (other systems).
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
	Name string // "epoll", "poll", "none"
	FDs  bool   // Arm and Disarm work
	Edge bool   // Watch and Unwatch work
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

// Kind names a backend for New.
type Kind int

// The backends New can build.
const (
	Default  Kind = iota // the best one for this system (see Portable)
	Portable             // poll(2) on Unix, the channel backend elsewhere
)

// roundUpMillis converts a timeout to whole milliseconds for system calls
// that take them, rounding up so that a deadline is never reported early.
func roundUpMillis(d time.Duration) int {
	switch {
	case d < 0:
		return -1
	case d == 0:
		return 0
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > 1<<30 {
		ms = 1 << 30
	}
	return int(ms)
}
