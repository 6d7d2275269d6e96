package weft_test

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

func TestTaskUsedAfterItsTaskFinishedPanics(t *testing.T) {
	var saved *weft.Task
	run(t, func(wt *weft.Task) {
		p := weft.Go(wt, func(wt *weft.Task) (int, error) { saved = wt; return 0, nil })
		p.Await(wt)
		msg := panicMessage(func() { saved.Yield() })
		if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "finished") {
			t.Errorf("use after finish: %q", msg)
		}
	})
	msg := panicMessage(func() { saved.Sleep(time.Millisecond) })
	if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "Sleep") {
		t.Errorf("use after Run: %q", msg)
	}
}

func TestTaskUsedByAnotherTaskPanics(t *testing.T) {
	run(t, func(parent *weft.Task) {
		p := weft.Go(parent, func(child *weft.Task) (string, error) {
			return panicMessage(func() { parent.Yield() }), nil
		})
		msg, _ := p.Await(parent)
		if !strings.HasPrefix(msg, "weft: ") || !strings.Contains(msg, "another task or goroutine") {
			t.Errorf("use from another task: %q", msg)
		}
	})
}

func TestTaskUsedFromAnotherGoroutinePanics(t *testing.T) {
	run(t, func(wt *weft.Task) {
		// While the task waits on the loop...
		got := make(chan string, 1)
		p, settle := weft.NewPromise[int]()
		go func() {
			got <- panicMessage(func() { wt.Yield() })
			settle(0, nil)
		}()
		spawn(wt, func(wt *weft.Task) { wt.Sleep(200 * time.Millisecond) }) // keep the loop alive
		p.Await(wt)
		if msg := <-got; !strings.HasPrefix(msg, "weft: ") {
			t.Errorf("use from a goroutine while the task waits: %q", msg)
		}
		// ... and while it runs (here: blocked on a channel, not on weft).
		go func() { got <- panicMessage(func() { weft.Go(wt, func(*weft.Task) (int, error) { return 0, nil }) }) }()
		if msg := <-got; !strings.HasPrefix(msg, "weft: ") && !skipGoroutineCheck() {
			t.Errorf("use from a goroutine while the task runs: %q", msg)
		}
	})
}

// Each weft benchmark sits beside its Go-native twin; `cd bench && go run .
// core` prints them side by side with the ratios.

func BenchmarkSpawnAwait(b *testing.B) { benchmarks.SpawnAwait(b) }

func BenchmarkGoroutineSpawnJoin(b *testing.B) { benchmarks.GoroutineSpawnJoin(b) }

func BenchmarkYieldPingPong(b *testing.B) { benchmarks.YieldPingPong(b) }

func BenchmarkChannelPingPong(b *testing.B) { benchmarks.ChannelPingPong(b) }

func BenchmarkSleepingTaskMemory(b *testing.B) { benchmarks.SleepingTaskMemory(b) }

func BenchmarkParkedGoroutineMemory(b *testing.B) { benchmarks.ParkedGoroutineMemory(b) }

func TestGoexitInATaskEndsRunsGoroutineWithoutLeaks(t *testing.T) {
	// t.FailNow inside a task calls runtime.Goexit. It cannot be stopped;
	// Run must unwind the other tasks on the way out and leave nothing.
	done := make(chan []string)
	go func() {
		var log []string
		defer func() { done <- log }()
		weft.Run(func(wt *weft.Task) (int, error) {
			never, _ := weft.NewPromise[int]()
			spawn(wt, func(wt *weft.Task) {
				defer func() { log = append(log, "waiter unwound") }()
				never.Await(wt)
			})
			spawn(wt, func(wt *weft.Task) {
				defer func() { log = append(log, "sleeper unwound") }()
				wt.Sleep(time.Hour)
			})
			weft.Go(wt, func(wt *weft.Task) (int, error) { runtime.Goexit(); return 0, nil })
			log = append(log, "Run went on after Goexit")
			return 0, nil
		})
		log = append(log, "Run returned")
	}()
	log := <-done
	if strings.Join(log, ",") != "waiter unwound,sleeper unwound" && strings.Join(log, ",") != "sleeper unwound,waiter unwound" {
		t.Fatalf("log = %v", log)
	}
}

