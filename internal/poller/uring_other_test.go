//go:build unix && !linux

package poller

func extraBackends() map[string]Poller { return nil }
