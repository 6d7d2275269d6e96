// Command uringcheck exits 0 if this machine gives weft an io_uring, and 1
// if a Run asking for one would fall back to epoll (an old kernel, a
// seccomp profile, io_uring_disabled). CI runs the test suite on io_uring
// only where it exists.
package main

import (
	"fmt"
	"os"

	"github.com/weft-go/weft/internal/poller"
)

func main() {
	p, err := poller.Open(poller.Uring, poller.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "uringcheck:", err)
		os.Exit(1)
	}
	name := p.Caps().Name
	p.Close()
	fmt.Println(name)
	if name != "io_uring" {
		os.Exit(1)
	}
}
