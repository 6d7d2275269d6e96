package weft_test

import (
	"log/slog"
	"net"
	"regexp"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// stuckRun runs a task named "stuck" that calls block, then yields (the
// suspension point where it records the stack the report asked for),
// with a watchdog of 20 ms, beside a task that counts its turns; it
// returns the log and whether the other task ran after the stuck one let
// go.
func stuckRun(t *testing.T, block func()) (string, bool) {
	t.Helper()
	var log lockedBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	recovered := false
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		released := false
		other := weft.Local(t, func(t *weft.Task) (int, error) {
			for !released {
				if err := t.Sleep(time.Millisecond); err != nil {
					return 0, err
				}
			}
			recovered = true
			return 0, nil
		})
		stuck := weft.Local(t, func(t *weft.Task) (int, error) {
			t.SetName("stuck")
			block()
			released = true
			t.Yield()
			return 0, nil
		})
		stuck.Await(t)
		return other.Await(t)
	}, weft.WithWatchdog(20*time.Millisecond), weft.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	return log.String(), recovered
}

func checkReport(t *testing.T, log string, recovered bool, cause string) {
	t.Helper()
	if cause == blockingCause && strings.Contains(log, `cause="`+undecidedCause) {
		cause = undecidedCause
	}
	t.Logf("log:\n%s", log)
	// The report, then the follow-up with the stack the task recorded as
	// it let go.
	if n := strings.Count(log, "level=WARN"); n != 2 {
		t.Errorf("the watchdog logged %d warnings, want 2 for the one episode (the report and its stack)", n)
	}
	for _, want := range []string{"a task holds its loop", "task=stuck", "started=", "cause=\"" + cause,
		"the task that held its loop let go", "stack=", "watchdog_test.go"} {
		if !strings.Contains(log, want) {
			t.Errorf("the report has no %q", want)
		}
	}
	if !recovered {
		t.Error("the loop's other task did not run after the stuck one let go")
	}
}

const stuckFor = 300 * time.Millisecond

// blockingCause is how a report names a call that blocks the task's
// goroutine: the watchdog tells it from computing by the CPU time the
// process used meanwhile, not by the goroutine's stack (which only a dump
// of every goroutine would give, stopping the world for as long as it
// takes: seconds with 100,000 tasks).
const blockingCause = "a blocking call outside weft"

// undecidedCause is how a report begins when the process's CPU time does
// not tell (a machine so loaded that the measure blurs, or other busy
// loops): it names both causes. A blocking call may be reported so, never
// as CPU work alone.
const undecidedCause = "CPU work without Checkpoint, or a blocking call outside weft"

// The task is stuck for stuckFor from when it blocks (a release timed
// from before the Run would leave it less on a loaded machine, where the
// Run takes a while to start).
func TestWatchdogReportsAGoChannelOperation(t *testing.T) {
	ch := make(chan int)
	log, ok := stuckRun(t, func() {
		go func() { time.Sleep(stuckFor); close(ch) }()
		<-ch
	})
	checkReport(t, log, ok, blockingCause)
}

func TestWatchdogReportsASyncLock(t *testing.T) {
	var mu sync.Mutex
	mu.Lock()
	log, ok := stuckRun(t, func() {
		go func() { time.Sleep(stuckFor); mu.Unlock() }()
		mu.Lock()
		mu.Unlock()
	})
	checkReport(t, log, ok, blockingCause)
}

func TestWatchdogReportsTimeSleep(t *testing.T) {
	log, ok := stuckRun(t, func() { time.Sleep(stuckFor) })
	checkReport(t, log, ok, blockingCause)
}

func TestWatchdogReportsCPUWithoutCheckpoint(t *testing.T) {
	log, ok := stuckRun(t, func() {
		for start := time.Now(); time.Since(start) < stuckFor; {
		}
	})
	checkReport(t, log, ok, "CPU work without Checkpoint")
}

