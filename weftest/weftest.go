// Package weftest runs a weft program under many seeded schedules
// (weft.WithSeed) in a test, and replays the one that failed.
//
//	func TestTransfer(t *testing.T) {
//		weftest.Explore(t, 200, func(tk *weft.Task) error {
//			... start tasks, check the invariant, return an error if it broke
//		})
//	}
//
// Each seed is one Run of f on virtual time, with its own schedule. When
// one fails, Explore stops and reports the seed, the error, the step at
// which f returned it, the scheduling decisions that led there and the
// command that replays it:
//
//	weftest: seed 17 failed at step 41 of 52 (uniform): balance -60: withdrawn twice
//	the last decisions before it:
//	    step 33 at 0s: run task 3 "alice" (pkg.TestTransfer.func1.1), spawned, among 3 runnable
//	    step 34 at 0s: run task 4 "poller" (pkg.poll), gave way, among 2 runnable
//	    ... and 5 more like it, to step 39 at 0s
//	    ...
//	the last decision of each other task, before those:
//	    step 12 at 0s: run task 5 "bob" (pkg.TestTransfer.func1.2), park, among 2 runnable
//	replay: WEFT_SEED=17 go test -run '^TestTransfer$' ./pkg
//
// Each task is shown with the name it gave itself (Task.SetName) and its
// function (the user's, also for a group's task). Runs of the same choice
// (a task that yields again and again) are folded into one line, and the
// last decision of every task that the last lines leave out is shown
// after them, so one busy task cannot hide the others.
//
// With WEFT_SEED set, Explore runs that seed only, so the command above
// is the replay; Replay does the same from code. f must report failure
// by returning an error (a panic in a task is one too), not through the
// *testing.T: t.Fatal from inside a Run ends it without the report.
//
// Seeds run in turn, each under one of two strategies: uniform choice
// among the runnable tasks, or PCT (weft.WithPCT), which finds bugs that
// need one task to be preempted at a rare point and starved. By default
// even seeds are uniform and odd ones PCT, of depth 2 or 3, with the
// length of seed 0's run as the number of steps in which it places its
// change points.
package weftest

import (
	"context"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/weft-go/weft"
)

// Strategy chooses how a seed schedules tasks.
type Strategy int

const (
	Mixed   Strategy = iota // even seeds Uniform, odd seeds PCT
	Uniform                 // each runnable task equally likely at each step
	PCT                     // weft.WithPCT, depth 2 or 3 by seed
)

func (s Strategy) String() string {
	switch s {
	case Uniform:
		return "uniform"
	case PCT:
		return "PCT"
	}
	return "mixed"
}

// Options configure Explore and Replay. The zero value is what Explore
// and Replay use.
type Options struct {
	// First is the first seed; Explore runs First, First+1, ...
	First uint64
	// Strategy: Mixed (the default), Uniform or PCT.
	Strategy Strategy
	// PCTSteps is the number of steps among which PCT places its change
	// points; 0 measures seed 0's run.
	PCTSteps int
	// CheckDeterminism runs each seed twice and fails on the first
	// decision where the two runs differ, naming the step (as madsim's
	// MADSIM_TEST_CHECK_DETERMINISM). The WEFT_CHECK_DETERMINISM
	// environment variable set to 1 turns it on too.
	CheckDeterminism bool
	// RunOptions are passed to every Run after the seed's own (a
	// weft.WithNetwork, a weft.WithVirtualTime start, say). A
	// weft.WithContext among them replaces the context through which
	// Mark finds its run: Mark then records nothing.
	RunOptions []weft.Option
	// Last is how many decisions a failure report shows (default 20).
	Last int
}

// Explore runs f under seeds seeded schedules with Options' defaults. See
// Options.Explore.
func Explore(t *testing.T, seeds int, f func(tk *weft.Task) error) {
	t.Helper()
	Options{}.Explore(t, seeds, f)
}

// Replay runs f under one seed, as Explore ran it, and fails the test the
// same way, at the same step, if f fails. See Options.Replay.
func Replay(t *testing.T, seed uint64, f func(tk *weft.Task) error) {
	t.Helper()
	Options{}.Replay(t, seed, f)
}

// Outcome is the result of one seeded run of f.
type Outcome struct {
	Seed     uint64
	Strategy Strategy // Uniform or PCT: the one this seed ran under
	Err      error    // f's error, or Run's (a deadlock, a panic), nil if it passed
	Step     int      // the step of the first Mark, else the one at which f returned (the Run's last if the error came later)
	Info     weft.RunInfo

	// The names of the function weft runs as main and of f, which it
	// wraps: a report names f.
	wrapper, user string
}

