//go:build race || weft_debug

package weft

// ownerChecks: the race detector or the weft_debug tag is on (owner.go).
const ownerChecks = true
