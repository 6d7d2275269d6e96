package weft_test

import (
	"fmt"

	"github.com/weft-go/weft"
)

// WithBackend chooses how the loops do their I/O; Stats says which one
// runs (io_uring falls back to epoll where the kernel refuses it).
func ExampleWithBackend() {
	b, _ := weft.Run(func(t *weft.Task) (weft.Backend, error) {
		return weft.RunStats(t).Backend, nil
	}, weft.WithBackend(weft.BackendEpoll))
	fmt.Println(b)
	// Output: epoll
}
