//go:build unix && !linux

package poller

func newDefault() (Poller, error) { return newPoll() }