// TestWatchdogIsQuietForTasksThatGiveWay: sleeping, waiting and CPU work
// with Checkpoints are no episode.
func TestWatchdogIsQuietForTasksThatGiveWay(t *testing.T) {
	// Under the race detector, slow Checkpoints of a lone task can be tens
	// of milliseconds apart, and a loaded machine can stop the process for
	// a good part of the default limit: the limit is 1 s, and the task
	// computes for twice that, so that without its Checkpoints it would be
	// reported.
	const limit = time.Second
	var log lockedBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		p := weft.Go(t, func(t *weft.Task) (int, error) {
			for start := time.Now(); time.Since(start) < 2*limit; {
				if err := t.Checkpoint(); err != nil {
					return 0, err
				}
			}
			return 0, nil
		})
		if err := t.Sleep(limit); err != nil {
			return 0, err
		}
		return p.Await(t)
	}, weft.WithWatchdog(limit), weft.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	if s := log.String(); s != "" {
		t.Errorf("the watchdog reported tasks that gave way:\n%s", s)
	}
}

// TestWatchdogOffReportsNothing: WithWatchdog(0) turns it off.
func TestWatchdogOffReportsNothing(t *testing.T) {
	var log lockedBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		time.Sleep(100 * time.Millisecond)
		return 0, nil
	}, weft.WithWatchdog(0), weft.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	if s := log.String(); s != "" {
		t.Errorf("a watchdog that is off reported:\n%s", s)
	}
}

func TestWithWatchdogNegativePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(r.(string), "weft:") {
			t.Errorf("WithWatchdog(-1) recovered %v, want a weft: panic", r)
		}
	}()
	weft.WithWatchdog(-1)
}

// TestWatchdogReportsAShortBlockingCallEarly: a blocking call that holds
// the loop for less than the limit (a client library's network wait, say)
// is reported once it has held the loop over two samples, with the advice
// to use Blocking; the same function is reported once however often it
// does it, and computing for as long is not reported.
// The early report rests on the CPU the process used while the loop was
// held (a blocking call uses none): on a loaded machine a sample can miss
// a short read, or the episode can look undecided, so a run without the
// report is tried again, up to three times. A report of the wrong task, or
// more than one, fails at once.
func TestWatchdogReportsAShortBlockingCallEarly(t *testing.T) {
	for attempt := 1; ; attempt++ {
		s, early := shortBlockingCallRun(t)
		if early == 1 {
			for _, want := range []string{"task=querier", `cause="` + blockingCause, "weft.Blocking"} {
				if !strings.Contains(s, want) {
					t.Errorf("the report has no %q", want)
				}
			}
			return
		}
		if early > 1 || attempt == 3 {
			t.Fatalf("%d early reports, want 1: the querier's blocking read, once (attempt %d)", early, attempt)
		}
		t.Logf("attempt %d: no early report (a loaded machine); again", attempt)
	}
}

// shortBlockingCallRun runs a task that makes blocking reads of 60 ms
// each beside a task that computes for 60 ms, and returns the watchdog's
// log and its count of early reports (all of them the querier's).
func shortBlockingCallRun(t *testing.T) (string, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					time.Sleep(60 * time.Millisecond) // a slow server
					c.Write(buf)
				}
			}()
		}
	}()
	var log lockedBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	_, err = weft.Run(func(t *weft.Task) (int, error) {
		c, err := net.Dial("tcp", ln.Addr().String()) // the blocking client a library would use
		if err != nil {
			return 0, err
		}
		defer c.Close()
		query := func(t *weft.Task) (int, error) {
			t.SetName("querier")
			buf := []byte{1}
			// Several reads: on a loaded machine a sample can miss a read.
			// Each read is shorter than the limit, so only an early
			// report can name it.
			for range 6 {
				c.Write(buf)
				if _, err := c.Read(buf); err != nil { // holds the loop for 60 ms
					return 0, err
				}
				if err := t.Sleep(time.Millisecond); err != nil {
					return 0, err
				}
			}
			return 0, nil
		}
		compute := func(t *weft.Task) (int, error) {
			t.SetName("computer")
			for start := time.Now(); time.Since(start) < 60*time.Millisecond; {
			}
			return 0, nil
		}
		if _, err := weft.Go(t, compute).Await(t); err != nil {
			return 0, err
		}
		return weft.Go(t, query).Await(t)
	}, weft.WithLogger(logger)) // the default limit, 100 ms
	if err != nil {
		t.Fatal(err)
	}
	s := log.String()
	t.Logf("log:\n%s", s)
	// One early report (held less than the limit), the querier's, however
	// many reads it makes; none for the computer. On a loaded machine a
	// read can outlast the limit: that is a full episode, reported as such.
	early := 0
	for _, line := range strings.Split(s, "\n") {
		m := regexp.MustCompile(` for=(\S+) `).FindStringSubmatch(line)
		if !strings.Contains(line, "level=WARN") || m == nil {
			continue
		}
		if held, err := time.ParseDuration(m[1]); err != nil || held >= weft.DefaultWatchdog {
			continue
		}
		early++
		if !strings.Contains(line, "task=querier") {
			t.Errorf("an early report of another task than the querier: %s", line)
		}
	}
	return s, early
}

