//go:build unix && !linux

package poller

// extraBackends adds nothing off Linux: there is no io_uring, and the
// readiness tests run on the default and portable backends only.
func extraBackends() map[string]Poller { return nil }
