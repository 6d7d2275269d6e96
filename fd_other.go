//go:build !unix

package weft

import "github.com/weft-go/weft/internal/poller"

// readyNow is never reached on systems without fd readiness.
func readyNow(int, poller.Mode) bool { return false }
