//go:build !race

package tour

const raceEnabled = false