func TestGoRunsTheChildFirst(t *testing.T) {
	var log []string
	run(t, func(wt *weft.Task) {
		log = append(log, "parent before")
		spawn(wt, func(*weft.Task) { log = append(log, "child") })
		log = append(log, "parent after")
	})
	if got := strings.Join(log, ","); got != "parent before,child,parent after" {
		t.Fatalf("order = %s", got)
	}
}

func TestSleepZeroOrNegativeYields(t *testing.T) {
	t.Setenv("WEFT_LOOPS", "1") // it checks one loop's order
	for _, d := range []time.Duration{0, -time.Second} {
		var log []string
		run(t, func(wt *weft.Task) {
			spawn(wt, func(wt *weft.Task) {
				wt.Yield()
				log = append(log, "other")
			})
			wt.Sleep(d)
			log = append(log, "sleeper")
		})
		if strings.Join(log, ",") != "other,sleeper" {
			t.Fatalf("Sleep(%v) did not yield: %v", d, log)
		}
	}
}

func TestSleepLastsAtLeastItsDuration(t *testing.T) {
	run(t, func(wt *weft.Task) {
		start := time.Now()
		wt.Sleep(20 * time.Millisecond)
		if el := time.Since(start); el < 20*time.Millisecond {
			t.Errorf("Sleep(20ms) took %v", el)
		}
	})
}

func TestNowReadsTheLoopClock(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	run(t, func(wt *weft.Task) {
		if !wt.Now().Equal(start) {
			t.Errorf("virtual Now = %v", wt.Now())
		}
		wt.Sleep(90 * time.Minute)
		if got := wt.Now().Sub(start); got != 90*time.Minute {
			t.Errorf("after Sleep(90m) virtual time moved %v", got)
		}
	}, weft.WithVirtualTime(start))
	run(t, func(wt *weft.Task) {
		if d := time.Since(wt.Now()); d < -time.Second || d > time.Second {
			t.Errorf("real Now is %v off", d)
		}
	})
}

func TestHundredThousandTasks(t *testing.T) {
	const n = 100_000
	sum := int64(0)
	run(t, func(wt *weft.Task) {
		ps := make([]*weft.Promise[int], n)
		for i := range ps {
			ps[i] = weft.Go(wt, func(wt *weft.Task) (int, error) {
				wt.Sleep(time.Duration(i%50) * time.Millisecond)
				return i, nil
			})
		}
		vals, err := weft.All(wt, ps...)
		if err != nil {
			t.Error(err)
		}
		for _, v := range vals {
			sum += int64(v)
		}
	})
	if sum != int64(n)*(n-1)/2 {
		t.Fatalf("sum = %d", sum)
	}
}

// Reports (Dump, deadlock reports, failure reports, seeded decisions and
// weftest's failure output) name the user's code: the function the user
// gave to TaskGroup.Go, GoDaemon, GoIn, Start, First or Generate rather
// than weft's wrapper, the name the task set with SetName, the operation
// that started it and the one it waits in (Group, First, TaskGroup.Start)
// with the user's line. The tasks' functions are at package level so that
// their names are known; each waits on c until it is closed (io.EOF is
// then no failure).

