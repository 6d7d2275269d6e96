package weft_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

// Each weft benchmark sits beside its Go-native twin; `cd bench && go run .
// core` prints them side by side with the ratios.

func BenchmarkCheckpoint(b *testing.B) { benchmarks.Checkpoint(b) }

func BenchmarkGosched(b *testing.B) { benchmarks.Gosched(b) }

// Tests of the scheduler against the real clock. Their bounds are generous
// (medians, several times the expected value) and they skip under the race
// detector, which slows everything tenfold. Those that assert a latency
// run only with WEFT_TIMING=1: a loaded machine fails them, and
// TestEveryTickIsServedWithinOneUnitBesideSeveralCPUTasks
// (sched_internal_test.go) checks the same on virtual time.

func TestTimerTaskIsResumedPromptlyBesideFourCPUTasks(t *testing.T) {
	needTiming(t)
	skipTimingUnderRace(t)
	var stop atomic.Bool
	var lags []time.Duration
	var work []int
	run(t, func(wt *weft.Task) {
		var cpu []*weft.Promise[int]
		for i := 0; i < 4; i++ {
			cpu = append(cpu, weft.Go(wt, spin(&stop)))
		}
		for i := 0; i < 200; i++ {
			want := time.Now().Add(time.Millisecond)
			wt.Sleep(time.Millisecond)
			lags = append(lags, time.Since(want))
		}
		stop.Store(true)
		work, _ = weft.All(wt, cpu...)
	}, weft.WithSwitchInterval(5*time.Millisecond))
	slices.Sort(lags)
	if median := lags[len(lags)/2]; median > time.Millisecond {
		t.Fatalf("median timer lag %v beside four CPU tasks (p90 %v)", median, lags[len(lags)*9/10])
	}
	for i, w := range work {
		if w < 10 {
			t.Fatalf("CPU task %d made no progress: %v", i, work)
		}
	}
}

func TestCPUTasksShareTheLoop(t *testing.T) {
	skipTimingUnderRace(t)
	var stop atomic.Bool
	var work []int
	run(t, func(wt *weft.Task) {
		a, b := weft.Go(wt, spin(&stop)), weft.Go(wt, spin(&stop))
		wt.Sleep(200 * time.Millisecond)
		stop.Store(true)
		work, _ = weft.All(wt, a, b)
	}, weft.WithSwitchInterval(time.Millisecond))
	total := work[0] + work[1]
	for i, w := range work {
		if w*4 < total {
			t.Fatalf("task %d got %d of %d units: not a fair share", i, w, total)
		}
	}
}

func TestBatchLaneProgressesBesideAlwaysRunnableTasks(t *testing.T) {
	skipTimingUnderRace(t)
	t.Run("default", func(t *testing.T) { batchLaneProgresses(t) })
	// More loops than cores, each kept busy by a task that never waits:
	// the CPU task's Gosched can leave its loop off a processor for a Go
	// time slice, which must not count as the task's use of the loop (it
	// was sent to the batch lane after every Gosched and starved there).
	t.Run("more-loops-than-cores", func(t *testing.T) {
		batchLaneProgresses(t, weft.WithLoops(2*runtime.GOMAXPROCS(0)))
	})
}

