// Package benchmarks holds weft's benchmarks, each beside its Go-native
// twin, so that `go test -bench` (see bench_test.go at the module root) and
// the bench module's core and sync tables (`cd bench && go run . core`)
// run the same code. It stays in this module because the root's
// benchmark functions use it; the bench module imports it.
package benchmarks

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// Pair is a weft benchmark and its Go-native twin.
type Pair struct {
	Name     string
	Weft, Go func(b *testing.B)
	WeftDoc  string
	GoDoc    string
	Goal     string // the bound the issue sets, for the report
}

// Core lists the core runtime's timing benchmarks.
var Core = []Pair{
	{"spawn+await", SpawnAwait, GoroutineSpawnJoin, "Go + Await of a trivial task", "go statement + channel receive", "<= 0.5x"},
	{"yield ping-pong", YieldPingPong, ChannelPingPong, "two tasks yield to each other, per round trip", "two goroutines, unbuffered channels, per round trip", "<= 0.35x"},
	{"empty Run", EmptyRun, GoroutineSpawnJoin, "weft.Run of a main that returns at once, default options", "go statement + channel receive", "< 15 us"},
	{"spawn+cancel+await", Cancel, ContextCancel, "Go a sleeping task, Cancel it, Await it", "goroutine blocked on ctx.Done(), CancelFunc, wait", "report"},
	{"checkpoint (no switch due)", Checkpoint, Gosched, "Task.Checkpoint when no switch is due", "runtime.Gosched", "<= 20 ns, goal 5 ns"},
	{"group spawn", GroupGo, WaitGroupGo, "TaskGroup.Go of a trivial task, all joined by Group", "sync.WaitGroup.Go of a trivial goroutine, all waited for", "report"},
	{"offload", OffloadRoundTrip, WorkerHandoff, "Offload of a trivial function, per round trip", "hand a trivial job to a worker goroutine and wait for it", "report"},
	{"blocking call (returns at once)", BlockingCall, GoroutineCall, "weft.Blocking of a function that returns at once", "go f(); <-done", "<= 1.5x"},
}

// SpawnAwait spawns a trivial task and awaits it, b.N times.
func SpawnAwait(b *testing.B) { SpawnAwaitWith(b) }

// SpawnAwaitWith is SpawnAwait in a Run with opts (a seed, tracing...).
func SpawnAwaitWith(b *testing.B, opts ...weft.Option) {
	weft.Run(func(t *weft.Task) (int, error) {
		f := func(*weft.Task) (int, error) { return 1, nil }
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			weft.Go(t, f).Await(t)
		}
		return 0, nil
	}, opts...)
}

// EmptyRun runs a main task that returns at once, b.N times, with the
// default options: the fixed cost of a Run (its loop, poller and clock).
func EmptyRun(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		weft.Run(func(*weft.Task) (int, error) { return 1, nil })
	}
}

// GoroutineSpawnJoin starts a goroutine and waits for its result on a
// channel, b.N times.
func GoroutineSpawnJoin(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ch := make(chan int, 1)
		go func() { ch <- 1 }()
		<-ch
	}
}

// YieldPingPong has two tasks yield to each other b.N times: each round trip
// is two task switches.
func YieldPingPong(b *testing.B) { YieldPingPongWith(b) }

// YieldPingPongWith is YieldPingPong in a Run with opts.
func YieldPingPongWith(b *testing.B, opts ...weft.Option) {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		player := func(t *weft.Task) (struct{}, error) {
			for i := 0; i < b.N; i++ {
				t.Yield()
			}
			return struct{}{}, nil
		}
		b.ResetTimer()
		x, y := weft.Go(t, player), weft.Go(t, player)
		weft.All(t, x, y)
		return struct{}{}, nil
	}, opts...)
}

// ChannelPingPong passes a value between two goroutines over unbuffered
// channels b.N times and back.
func ChannelPingPong(b *testing.B) {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
		close(pong)
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ping <- i
		<-pong
	}
	close(ping)
	<-pong
}

// MemTasks is how many suspended tasks (or goroutines) the memory
// measurements hold at once.
const MemTasks = 100_000

func heapAndStacks() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// SleepingTaskBytes returns the heap and stack memory per task while
// MemTasks tasks are suspended in Sleep. Measure it in a fresh process:
// the runtime reuses the records of goroutines that have ended, so a second
// measurement in the same process reads low.
func SleepingTaskBytes() float64 {
	var perTask float64
	before := heapAndStacks()
	weft.Run(func(t *weft.Task) (struct{}, error) {
		for j := 0; j < MemTasks; j++ {
			weft.Go(t, func(t *weft.Task) (struct{}, error) {
				return struct{}{}, t.Sleep(time.Second)
			})
		}
		perTask = float64(heapAndStacks()-before) / MemTasks
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)),
		weft.WithWatchdog(0)) // main holds the loop in runtime.GC on purpose
	return perTask
}

