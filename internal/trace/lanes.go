package trace

import "math/bits"

// Lanes hands out offload lane numbers for one loop: the lowest lane not
// in use, so that off-loop work in flight at the same time goes on
// different tracks and the numbering does not depend on which worker ran
// it. The loop takes a lane when it submits work and puts it back when the
// result comes in (after recording Offload). The zero Lanes is ready to
// use; it is loop-owned, like a Buffer.
type Lanes struct {
	used []uint64 // bit j of used[i]: lane 64*i+j is taken
}

// Take returns the lowest free lane and marks it taken.
func (l *Lanes) Take() int {
	for i, w := range l.used {
		if w != ^uint64(0) {
			j := bits.TrailingZeros64(^w)
			l.used[i] |= 1 << j
			return 64*i + j
		}
	}
	l.used = append(l.used, 1)
	return 64 * (len(l.used) - 1)
}

// Put frees lane, which Take returned.
func (l *Lanes) Put(lane int) {
	l.used[lane/64] &^= 1 << (lane % 64)
}
