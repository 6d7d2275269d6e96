package weft_test

import (
	"io"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

// The cost of observation on the core benchmarks: each runs as the
// default (watchdog and labels on, no trace), with tracing to io.Discard
// (the stream's writer goroutine formats every event), into the flight
// recorder's ring (the loop's side of recording alone), with the watchdog
// off, with the labels off, and with both off.
var obsVariants = []struct {
	name string
	opts []weft.Option
}{
	{"default", nil},
	{"trace", []weft.Option{weft.WithTrace(io.Discard)}},
	{"flight", []weft.Option{weft.WithFlightRecorder(time.Second)}},
	{"nowatchdog", []weft.Option{weft.WithWatchdog(0)}},
	{"nolabels", []weft.Option{weft.WithTaskLabels(false)}},
	{"bare", []weft.Option{weft.WithWatchdog(0), weft.WithTaskLabels(false)}},
}

func BenchmarkObsSpawnAwait(b *testing.B) {
	for _, v := range obsVariants {
		b.Run(v.name, func(b *testing.B) {
			benchmarks.SpawnAwaitWith(b, append(v.opts, weft.WithLoops(1))...)
		})
	}
}

func BenchmarkObsYieldPingPong(b *testing.B) {
	for _, v := range obsVariants {
		b.Run(v.name, func(b *testing.B) {
			benchmarks.YieldPingPongWith(b, append(v.opts, weft.WithLoops(1))...)
		})
	}
}
