//go:build unix && !linux

package poller

func newDefault() (Poller, error) { return newPoll() }

func newKind(Kind, Options) (Poller, error) { return newDefault() }

// Op is an operation of the completion side, which no backend here has.
type Op struct {
	Res   int32
	Flags uint32
	Owner any
}

// Provided is the completion side's ring of buffers, which no backend
// here has.
type Provided struct{}
