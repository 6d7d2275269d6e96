package weft_test

import (
	"bytes"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// TestDumpShowsEachTaskNameStateAndSite dumps from inside a task: every
// other task waits on something different, and the dump says what, where.
func TestDumpShowsEachTaskNameStateAndSite(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1")
	var dump string
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		t.SetName("boss")
		ch := weft.NewChan[int](0)
		sleeper := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("sleeper")
			return 0, t.Sleep(time.Hour)
		})
		awaiter := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("awaiter")
			return sleeper.Await(t)
		})
		receiver := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("receiver")
			return ch.Recv(t)
		})
		yielder := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("yielder")
			return 0, t.Yield()
		})
		var b bytes.Buffer
		weft.Dump(&b)
		dump = b.String()
		sleeper.Cancel()
		receiver.Cancel()
		awaiter.Await(t)
		receiver.Await(t)
		yielder.Await(t)
		return 0, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dump:\n%s", dump)
	for _, want := range []string{
		`weft run \d+: 1 loop, 5 tasks`,
		`(?m)^loop 0: 5 tasks$`,
		`(?m)^  task 1 "boss" \(weft_test\.TestDumpShowsEachTaskNameStateAndSite\.func1\): running; started at Run$`,
		`(?m)^    task 2 "sleeper" \(.*\) parent 1: waiting on timer \(Sleep, due in 1h0m0s, at 01:00:00\.000\) for 0s at .*dump_test\.go:\d+; started at .*dump_test\.go:\d+$`,
		`(?m)^    task 3 "awaiter" .* parent 1: waiting on promise \(Await\) for 0s at .*dump_test\.go:\d+; started at .*dump_test\.go:\d+$`,
		`(?m)^    task 4 "receiver" .* parent 1: waiting on channel \(Chan\.Recv\) for 0s at .*dump_test\.go:\d+;`,
		`(?m)^    task 5 "yielder" .* parent 1: runnable for 0s; started at .*dump_test\.go:\d+$`,
	} {
		if !regexp.MustCompile(want).MatchString(dump) {
			t.Errorf("the dump has no line matching %s", want)
		}
	}
}

// TestDumpFromAnotherGoroutineWhileTasksWait dumps a Run from a plain
// goroutine while its tasks wait, on every loop.
func TestDumpFromAnotherGoroutineWhileTasksWait(tt *testing.T) {
	ready := make(chan struct{})
	dumped := make(chan string)
	go func() {
		<-ready
		start := time.Now()
		// The tasks reach their Recv soon after ready; look until they have.
		for {
			var b bytes.Buffer
			weft.Dump(&b)
			if strings.Count(b.String(), "waiting on channel (Chan.Recv)") == 4 && strings.Contains(b.String(), "Offload") || time.Since(start) > 5*time.Second {
				dumped <- b.String()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		ch := weft.NewChan[int](0)
		var ps []*weft.Promise[int]
		for range 4 {
			ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) {
				t.SetName("blocked-recv")
				return ch.Recv(t)
			}))
		}
		close(ready)
		var s string
		if _, err := weft.Offload(t, func() (int, error) {
			s = <-dumped
			return 0, nil
		}); err != nil {
			return 0, err
		}
		ch.Close()
		for _, p := range ps {
			p.Await(t)
		}
		if n := strings.Count(s, `"blocked-recv"`); n != 4 {
			tt.Errorf("the dump names %d of the 4 blocked tasks:\n%s", n, s)
		}
		if !strings.Contains(s, "waiting on off-loop work (Offload)") {
			tt.Errorf("the dump does not show main waiting on its Offload:\n%s", s)
		}
		return 0, nil
	})
	if err != nil {
		tt.Fatal(err)
	}
}

// TestDumpWithNoRunWritesNothing: no Run, no output.
func TestDumpWithNoRunWritesNothing(t *testing.T) {
	var b bytes.Buffer
	weft.Dump(&b)
	if b.Len() != 0 {
		t.Fatalf("Dump with no Run running wrote %q", b.String())
	}
}

// TestDumpOfTenThousandTasksDoesNotHoldTheLoop dumps 10k sleeping tasks
// while a task keeps yielding: the loop goes on during each dump.
func TestDumpOfTenThousandTasksDoesNotHoldTheLoop(tt *testing.T) {
	tt.Setenv("WEFT_LOOPS", "1")
	const n = 10000
	var took []time.Duration
	var maxGap time.Duration
	yields := 0
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		var ps []*weft.Promise[int]
		for range n {
			ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) { return 0, t.Sleep(time.Hour) }))
		}
		stop := make(chan struct{})
		go func() {
			defer close(stop)
			for range 5 {
				var b bytes.Buffer
				start := time.Now()
				weft.Dump(&b)
				took = append(took, time.Since(start))
				if c := strings.Count(b.String(), "waiting on timer"); c != n {
					tt.Errorf("the dump shows %d sleeping tasks, want %d", c, n)
				}
			}
		}()
		last := time.Now()
		for done := false; !done; {
			select {
			case <-stop:
				done = true
			default:
			}
			t.Yield()
			yields++
			now := time.Now()
			maxGap = max(maxGap, now.Sub(last))
			last = now
		}
		for _, p := range ps {
			p.Cancel()
		}
		return 0, nil
	})
	if err != nil {
		tt.Fatal(err)
	}
	tt.Logf("Dump of %d tasks took %v; meanwhile the loop yielded %d times and stood still at most %v", n, took, yields, maxGap)
	// The loop went on while Dump ran (the pauses under a loaded race
	// detector are the garbage collector's, not Dump's).
	if yields < 100 {
		tt.Errorf("the loop yielded only %d times during five dumps", yields)
	}
}

