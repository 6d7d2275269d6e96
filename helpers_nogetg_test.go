//go:build !amd64 && !arm64

package weft_test

// Without a goroutine identifier, use from another goroutine is caught only
// while the task is not running (see Task).
func skipGoroutineCheck() bool { return true }
