//go:build !race && !weft_debug

package weft

// ownerChecks: off (owner.go).
const ownerChecks = false
