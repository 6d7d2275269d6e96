//go:build !race

package whttp_test

// raceEnabled: the race detector is off.
const raceEnabled = false