func TestDumpWithANilWriterPanics(t *testing.T) {
	defer func() {
		if r, _ := recover().(string); !strings.HasPrefix(r, "weft:") {
			t.Errorf("Dump(nil) recovered %q, want a weft: panic", r)
		}
	}()
	weft.Dump(nil)
}

// TestDumpSaysHowLongARunningTaskHasHeldItsLoop dumps, from a plain
// goroutine, a Run whose task spins without suspending: with the watchdog
// on, the dump says for at least how long.
func TestDumpSaysHowLongARunningTaskHasHeldItsLoop(tt *testing.T) {
	tt.Setenv("WEFT_LOOPS", "1")
	var done atomic.Bool
	dumped := make(chan string, 1)
	go func() {
		start := time.Now()
		for {
			var b bytes.Buffer
			weft.Dump(&b)
			if regexp.MustCompile(`"spinner" .*: running for at least [0-9.]+m?s;`).MatchString(b.String()) || time.Since(start) > 10*time.Second {
				dumped <- b.String()
				done.Store(true)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		t.SetName("spinner")
		for start := time.Now(); !done.Load() && time.Since(start) < 15*time.Second; {
			// Spin without a suspension point: the loop is held.
		}
		return 0, nil
	}, weft.WithWatchdog(20*time.Millisecond), weft.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		tt.Fatal(err)
	}
	d := <-dumped
	if !regexp.MustCompile(`(?m)^  task 1 "spinner" \(.*\): running for at least [0-9.]+m?s; started at Run$`).MatchString(d) {
		tt.Errorf("the dump does not say how long the spinner has run:\n%s", d)
	}
}

// TestDumpDurationsOnTheRealClock: a wait's duration in a dump is real
// time since it began, not since some earlier reading of the clock (the
// loop slept 300 ms just before the wait began).
func TestDumpDurationsOnTheRealClock(tt *testing.T) {
	tt.Setenv("WEFT_LOOPS", "1")
	var dump string
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		if err := t.Sleep(300 * time.Millisecond); err != nil {
			return 0, err
		}
		ch := weft.NewChan[int](0)
		p := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("fresh")
			return ch.Recv(t)
		})
		var b bytes.Buffer
		weft.Dump(&b)
		dump = b.String()
		ch.Close()
		p.Await(t)
		return 0, nil
	})
	if err != nil {
		tt.Fatal(err)
	}
	m := regexp.MustCompile(`"fresh" .*: waiting on channel \(Chan\.Recv\) for (\S+) at`).FindStringSubmatch(dump)
	if m == nil {
		tt.Fatalf("no line for the fresh wait:\n%s", dump)
	}
	d, err := time.ParseDuration(m[1])
	if err != nil || d < 0 || d > 200*time.Millisecond {
		tt.Fatalf("a wait that just began shows %q (the loop slept 300 ms before it):\n%s", m[1], dump)
	}
}

// TestDumpSaysHowLongAWokenTaskHasBeenRunnable: a task woken from its wait
// while the loop is held shows for how long it has been runnable.
func TestDumpSaysHowLongAWokenTaskHasBeenRunnable(tt *testing.T) {
	tt.Setenv("WEFT_LOOPS", "1")
	var dump string
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		ch := weft.NewChan[int](1)
		p := weft.Go(t, func(t *weft.Task) (int, error) {
			t.SetName("woken")
			return ch.Recv(t)
		})
		if err := t.Yield(); err != nil { // let it reach its Recv
			return 0, err
		}
		if err := ch.Send(t, 1); err != nil { // it is runnable now; main goes on
			return 0, err
		}
		for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
			// Hold the loop, so that the woken task stays queued.
		}
		var b bytes.Buffer
		weft.Dump(&b)
		dump = b.String()
		return p.Await(t)
	})
	if err != nil {
		tt.Fatal(err)
	}
	m := regexp.MustCompile(`"woken" .*: runnable for (\S+); started at`).FindStringSubmatch(dump)
	if m == nil {
		tt.Fatalf("the woken task shows no runnable duration:\n%s", dump)
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d < 40*time.Millisecond || d > 10*time.Second {
		tt.Fatalf("the woken task has been runnable for about 50 ms, the dump says %q:\n%s", m[1], dump)
	}
}
