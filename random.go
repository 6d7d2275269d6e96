package weft

import "math/rand/v2"

// chooseRandom returns a uniformly random int in [0, n), n > 0, for a
// choice task t makes: which of several ready Select cases fires. It is
// the one source of randomness in weft's scheduling decisions; every
// random choice goes through it, so that a seeded scheduler can take it
// over and replay a run.
func chooseRandom(t *Task, n int) int {
	if s := t.rs.sim; s != nil {
		return s.choose(t, DecideSelect, n)
	}
	return rand.IntN(n)
}
