//go:build !linux

package poller

// Opening a backend off Linux: every kind is the portable one, poll(2) on
// Unix and the backend without descriptors elsewhere (nofd_other.go).

func newDefault() (Poller, error) { return newPortable() }

func newKind(Kind, Options) (Poller, error) { return newDefault() }
