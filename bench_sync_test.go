package weft_test

import (
	"testing"

	"github.com/weft-go/weft/internal/benchmarks"
)

// Channels, locks and the goroutine bridge, each beside its Go twin.

func BenchmarkWeftChanPingPong0(b *testing.B) { benchmarks.WeftChanPingPong0(b) }
func BenchmarkGoChanPingPong0(b *testing.B)   { benchmarks.GoChanPingPong0(b) }
func BenchmarkWeftChanPingPong1(b *testing.B) { benchmarks.WeftChanPingPong1(b) }
func BenchmarkGoChanPingPong1(b *testing.B)   { benchmarks.GoChanPingPong1(b) }

func BenchmarkWeftChanThroughput(b *testing.B) { benchmarks.WeftChanThroughput(b) }
func BenchmarkGoChanThroughput(b *testing.B)   { benchmarks.GoChanThroughput(b) }

func BenchmarkWeftMutex(b *testing.B) { benchmarks.WeftMutex(b) }
func BenchmarkSyncMutex(b *testing.B) { benchmarks.SyncMutex(b) }

func BenchmarkWeftSendWait(b *testing.B)   { benchmarks.WeftSendWait(b) }
func BenchmarkGoChanSendRecv(b *testing.B) { benchmarks.GoChanSendRecv(b) }