func TestDeadlockReportNamesTheUsersFunctionNameAndOperation(t *testing.T) {
	for _, loops := range []int{1, 2} {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			return struct{}{}, groupOfEveryKind(wt, weft.NewChan[int](0), nil)
		}, weft.WithLoops(loops))
		var d *weft.DeadlockError
		if !errors.As(err, &d) {
			t.Fatalf("%d loops: Run = %v", loops, err)
		}
		byName := map[string]weft.BlockedTask{}
		for _, b := range d.Blocked {
			if b.TaskName != "" {
				byName[b.TaskName] = b
			} else {
				byName[b.Name] = b // main, and the GoIn task
			}
		}
		check := func(name, fn, startedBy, startMarker, op, waitMarker string) {
			t.Helper()
			b, ok := byName[name]
			if !ok {
				t.Errorf("%d loops: no blocked task named %q in %v", loops, name, d.Blocked)
				return
			}
			if b.Func != "github.com/weft-go/weft_test."+fn || b.StartedBy != startedBy || (startMarker != "" && b.Started != siteOf(t, startMarker)) || b.Op != op || (waitMarker != "" && b.Waiting != siteOf(t, waitMarker)) {
				t.Errorf("%d loops: task %q: %+v", loops, name, b)
			}
		}
		check("main", "TestDeadlockReportNamesTheUsersFunctionNameAndOperation.func1", "Run", "", "Group", "groupCall")
		check("worker", "groupOfEveryKind.func1.1", "TaskGroup.Go", "goCall", "Chan.Recv", "workerWait")
		check("daemon", "groupOfEveryKind.func1.2", "TaskGroup.GoDaemon", "daemonCall", "Chan.Recv", "")
		check("server", "groupOfEveryKind.func1.4", "TaskGroup.Start", "startCall", "Chan.Recv", "")
		check("chooser", "groupOfEveryKind.func1.5", "TaskGroup.Go", "", "First", "firstCall")
		check("racer", "groupOfEveryKind.func1.5.1", "First", "firstCall", "Chan.Recv", "")
		msg := err.Error()
		wantUsersCode(t, msg, []string{
			`\n\tmain github\.com/weft-go/weft_test\.TestDeadlockReportNamesTheUsersFunctionNameAndOperation\.func1, started at Run, waiting in Group at ` + regexp.QuoteMeta(siteOf(t, "groupCall")),
			`\n\ttask \d+ "worker" github\.com/weft-go/weft_test\.groupOfEveryKind\.func1\.1, started by TaskGroup\.Go at ` + regexp.QuoteMeta(siteOf(t, "goCall")) + `, waiting in Chan\.Recv at ` + regexp.QuoteMeta(siteOf(t, "workerWait")),
		})
	}
}

func TestDumpNamesTheUsersFunctionNameAndOperation(t *testing.T) {
	site := func(marker string) string { return regexp.QuoteMeta(siteOf(t, marker)) }
	want := []string{
		`task \d+ "main" \(weft_test\.TestDumpNamesTheUsersFunctionNameAndOperation\.func\d+\): waiting on its group's tasks \(Group\) for \S+ at ` + site("groupCall") + `; started at Run`,
		`task \d+ "worker" \(weft_test\.groupOfEveryKind\.func1\.1\) parent 1: waiting on channel \(Chan\.Recv\) for \S+ at ` + site("workerWait") + `; started by TaskGroup\.Go at ` + site("goCall"),
		`task \d+ "daemon" \(weft_test\.groupOfEveryKind\.func1\.2\) parent 1: waiting .*; started by TaskGroup\.GoDaemon at ` + site("daemonCall"),
		`task \d+ \(weft_test\.groupOfEveryKind\.func1\.3\) parent 1: waiting .*; started by GoIn at ` + site("goInCall"),
		`task \d+ "server" \(weft_test\.groupOfEveryKind\.func1\.4\) parent 1: waiting .*; started by TaskGroup\.Start at ` + site("startCall"),
		`task \d+ "chooser" .*: waiting on its children \(First\) for \S+ at ` + site("firstCall"),
		`task \d+ "racer" \(weft_test\.groupOfEveryKind\.func1\.5\.1\) parent \d+: waiting .*; started by First at ` + site("firstCall"),
		`task \d+ "producer" \(weft_test\.reportProducer\) parent 1: waiting .*; started by Generate at ` + site("generateCall"),
	}
	matches := func(dump string, loops int) bool {
		for _, re := range want {
			if !regexp.MustCompile(re).MatchString(dump) {
				return false
			}
		}
		return loops == 1 || regexp.MustCompile(`(?m)^loop 1: [1-9]`).MatchString(dump)
	}
	for _, loops := range []int{1, 2} {
		var dump string
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			c := weft.NewChan[int](0)
			return struct{}{}, groupOfEveryKind(wt, c, func(it *weft.Task) {
				// Until every task waits (and, on two loops, some were handed
				// to loop 1 while they warmed up).
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
					var b bytes.Buffer
					weft.Dump(&b)
					if dump = b.String(); matches(dump, loops) {
						break
					}
					it.Sleep(time.Millisecond)
				}
				c.Close()
			})
		}, weft.WithLoops(loops))
		if err != nil {
			t.Fatal(err)
		}
		wantUsersCode(t, dump, want)
		if loops > 1 && !matches(dump, loops) {
			t.Errorf("%d loops: no task on loop 1", loops)
		}
		if t.Failed() {
			t.Logf("%d loops, the dump:\n%s", loops, dump)
			return
		}
	}
}