// Explore runs f once per seed, from o.First, each in its own seeded Run
// on virtual time, and fails the test at the first seed under which f
// fails (see the package doc for the report). With the WEFT_SEED
// environment variable set, it runs that seed only. seeds < 1 fails the
// test.
func (o Options) Explore(t *testing.T, seeds int, f func(tk *weft.Task) error) {
	t.Helper()
	if f == nil {
		t.Fatal("weftest: Explore with a nil function")
	}
	if s, ok := os.LookupEnv("WEFT_SEED"); ok {
		seed, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("weftest: WEFT_SEED=%q is not a seed: %v", s, err)
		}
		o.Replay(t, seed, f)
		return
	}
	if seeds < 1 {
		t.Fatalf("weftest: Explore with %d seeds", seeds)
	}
	if o.PCTSteps <= 0 && o.Strategy != Uniform {
		o.PCTSteps = o.pctSteps(f) // once, not per seed
	}
	for i := range seeds {
		seed := o.First + uint64(i)
		if !o.one(t, seed, f) {
			return
		}
	}
}

// Replay runs f under seed, as Explore runs it, and fails the test with
// Explore's report if f fails.
func (o Options) Replay(t *testing.T, seed uint64, f func(tk *weft.Task) error) {
	t.Helper()
	if f == nil {
		t.Fatal("weftest: Replay with a nil function")
	}
	o.one(t, seed, f)
}

// one runs seed (twice, to compare, if asked) and reports a failure or a
// divergence; it returns false if the test failed.
func (o Options) one(t *testing.T, seed uint64, f func(tk *weft.Task) error) bool {
	t.Helper()
	check := o.CheckDeterminism || os.Getenv("WEFT_CHECK_DETERMINISM") == "1"
	out := o.Run(seed, f, check)
	if check {
		again := o.Run(seed, f, true)
		if step, a, b, ok := diverge(out.Info.Log, again.Info.Log); ok {
			t.Errorf("weftest: seed %d is not deterministic: its two runs diverge at step %d:\n    first run:  %s\n    second run: %s\n%s",
				seed, step, a, b, replayLine(t, seed))
			return false
		}
	}
	if out.Err == nil {
		return true
	}
	// Run it again, keeping every decision, for the report: this also
	// checks that the failure replays.
	full := out
	if !check {
		full = o.Run(seed, f, true)
	}
	t.Errorf("%s", o.Report(t, out, full))
	return false
}

// Run runs f once under seed as Explore does and returns what happened.
// keepLog keeps every decision in Info.Log.
func (o Options) Run(seed uint64, f func(tk *weft.Task) error, keepLog bool) Outcome {
	out := Outcome{Seed: seed, Strategy: o.strategyOf(seed)}
	out.Info.KeepLog = keepLog
	opts := []weft.Option{weft.WithSeed(seed), weft.WithRunInfo(&out.Info)}
	if out.Strategy == PCT {
		opts = append(opts, weft.WithPCT(2+int(seed>>1)%2, o.pctSteps(f)))
	}
	mark := &marker{step: -1}
	opts = append(opts, weft.WithContext(context.WithValue(context.Background(), markKey{}, mark)))
	opts = append(opts, o.RunOptions...) // a WithContext of theirs wins (and Mark then records nothing)
	step := -1
	main := func(tk *weft.Task) (struct{}, error) {
		err := f(tk)
		if err != nil {
			step = tk.SimStep()
		}
		return struct{}{}, err
	}
	out.wrapper, out.user = shortFuncName(main), shortFuncName(f)
	_, err := weft.Run(main, opts...)
	out.Err = err
	out.Step = step
	if mark.step >= 0 && err != nil {
		out.Step = mark.step
	}
	if out.Step < 0 {
		out.Step = out.Info.Steps
	}
	return out
}

type markKey struct{}

// marker holds the step of the first Mark of a run.
type marker struct{ step int }

// Mark records that something broke now, in the task tk, and returns
// err: a report then shows the decisions that led to this step rather
// than to the end of the run (where the failure reached f, after the
// tasks unwound). Call it where an invariant is checked, in any task:
// return weftest.Mark(tk, err). A nil err records nothing. Outside
// Explore and Replay it only returns err. It does not suspend.
func Mark(tk *weft.Task, err error) error {
	if err == nil {
		return nil
	}
	if m, ok := tk.Context().Value(markKey{}).(*marker); ok && m.step < 0 {
		m.step = tk.SimStep()
	}
	return err
}

func (o Options) strategyOf(seed uint64) Strategy {
	switch o.Strategy {
	case Uniform, PCT:
		return o.Strategy
	}
	if seed%2 == 1 {
		return PCT
	}
	return Uniform
}

// pctSteps returns PCT's horizon: o.PCTSteps, or the steps of seed 0's
// uniform run of f (at least 10).
func (o Options) pctSteps(f func(tk *weft.Task) error) int {
	if o.PCTSteps > 0 {
		return o.PCTSteps
	}
	var info weft.RunInfo
	opts := append([]weft.Option{weft.WithSeed(0), weft.WithRunInfo(&info)}, o.RunOptions...)
	_, _ = weft.Run(func(tk *weft.Task) (struct{}, error) { return struct{}{}, f(tk) }, opts...)
	return max(info.Steps, 10)
}

// shortFuncName names f as a decision does: without its import path.
func shortFuncName(f any) string {
	fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer())
	if fn == nil {
		return ""
	}
	name := fn.Name()
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}
