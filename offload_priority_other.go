//go:build !linux

package weft

// lowerThreadPriority does nothing here: thread priorities are not set per
// thread through a portable call; the spare P still applies.
func lowerThreadPriority() {}
