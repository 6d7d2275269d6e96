package weft_test

// Reports (Dump, deadlock reports, failure reports, seeded decisions and
// weftest's failure output) name the user's code: the function the user
// gave to TaskGroup.Go, GoDaemon, GoIn, Start, First or Generate rather
// than weft's wrapper, the name the task set with SetName, the operation
// that started it and the one it waits in (Group, First, TaskGroup.Start)
// with the user's line.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/weftest"
)

// The tasks' functions, at package level so that their names are known.

// Each waits on c until it is closed (io.EOF is then no failure).

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

// TestDeadlockReportNamesStartAndTheGroupLimit: a task blocked in
// TaskGroup.Start (its function never calls ready) and one blocked in
// TaskGroup.Go under SetLimit are reported as such, at their lines.
func TestDeadlockReportNamesStartAndTheGroupLimit(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		c := weft.NewChan[int](0)
		return struct{}{}, weft.Group(wt, func(g *weft.TaskGroup) error {
			g.SetLimit(1)
			g.Go(func(wt *weft.Task) error {
				wt.SetName("holder")
				_, err := c.Recv(wt)
				return err
			})
			g.Go(func(wt *weft.Task) error { // limitWait
				return nil
			})
			return nil
		})
	})
	var d *weft.DeadlockError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v", err)
	}
	if op, site := blockedOp(d, "main"); op != "TaskGroup.Go (limit)" || site != siteOf(t, "limitWait") {
		t.Errorf("main: %s at %s\n%v", op, site, err)
	}

	_, err = weft.Run(func(wt *weft.Task) (struct{}, error) {
		c := weft.NewChan[int](0)
		return struct{}{}, weft.Group(wt, func(g *weft.TaskGroup) error {
			return g.Start(func(wt *weft.Task, ready func()) error { // startWait
				_, err := c.Recv(wt)
				return err
			})
		})
	})
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v", err)
	}
	if op, site := blockedOp(d, "main"); op != "TaskGroup.Start" || site != siteOf(t, "startWait") {
		t.Errorf("main: %s at %s\n%v", op, site, err)
	}
}

// TestUnobservedFailureNamesTheTask: Run's report of a failure nobody
// awaited shows the task's name.
func TestUnobservedFailureNamesTheTask(t *testing.T) {
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		weft.Go(wt, func(wt *weft.Task) (int, error) {
			wt.SetName("flaky")
			return 0, errors.New("boom")
		})
		return struct{}{}, nil
	}, weft.WithLogger(nil))
	if err == nil || !regexp.MustCompile(`task \d+ "flaky" \(github\.com/weft-go/weft_test\.TestUnobservedFailureNamesTheTask\.func1\.1, started at .*report_names_test\.go:\d+\) failed`).MatchString(err.Error()) {
		t.Fatalf("Run = %v", err)
	}
}

// TestSeededDecisionsNameTheTaskAndTheUsersFunction: a seeded Run's
// decisions name a group task by its SetName and the user's function.
func TestSeededDecisionsNameTheTaskAndTheUsersFunction(t *testing.T) {
	info := weft.RunInfo{KeepLog: true}
	run(t, func(wt *weft.Task) {
		weft.Group(wt, func(g *weft.TaskGroup) error {
			g.Go(func(wt *weft.Task) error {
				wt.SetName("ticker")
				for range 3 {
					wt.Yield()
				}
				return nil
			})
			return nil
		})
	}, weft.WithSeed(1), weft.WithRunInfo(&info))
	found := false
	for _, d := range info.Log {
		if d.Name == "ticker" {
			found = true
			s := d.String()
			if !strings.Contains(s, `"ticker" (weft_test.TestSeededDecisionsNameTheTaskAndTheUsersFunction.func1.1.1)`) || strings.Contains(s, "startIn") {
				t.Errorf("decision: %s", s)
			}
		}
	}
	if !found {
		t.Fatalf("no decision names the task: %v", info.Log)
	}
}

// TestWeftestReportShowsEveryTaskBesideABusyOne: one task that yields
// hundreds of times does not push the others out of weftest's report: its
// run is folded into one line, and the last decision of each other task is
// shown, with the names the tasks set.
func TestWeftestReportShowsEveryTaskBesideABusyOne(t *testing.T) {
	errBroken := errors.New("broken")
	f := func(wt *weft.Task) error {
		c := weft.NewChan[int](0)
		return weft.Group(wt, func(g *weft.TaskGroup) error {
			for i := range 3 {
				g.Go(func(wt *weft.Task) error {
					wt.SetName(fmt.Sprintf("waiter-%d", i))
					c.Recv(wt)
					return nil
				})
			}
			g.Go(func(wt *weft.Task) error {
				wt.SetName("spinner")
				for range 500 {
					wt.Yield()
				}
				c.Close()
				return weftest.Mark(wt, errBroken)
			})
			return nil
		})
	}
	for _, loops := range []int{1, 2} {
		o := weftest.Options{Strategy: weftest.Uniform, Last: 6, RunOptions: []weft.Option{weft.WithLoops(loops)}}
		out := o.Run(3, f, false)
		if !errors.Is(out.Err, errBroken) {
			t.Fatalf("%d simulated loops: the run = %v", loops, out.Err)
		}
		report := o.Report(t, out, o.Run(3, f, true))
		t.Logf("%d simulated loops, the report:\n%s", loops, report)
		for _, want := range []string{`"spinner"`, `\.\.\. and \d+ more like it`, `"waiter-0"`, `"waiter-1"`, `"waiter-2"`, `run task 1 \(weft_test\.TestWeftestReportShowsEveryTaskBesideABusyOne\.func\d+\)`} {
			if !regexp.MustCompile(want).MatchString(report) {
				t.Errorf("%d simulated loops: the report has no %s:\n%s", loops, want, report)
			}
		}
		if n := strings.Count(report, "\n"); n > 40 {
			t.Errorf("%d simulated loops: the report has %d lines:\n%s", loops, n, report)
		}
		if strings.Contains(report, "startIn") || strings.Contains(report, "weftest.Options") {
			t.Errorf("%d simulated loops: the report names a wrapper:\n%s", loops, report)
		}
	}
}
