package poller

// Choosing and opening a backend: the kind asked for, WEFT_BACKEND's, or
// the system's best (open_linux.go, open_other.go); the weft_portable
// build tag (portable_tag.go) forces the portable one.

import (
	"os"
	"strings"
)

// EnvKind is the backend WEFT_BACKEND names ("uring" or "io_uring",
// "epoll", "portable"; case does not matter), or Default.
func EnvKind() Kind {
	return ParseKind(os.Getenv("WEFT_BACKEND"))
}

// ParseKind reads a backend name as WEFT_BACKEND gives it; anything else
// is Default.
func ParseKind(s string) Kind {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "portable", "poll":
		return Portable
	case "epoll":
		return Epoll
	case "uring", "io_uring", "iouring":
		return Uring
	}
	return Default
}

// Open returns a backend of the given kind. Default is WEFT_BACKEND's
// choice, else the system's best; a build with the weft_portable tag
// always gets Portable. A backend the system lacks (io_uring on an old
// kernel, or forbidden by a seccomp profile) falls back silently to the
// system's default: Caps().Name says which one runs.
func Open(k Kind, o Options) (Poller, error) {
	if buildPortable {
		return openPortable()
	}
	if k == Default {
		k = EnvKind()
	}
	if k == Portable {
		return openPortable()
	}
	return newKind(k, o)
}

// openPortable is the portable backend, opened on first use (see lazy).
func openPortable() (Poller, error) {
	return newLazy(portableCaps, newPortable), nil
}
