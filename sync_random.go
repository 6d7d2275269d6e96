package weft

import "math/rand/v2"

// chooseRandom returns a uniformly random int in [0, n), n > 0, for a
// choice task t makes: which of several ready Select cases fires. It and
// choosePartner are the one source of randomness in weft's scheduling
// decisions; every random choice goes through them, so that a seeded
// scheduler can take it over and replay a run.
func chooseRandom(t *Task, n int) int {
	if s := t.rs.sim; s != nil {
		return s.choose(t, DecideSelect, n)
	}
	return rand.IntN(n)
}

// choosePartner returns a uniformly random int in [0, n), n > 1, for the
// party about to satisfy one of the n cases that Select s waits on in one
// channel's queue (a sender or receiver task, a goroutine, another
// Select): which of them fires. The caller holds the channel's lock.
//
// In a seeded Run the draw comes from the seeded source, as a DecidePartner
// decision of the calling task, when the caller is a task of that Run:
// its tasks all run on the Run's goroutine, which owns the source. A plain
// goroutine, or a task of another Run, draws from math/rand (its timing is
// outside the seed's control anyway).
func (s *selector) choosePartner(n int) int {
	if sim := s.t.rs.sim; sim != nil {
		if pt := currentTask(); pt != nil && pt.rs == s.t.rs {
			return sim.choose(pt, DecidePartner, n)
		}
	}
	return rand.IntN(n)
}
