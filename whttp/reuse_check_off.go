//go:build !race && !weft_debug

package whttp

// checkRetention is off: the server reuses each request's state (see
// reuse.go).
const checkRetention = false
