//go:build weft_envloops

package weft

// envLoopsByDefault, under the weft_envloops build tag, makes a Run that
// does not ask (WithLoops) read WEFT_LOOPS anyway. It is this project's
// route for running its own test suite on several loops (.ci/run:
// WEFT_LOOPS=4 go test -tags weft_envloops ./...); a program never builds
// with it.
const envLoopsByDefault = true