// A watchdog report costs what the one stack it shows costs, whatever the
// number of tasks, and never stops the world. (It once dumped every
// goroutine of the process, each task's among them, to find one stack:
// stopping the world for seconds with 100,000 tasks.) Counted, not timed:
// the bytes the process allocates while a task is stuck and reported,
// and the stop-the-world pauses other than the collector's meanwhile.
func TestWatchdogReportCostDoesNotGrowWithTheTasks(t *testing.T) {
	small := reportCost(t, 1000)
	large := reportCost(t, 20000)
	t.Logf("1,000 tasks: %d bytes, %d pauses; 20,000 tasks: %d bytes, %d pauses", small.bytes, small.pauses, large.bytes, large.pauses)
	if small.pauses > 0 || large.pauses > 0 {
		t.Errorf("a report stopped the world: %d times with 1,000 tasks, %d with 20,000", small.pauses, large.pauses)
	}
	if large.bytes > small.bytes+256<<10 {
		t.Errorf("a report with 20,000 tasks allocated %d bytes, with 1,000 %d: its cost grows with the tasks", large.bytes, small.bytes)
	}
}

type cost struct{ bytes, pauses uint64 }

// reportCost runs n tasks that sleep beside one that holds its loop in
// time.Sleep until the watchdog has reported it, and returns what the
// process allocated and the pauses of the world other than the
// collector's meanwhile (the task's own reads of the counters included).
func reportCost(t *testing.T, n int) cost {
	var log lockedBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	var c cost
	run(t, func(wt *weft.Task) {
		var sleepers []*weft.Promise[struct{}]
		for i := 0; i < n; i++ {
			sleepers = append(sleepers, spawn(wt, func(wt *weft.Task) { wt.Sleep(time.Hour) }))
		}
		wt.Sleep(10 * time.Millisecond) // they all sleep
		spawn(wt, func(wt *weft.Task) {
			wt.SetName("stuck")
			before := readCost()
			// Polled with Contains, which copies nothing: String would
			// copy the log (other warnings on a loaded machine, a stack
			// each) at every poll, and the copies would count as the
			// report's cost (CI once saw 567 KB that way).
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && !log.Contains("task=stuck"); {
				time.Sleep(5 * time.Millisecond)
			}
			after := readCost()
			c = cost{after.bytes - before.bytes, after.pauses - before.pauses}
			wt.Yield() // where it records its stack for the follow-up
		}).Await(wt)
		for _, p := range sleepers {
			p.Cancel()
		}
		for _, p := range sleepers {
			p.Await(wt)
		}
	}, weft.WithWatchdog(20*time.Millisecond), weft.WithLogger(logger), oneLoop)
	if !strings.Contains(log.String(), "task=stuck") {
		t.Fatalf("%d tasks: the stuck task was not reported:\n%s", n, log.String())
	}
	return c
}

// readCost reads the bytes allocated so far and the count of pauses of
// the world other than the collector's.
func readCost() cost {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/sched/pauses/total/other:seconds"}}
	metrics.Read(s)
	var c cost
	if s[0].Value.Kind() == metrics.KindUint64 {
		c.bytes = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64Histogram {
		for _, k := range s[1].Value.Float64Histogram().Counts {
			c.pauses += k
		}
	}
	return c
}
