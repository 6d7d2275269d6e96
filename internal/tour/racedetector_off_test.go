//go:build !race

package tour

// raceEnabled: no race detector in this test binary.
const raceEnabled = false
