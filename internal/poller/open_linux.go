//go:build linux

package poller

// Opening a backend on Linux: epoll by default, io_uring when asked for
// and the kernel gives one.

// defaultKind is the backend Default means on Linux (see DESIGN.md, "I/O"
// for why).
const defaultKind = Epoll

func newDefault() (Poller, error) { return newKind(defaultKind, Options{}) }

// newKind makes a Linux backend: io_uring, or epoll if that is what was
// asked or io_uring cannot be had.
func newKind(k Kind, o Options) (Poller, error) {
	if k == Default {
		k = defaultKind
	}
	if k == Uring {
		if r, err := newUring(o); err == nil {
			return r, nil
		}
	}
	return newLazy(epollCaps, openEpoll), nil
}
