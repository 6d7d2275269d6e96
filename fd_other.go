//go:build !unix

package weft

import "github.com/weft-go/weft/internal/poller"

// readyNow is never reached on systems without fd readiness; waitFD
// (fd.go), built everywhere, calls it.
//
//lint:ignore U1000 used by fd.go's waitFD, which nothing calls on these systems
func readyNow(int, poller.Mode) bool { return false }