// A task whose results are all ready runs on without a switch for a while
// (the batching that makes pipelining fast), then lets the others run:
// after its budget of 128 ready results, or sooner once it has held the
// loop for readySlice while another task waits.
func TestBudgetMakesATaskWithReadyResultsYield(t *testing.T) {
	var seen []int
	run(t, func(wt *weft.Task) {
		ready := weft.Go(wt, func(*weft.Task) (int, error) { return 1, nil })
		other := 0
		weft.Go(wt, func(wt *weft.Task) (int, error) {
			for i := 0; i < 10; i++ {
				other++
				wt.Yield()
			}
			return 0, nil
		})
		for i := 0; i < 1000; i++ {
			ready.Await(wt) // settled: no suspension, but it spends the budget
			seen = append(seen, other)
		}
	}, oneLoop)
	longest, run := 0, 0
	for i := 1; i < len(seen); i++ {
		if seen[i] == seen[i-1] {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if longest < 16 {
		t.Fatalf("the task never took 16 ready results in a row: %v", seen[:130])
	}
	if seen[len(seen)-1] == seen[0] {
		t.Fatal("a task awaiting settled promises never let the other run")
	}
}

func TestCheckpointReturnsTheCancellation(t *testing.T) {
	run(t, func(wt *weft.Task) {
		var stop atomic.Bool
		p := weft.Go(wt, spin(&stop))
		p.Cancel()
		if _, err := p.Await(wt); !errors.Is(err, context.Canceled) {
			t.Fatalf("CPU task after Cancel = %v", err)
		}
	})
}

func TestWithSwitchIntervalRejectsNonPositive(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Millisecond} {
		if _, err := weft.Run(func(*weft.Task) (int, error) { return 0, nil }, weft.WithSwitchInterval(d)); err == nil {
			t.Errorf("WithSwitchInterval(%v) accepted", d)
		}
	}
}

// Not just the median: with two CPU-bound tasks, one of them drives the
// scheduler and picks itself again after the woken task has run; a wake it
// finds at its next Checkpoint must still make it give way. (It once did
// not, and every few hundred ticks one waited two whole intervals, 10 ms.)
// A single long wait is forgiven: a busy VM or a collection of the garbage
// of earlier tests can stall a process that long once.
func TestNoTickWaitsForIntervalsBesideTwoCPUTasks(t *testing.T) {
	needTiming(t)
	skipTimingUnderRace(t)
	// A machine shared with other busy processes can deschedule this one for
	// tens of milliseconds several times in a run; the bug this guards
	// against showed in every run (4 to 22 long waits each). So a run that
	// fails is tried again, up to three runs in all.
	var long int
	var worst, median time.Duration
	for attempt := 0; attempt < 3; attempt++ {
		long, worst, median = longTicksBesideTwoCPUTasks(t)
		if long <= 1 {
			return
		}
	}
	t.Fatalf("%d ticks waited 8 ms or more beside two CPU tasks (worst %v, median %v), in each of 3 runs", long, worst, median)
}

// spin is a CPU-bound task: n++/n-- with a Checkpoint every 1000 iterations,
// until stop is set; it returns how many thousands it did.
func spin(stop *atomic.Bool) func(*weft.Task) (int, error) {
	return func(t *weft.Task) (int, error) {
		n, units := 0, 0
		for !stop.Load() {
			for i := 0; i < 1000; i++ {
				n++
				n--
			}
			units++
			if err := t.Checkpoint(); err != nil {
				return units, err
			}
		}
		return units + n, nil
	}
}

func batchLaneProgresses(t *testing.T, opts ...weft.Option) {
	var stop atomic.Bool
	var cpuWork int
	run(t, func(wt *weft.Task) {
		var busy []*weft.Promise[int]
		for i := 0; i < 3; i++ {
			busy = append(busy, weft.Go(wt, func(wt *weft.Task) (int, error) {
				for !stop.Load() {
					wt.Yield() // interactive for ever
				}
				return 0, nil
			}))
		}
		cpu := weft.Go(wt, spin(&stop))
		deadline := time.Now().Add(200 * time.Millisecond)
		for time.Now().Before(deadline) {
			wt.Yield()
		}
		stop.Store(true)
		weft.All(wt, busy...)
		cpuWork, _ = cpu.Await(wt)
	}, append(opts, weft.WithSwitchInterval(2*time.Millisecond))...)
	if cpuWork < 20 {
		t.Fatalf("the CPU task starved beside always-runnable tasks: %d units in 200 ms", cpuWork)
	}
}

func longTicksBesideTwoCPUTasks(t *testing.T) (long int, worst, median time.Duration) {
	runtime.GC()
	var stop atomic.Bool
	var lags []time.Duration
	run(t, func(wt *weft.Task) {
		a, b := weft.Go(wt, spin(&stop)), weft.Go(wt, spin(&stop))
		ticker := weft.Go(wt, func(wt *weft.Task) (int, error) {
			for i := 0; i < 900; i++ {
				want := time.Now().Add(time.Millisecond)
				wt.Sleep(time.Millisecond)
				lags = append(lags, time.Since(want))
			}
			stop.Store(true)
			return 0, nil
		})
		weft.All(wt, a, b, ticker)
	}, weft.WithSwitchInterval(5*time.Millisecond))
	slices.Sort(lags)
	for _, l := range lags {
		if l >= 8*time.Millisecond {
			long++
		}
	}
	return long, lags[len(lags)-1], lags[len(lags)/2]
}

// The convoy bound: an I/O task woken by a readiness event runs within
// microseconds beside CPU-bound tasks (it is the one wall-clock bound that
// runs by default: a property of the scheduler, not a speed). The bound
// is a median of 1 ms over many wakes, which a loaded machine meets when
// the scheduler is right (tens of µs) and misses by ten times when it is
// wrong (a CPU task's slice, or a loop's turn at its processor, is 10 ms).
func TestIOTaskWokenByReadinessRunsWithinAMillisecondBesideFourCPUTasks(t *testing.T) {
	skipTimingUnderRace(t)
	if os.Getenv("WEFT_BACKEND") == "portable" {
		// Readiness comes through Go's netpoller there, which a
		// processor polls only when it has nothing else to run (and
		// sysmon every 10 ms): 0.1 to 2 ms at the median on one loop on
		// a loaded machine, 2 to 9 ms with more loops than processors,
		// before and after issue 27. A limit of the portable backend,
		// not of the scheduler.
		t.Skip("the portable backend's readiness waits for Go's netpoller while the processors are busy")
	}
	t.Run("one-loop", func(t *testing.T) { ioWakeLatency(t, 4, oneLoop) })
	// More loops than processors, each with CPU work: the I/O task's loop
	// must get its processor back within the bound too.
	t.Run("2xGOMAXPROCS-loops", func(t *testing.T) {
		n := 2 * runtime.GOMAXPROCS(0)
		ioWakeLatency(t, max(4, n), weft.WithLoops(n))
	})
}

// ioWakeLatency runs cpu CPU-bound tasks (which call Checkpoint) beside a
// task that echoes one 8-byte stamp at a time from a plain Go client, and
// fails if the median time from the client's write to the task's read is
// over a millisecond in each of three tries, or if the CPU tasks made no
// progress. A scheduler that is wrong misses the bound by ten times in
// every try; a right one, on a machine that other work loads (CI runs
// other packages' tests beside this one), can miss it in one try, when
// the machine took the loops' processors for a while.
func ioWakeLatency(t *testing.T, cpu int, opts ...weft.Option) {
	const tries = 3
	var median, p90 time.Duration
	for try := 1; try <= tries; try++ {
		var work []int
		median, p90, work = measureIOWake(t, cpu, opts...)
		for i, w := range work {
			if w < 10 {
				t.Fatalf("CPU task %d made no progress: %v", i, work)
			}
		}
		if median <= time.Millisecond {
			return
		}
	}
	t.Fatalf("an I/O task woken by readiness waited %v at the median beside %d CPU tasks (p90 %v), over 1 ms in each of %d tries", median, cpu, p90, tries)
}

// measureIOWake is one try of ioWakeLatency: it returns the median and the
// p90 of the wakes' lags, and what each CPU task did.
func measureIOWake(t *testing.T, cpu int, opts ...weft.Option) (median, p90 time.Duration, work []int) {
	const wakes = 300
	var stop atomic.Bool
	var lags []time.Duration
	base := time.Now()
	run(t, func(wt *weft.Task) {
		ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		clientDone := make(chan error, 1)
		go func() { clientDone <- stampClient(ln.Addr().String(), base, wakes) }()
		c, err := ln.Accept(wt)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var busy []*weft.Promise[int]
		for i := 0; i < cpu; i++ {
			busy = append(busy, weft.Go(wt, spin(&stop)))
		}
		var b [8]byte
		for i := 0; i < wakes; i++ {
			if _, err := readFull(wt, c, b[:]); err != nil {
				t.Fatal(err)
			}
			lags = append(lags, time.Since(base)-time.Duration(binary.LittleEndian.Uint64(b[:])))
			if _, err := c.Write(wt, b[:1]); err != nil {
				t.Fatal(err)
			}
		}
		stop.Store(true)
		work, _ = weft.All(wt, busy...)
		if err := <-clientDone; err != nil {
			t.Fatal(err)
		}
	}, opts...)
	slices.Sort(lags)
	median, p90 = lags[len(lags)/2], lags[len(lags)*9/10]
	t.Logf("read %v after the write at the median, p90 %v, max %v; CPU work %v", median, p90, lags[len(lags)-1], work)
	return median, p90, work
}

// stampClient sends n stamps (time since base, 8 bytes) 1 ms apart, each
// after the echo of the one before.
func stampClient(addr string, base time.Time, n int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	var b [8]byte
	for i := 0; i < n; i++ {
		time.Sleep(time.Millisecond)
		binary.LittleEndian.PutUint64(b[:], uint64(time.Since(base)))
		if _, err := c.Write(b[:]); err != nil {
			return err
		}
		if _, err := c.Read(b[:1]); err != nil {
			return err
		}
	}
	return nil
}

// readFull reads len(b) bytes from c.
func readFull(t *weft.Task, c *weft.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(t, b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
