//go:build race

package tour

// raceEnabled: this test binary runs under the race detector, which
// slows the programs down (see slack).
const raceEnabled = true
