package weftest_test

import (
	"errors"
	"os"
	"regexp"
	"testing"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/weftest"
)

func TestExplorePassesACorrectProgram(t *testing.T) {
	weftest.Options{CheckDeterminism: true}.Explore(t, 200, correct)
}

// On simulated loops (WithLoops among the RunOptions) each seed still
// replays: the determinism check runs every seed twice.
func TestExploreOnSeveralSimulatedLoopsIsDeterministic(t *testing.T) {
	weftest.Options{CheckDeterminism: true, RunOptions: []weft.Option{weft.WithLoops(4)}}.Explore(t, 200, correct)
}

// TestHelperNondeterministic is run in a child process: its program
// depends on something outside the seed (a counter that lives across runs).
func TestHelperNondeterministic(t *testing.T) {
	if os.Getenv("WEFTEST_HELPER") != "1" {
		t.Skip("run by TestCheckDeterminismNamesTheStepWhereTwoRunsDiverge")
	}
	runs := 0
	weftest.Options{CheckDeterminism: true}.Explore(t, 5, func(tk *weft.Task) error {
		runs++
		for i := range 2 + runs%2 {
			weft.Go(tk, func(t *weft.Task) (int, error) { return i, nil })
		}
		return nil
	})
}

func TestReplayFailsLikeExplore(t *testing.T) {
	o := weftest.Options{}
	var failing weftest.Outcome
	for seed := range uint64(100) {
		if failing = o.Run(seed, withdrawTwice, false); failing.Err != nil {
			break
		}
	}
	if failing.Err == nil {
		t.Fatal("100 seeds passed")
	}
	again := o.Run(failing.Seed, withdrawTwice, true)
	if again.Err == nil || again.Err.Error() != failing.Err.Error() || again.Step != failing.Step || again.Info.Hash != failing.Info.Hash {
		t.Fatalf("seed %d: first %v at step %d (hash %x), replay %v at step %d (hash %x)",
			failing.Seed, failing.Err, failing.Step, failing.Info.Hash, again.Err, again.Step, again.Info.Hash)
	}
}

func TestCheckDeterminismNamesTheStepWhereTwoRunsDiverge(t *testing.T) {
	out := child(t, "^TestHelperNondeterministic$")
	if !regexp.MustCompile(`seed 0 is not deterministic: its two runs diverge at step \d+:\s+first run: .*\n\s+second run: `).MatchString(out) {
		t.Fatalf("no divergence report in:\n%s", out)
	}
}

func TestMarkMakesTheReportStopWhereTheInvariantBroke(t *testing.T) {
	f := func(tk *weft.Task) error {
		p := weft.Go(tk, func(t *weft.Task) (int, error) {
			return 0, weftest.Mark(t, errors.New("broken"))
		})
		for range 20 { // steps after the mark
			if err := tk.Yield(); err != nil {
				return err
			}
		}
		_, err := p.Await(tk)
		return err
	}
	out := weftest.Options{}.Run(0, f, true)
	if out.Err == nil || out.Step < 1 || out.Step+20 > out.Info.Steps {
		t.Fatalf("failure %v marked at step %d of %d: want the step of the Mark, 20 before the end", out.Err, out.Step, out.Info.Steps)
	}
	if weftest.Mark(nil, nil) != nil {
		t.Fatal("Mark of a nil error returned one")
	}
}
