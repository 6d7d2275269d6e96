package weft

import (
	"fmt"

	"github.com/weft-go/weft/internal/poller"
)

// Backend names the way a Run's loops wait for the kernel and do their
// I/O (see WithBackend).
type Backend string

// The backends.
const (
	// BackendDefault is the system's best backend, or the one the
	// WEFT_BACKEND environment variable names ("epoll", "uring",
	// "portable"). On Linux it is epoll.
	BackendDefault Backend = ""
	// BackendEpoll: readiness with epoll (Linux). Sockets and pipes are
	// non-blocking fds registered edge-triggered once; an operation makes
	// its system call and waits for an edge only when it would block.
	BackendEpoll Backend = "epoll"
	// BackendIOUring: completions with io_uring (Linux 5.11 and later). A
	// socket's Read, Write, Accept and Dial submit one operation each and
	// the task waits for its completion; a loop submits what its tasks
	// queued, and collects what completed, with one system call. Where
	// the kernel refuses io_uring (too old, or forbidden by a container's
	// seccomp profile), the Run silently uses epoll; Stats.Backend says
	// which one runs.
	BackendIOUring Backend = "io_uring"
	// BackendPortable: the net and os packages, a blocking call on a
	// helper goroutine per operation, and poll(2) for Readable and
	// Writable. Every Unix has it; it is the slowest.
	BackendPortable Backend = "portable"
)

// WithBackend chooses the backend of the Run's loops, overriding
// WEFT_BACKEND. An unknown name makes Run return an error. A build with
// the weft_portable tag always uses BackendPortable.
func WithBackend(b Backend) Option {
	return func(o *options) {
		switch b {
		case BackendDefault:
			o.backend = poller.Default
		case BackendEpoll:
			o.backend = poller.Epoll
		case BackendIOUring, "uring":
			o.backend = poller.Uring
		case BackendPortable:
			o.backend = poller.Portable
		default:
			o.err = fmt.Errorf("weft: WithBackend: unknown backend %q (have %q, %q, %q)", string(b), BackendEpoll, BackendIOUring, BackendPortable)
		}
	}
}

// backendName is the Backend l runs.
func (l *loop) backendName() Backend {
	switch l.caps.Name {
	case "epoll":
		return BackendEpoll
	case "io_uring":
		return BackendIOUring
	}
	return BackendPortable
}
