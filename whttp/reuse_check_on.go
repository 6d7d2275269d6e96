//go:build race || weft_debug

package whttp

// checkRetention: the race detector or the weft_debug build tag is on, so
// the server reuses nothing and checks that handlers keep nothing (see
// reuse.go).
const checkRetention = true
