//go:build !weft_envloops

package weft

// envLoopsByDefault: a Run that does not ask (WithLoops) never reads
// WEFT_LOOPS (see LoopsFromEnv).
const envLoopsByDefault = false
