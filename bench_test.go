package weft_test

import (
	"testing"

	"github.com/weft-go/weft/internal/benchmarks"
)

// Each weft benchmark sits beside its Go-native twin; the bench module's
// `go run . core` prints them side by side with the ratios.

func BenchmarkSpawnAwait(b *testing.B)         { benchmarks.SpawnAwait(b) }
func BenchmarkGoroutineSpawnJoin(b *testing.B) { benchmarks.GoroutineSpawnJoin(b) }

func BenchmarkYieldPingPong(b *testing.B)   { benchmarks.YieldPingPong(b) }
func BenchmarkEmptyRun(b *testing.B)        { benchmarks.EmptyRun(b) }
func BenchmarkChannelPingPong(b *testing.B) { benchmarks.ChannelPingPong(b) }

func BenchmarkSleepingTaskMemory(b *testing.B)    { benchmarks.SleepingTaskMemory(b) }
func BenchmarkParkedGoroutineMemory(b *testing.B) { benchmarks.ParkedGoroutineMemory(b) }

func BenchmarkManySleeps(b *testing.B) { benchmarks.ManySleeps(b) }

func BenchmarkCancel(b *testing.B)        { benchmarks.Cancel(b) }
func BenchmarkContextCancel(b *testing.B) { benchmarks.ContextCancel(b) }

func BenchmarkCheckpoint(b *testing.B) { benchmarks.Checkpoint(b) }

func BenchmarkGroupGo(b *testing.B)       { benchmarks.GroupGo(b) }
func BenchmarkWaitGroupGo(b *testing.B)   { benchmarks.WaitGroupGo(b) }
func BenchmarkOffload(b *testing.B)       { benchmarks.OffloadRoundTrip(b) }
func BenchmarkWorkerHandoff(b *testing.B) { benchmarks.WorkerHandoff(b) }
func BenchmarkGosched(b *testing.B)       { benchmarks.Gosched(b) }

func BenchmarkBlockingCall(b *testing.B)        { benchmarks.BlockingCall(b) }
func BenchmarkGoroutineCall(b *testing.B)       { benchmarks.GoroutineCall(b) }
func BenchmarkBlockingVsGoroutine(b *testing.B) { benchmarks.BlockingVsGoroutine(b) }
