//go:build race

package whttp_test

// raceEnabled: the race detector is on.
const raceEnabled = true