// reportWarm keeps the task busy for a while, so that a Run of several
// loops hands some of them to another loop.
func reportWarm(wt *weft.Task) {
	for range 10 {
		spinFor(20 * time.Microsecond)
		wt.Checkpoint()
		wt.Yield()
	}
}

func reportWorker(wt *weft.Task, c *weft.Chan[int]) error {
	wt.SetName("worker")
	reportWarm(wt)
	_, err := c.Recv(wt) // workerWait
	return eofOK(err)
}

func reportDaemon(wt *weft.Task, c *weft.Chan[int]) error {
	wt.SetName("daemon")
	reportWarm(wt)
	_, err := c.Recv(wt)
	return eofOK(err)
}

func reportGoIn(wt *weft.Task, c *weft.Chan[int]) (int, error) {
	reportWarm(wt)
	v, err := c.Recv(wt)
	return v, eofOK(err)
}

func reportStarted(wt *weft.Task, ready func(), c *weft.Chan[int]) error {
	wt.SetName("server")
	reportWarm(wt)
	ready()
	_, err := c.Recv(wt)
	return eofOK(err)
}

func reportFirstChild(wt *weft.Task, c *weft.Chan[int], name string) (int, error) {
	wt.SetName(name)
	reportWarm(wt)
	v, err := c.Recv(wt)
	return v, eofOK(err)
}

func eofOK(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}

func reportProducer(wt *weft.Task, yield func(int) error) error {
	wt.SetName("producer")
	for i := 0; ; i++ {
		if err := yield(i); err != nil {
			return err
		}
	}
}

// groupOfEveryKind starts, in a Group, a task of every kind that wraps the
// user's function, each waiting on c, and calls inside(wt) once they all
// wait. The Group's line is marked groupCall. (Not inlined: its closures'
// names would then start with its caller's.)
//
//go:noinline
func groupOfEveryKind(wt *weft.Task, c *weft.Chan[int], inside func(wt *weft.Task)) error {
	return weft.Group(wt, func(g *weft.TaskGroup) error { // groupCall
		g.Go(func(wt *weft.Task) error { return reportWorker(wt, c) })                                                  // goCall
		g.GoDaemon(func(wt *weft.Task) error { return reportDaemon(wt, c) })                                            // daemonCall
		weft.GoIn(g, func(wt *weft.Task) (int, error) { return reportGoIn(wt, c) })                                     // goInCall
		if err := g.Start(func(wt *weft.Task, ready func()) error { return reportStarted(wt, ready, c) }); err != nil { // startCall
			return err
		}
		g.Go(func(wt *weft.Task) error {
			wt.SetName("chooser")
			_, err := weft.First(wt, // firstCall
				func(wt *weft.Task) (int, error) { return reportFirstChild(wt, c, "racer") },
				func(wt *weft.Task) (int, error) { return reportFirstChild(wt, c, "racer-2") })
			return err
		})
		producer := weft.Generate(wt, 0, reportProducer) // generateCall
		g.Go(func(wt *weft.Task) error {
			wt.SetName("consumer")
			for range producer.All(wt) {
				if _, err := c.Recv(wt); err != nil {
					return eofOK(err)
				}
			}
			return nil
		})
		if inside != nil {
			g.Go(func(wt *weft.Task) error {
				wt.Yield() // the others have all started and wait
				inside(wt)
				return nil
			})
		}
		return nil
	})
}

// wantUsersCode checks a report for every task groupOfEveryKind starts.
func wantUsersCode(t *testing.T, report string, lines []string) {
	t.Helper()
	if strings.Contains(report, "startIn") || strings.Contains(report, "weft.Generate") || strings.Contains(report, "weft.(*TaskGroup)") {
		t.Errorf("the report names weft's wrappers:\n%s", report)
	}
	for _, re := range lines {
		if !regexp.MustCompile(re).MatchString(report) {
			t.Errorf("the report has no line matching %s:\n%s", re, report)
		}
	}
}