// ParkedGoroutineBytes returns the heap and stack memory per goroutine
// while MemTasks goroutines are blocked on a channel receive. Like
// SleepingTaskBytes, measure it in a fresh process.
func ParkedGoroutineBytes() float64 {
	before := heapAndStacks()
	release := make(chan struct{})
	done := make(chan struct{}, MemTasks)
	for j := 0; j < MemTasks; j++ {
		go func() { <-release; done <- struct{}{} }()
	}
	perG := float64(heapAndStacks()-before) / MemTasks
	close(release)
	for j := 0; j < MemTasks; j++ {
		<-done
	}
	return perG
}

// memoryBenchmark reports the first measurement only: later ones in the
// same process read low (see SleepingTaskBytes). Run with -benchtime=1x.
func memoryBenchmark(b *testing.B, measure func() float64) {
	first := measure()
	for i := 1; i < b.N; i++ {
		measure()
	}
	b.ReportMetric(first, "B/task")
}

// SleepingTaskMemory is SleepingTaskBytes as a benchmark.
func SleepingTaskMemory(b *testing.B) { memoryBenchmark(b, SleepingTaskBytes) }

// ParkedGoroutineMemory is ParkedGoroutineBytes as a benchmark.
func ParkedGoroutineMemory(b *testing.B) { memoryBenchmark(b, ParkedGoroutineBytes) }

// ManySleepsLate runs MemTasks tasks sleeping 0 to 50 ms and returns how
// long after the longest sleep (50 ms) the run ended.
func ManySleepsLate() time.Duration {
	start := time.Now()
	weft.Run(func(t *weft.Task) (struct{}, error) {
		for j := 0; j < MemTasks; j++ {
			d := time.Duration(j%51) * time.Millisecond
			weft.Go(t, func(t *weft.Task) (struct{}, error) { return struct{}{}, t.Sleep(d) })
		}
		return struct{}{}, nil
	})
	return time.Since(start) - 50*time.Millisecond
}

// ManySleeps is ManySleepsLate as a benchmark, reporting the worst run.
func ManySleeps(b *testing.B) {
	var late time.Duration
	for i := 0; i < b.N; i++ {
		late = max(late, ManySleepsLate())
	}
	b.ReportMetric(float64(late.Milliseconds()), "ms-after-longest")
}

// Cancel spawns a sleeping task, cancels it and awaits it, b.N times.
func Cancel(b *testing.B) {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		sleeper := func(t *weft.Task) (int, error) { return 0, t.Sleep(time.Hour) }
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p := weft.Go(t, sleeper)
			p.Cancel()
			p.Await(t)
		}
		return struct{}{}, nil
	})
}

// ContextCancel starts a goroutine blocked on ctx.Done(), cancels it
// through its context.CancelFunc and waits for it to end, b.N times.
func ContextCancel(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { <-ctx.Done(); close(done) }()
		cancel()
		<-done
	}
}

// Checkpoint calls Task.Checkpoint b.N times in a task alone on its loop:
// the fast path, when no switch is due.
func Checkpoint(b *testing.B) {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t.Checkpoint()
		}
		return struct{}{}, nil
	})
}

// Gosched calls runtime.Gosched b.N times: Go's way for a goroutine to
// offer its processor.
func Gosched(b *testing.B) {
	for i := 0; i < b.N; i++ {
		runtime.Gosched()
	}
}

// GroupGo starts b.N trivial tasks with TaskGroup.Go in one Group and
// waits for them (Group returns).
func GroupGo(b *testing.B) {
	weft.Run(func(t *weft.Task) (int, error) {
		f := func(*weft.Task) error { return nil }
		b.ReportAllocs()
		b.ResetTimer()
		weft.Group(t, func(g *weft.TaskGroup) error {
			for i := 0; i < b.N; i++ {
				g.Go(f)
			}
			return nil
		})
		return 0, nil
	})
}

// WaitGroupGo starts b.N trivial goroutines with sync.WaitGroup.Go and
// waits for them.
func WaitGroupGo(b *testing.B) {
	b.ReportAllocs()
	var wg sync.WaitGroup
	for i := 0; i < b.N; i++ {
		wg.Go(func() {})
	}
	wg.Wait()
}

// OffloadRoundTrip offloads a trivial function and waits for it, b.N
// times.
func OffloadRoundTrip(b *testing.B) {
	weft.Run(func(t *weft.Task) (int, error) {
		f := func() (int, error) { return 1, nil }
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			weft.Offload(t, f)
		}
		return 0, nil
	}, weft.WithOffloadWorkers(1))
}

// WorkerHandoff hands a trivial job to a worker goroutine through a
// channel and waits for its answer on another, b.N times.
func WorkerHandoff(b *testing.B) {
	b.ReportAllocs()
	jobs, done := make(chan func() int), make(chan int)
	go func() {
		for f := range jobs {
			done <- f()
		}
	}()
	f := func() int { return 1 }
	for i := 0; i < b.N; i++ {
		jobs <- f
		<-done
	}
	close(jobs)
}
