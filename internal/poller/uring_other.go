//go:build !linux

package poller

// The completion side's types, where no backend has one (io_uring is
// Linux's: uring_linux.go).

// Op is an operation of the completion side, which no backend here has.
type Op struct {
	Res   int32
	Flags uint32
	Owner any
}

// Provided is the completion side's ring of buffers, which no backend
// here has.
type Provided struct{}
