//go:build amd64 || arm64

package weft_test

// On these platforms a Task knows its goroutine, so use from another
// goroutine is caught even while the task runs.
func skipGoroutineCheck() bool { return false }
