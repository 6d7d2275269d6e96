package weftest_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/weftest"
)

// withdrawTwice is a planted check-then-act bug across an Await.
func withdrawTwice(t *weft.Task) error {
	balance := 100
	withdraw := func(t *weft.Task) (int, error) {
		if balance >= 80 {
			if _, err := weft.Go(t, func(t *weft.Task) (int, error) { return 0, nil }).Await(t); err != nil {
				return 0, err
			}
			balance -= 80
		}
		return 0, nil
	}
	if _, err := weft.All(t, weft.Go(t, withdraw), weft.Go(t, withdraw)); err != nil {
		return err
	}
	if balance < 0 {
		return fmt.Errorf("balance %d: withdrawn twice", balance)
	}
	return nil
}

// correct is the same program with the check and the act together.
func correct(t *weft.Task) error {
	balance := 100
	var mu weft.Mutex
	withdraw := func(t *weft.Task) (int, error) {
		if err := mu.Lock(t); err != nil {
			return 0, err
		}
		defer mu.Unlock()
		if balance >= 80 {
			if _, err := weft.Go(t, func(t *weft.Task) (int, error) { return 0, nil }).Await(t); err != nil {
				return 0, err
			}
			balance -= 80
		}
		return 0, nil
	}
	if _, err := weft.All(t, weft.Go(t, withdraw), weft.Go(t, withdraw)); err != nil {
		return err
	}
	if balance < 0 {
		return fmt.Errorf("balance %d", balance)
	}
	return nil
}

func TestExplorePassesACorrectProgram(t *testing.T) {
	weftest.Options{CheckDeterminism: true}.Explore(t, 200, correct)
}

// On simulated loops (WithLoops among the RunOptions) each seed still
// replays: the determinism check runs every seed twice.
func TestExploreOnSeveralSimulatedLoopsIsDeterministic(t *testing.T) {
	weftest.Options{CheckDeterminism: true, RunOptions: []weft.Option{weft.WithLoops(4)}}.Explore(t, 200, correct)
}

// TestHelperFailingExplore is run in a child process by the tests below.
func TestHelperFailingExplore(t *testing.T) {
	if os.Getenv("WEFTEST_HELPER") != "1" {
		t.Skip("run by TestExploreReportsTheSeedAndAReplayThatFailsTheSameWay")
	}
	weftest.Explore(t, 100, withdrawTwice)
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

func child(t *testing.T, run string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{"WEFTEST_HELPER=1"}, env...)...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("%s passed; want it to fail:\n%s", run, out)
	}
	return string(out)
}

func TestExploreReportsTheSeedAndAReplayThatFailsTheSameWay(t *testing.T) {
	out := child(t, "^TestHelperFailingExplore$")
	head := regexp.MustCompile(`weftest: seed (\d+) failed at step (\d+) of \d+ \((uniform|PCT)\): balance -60: withdrawn twice`).FindStringSubmatch(out)
	if head == nil {
		t.Fatalf("no failure line in:\n%s", out)
	}
	if !strings.Contains(out, "the last decisions before it:") || !strings.Contains(out, "runnable") {
		t.Fatalf("no decisions in the report:\n%s", out)
	}
	if strings.Contains(out, "did not fail the same way") {
		t.Fatalf("the failure did not replay:\n%s", out)
	}
	cmdLine := fmt.Sprintf("replay: WEFT_SEED=%s go test -run '^TestHelperFailingExplore$' ./weftest", head[1])
	if !strings.Contains(out, cmdLine) {
		t.Fatalf("no replay command %q in:\n%s", cmdLine, out)
	}
	// The command's environment replays it: the same seed, the same step.
	again := child(t, "^TestHelperFailingExplore$", "WEFT_SEED="+head[1])
	if !strings.Contains(again, head[0]) {
		t.Fatalf("WEFT_SEED=%s did not fail the same way at the same step; want %q in:\n%s", head[1], head[0], again)
	}
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

// needsFault3 fails only when fault 3 of its 8 was injected: the shrink
// must keep exactly that one.
func needsFault3(tk *weft.Task, p *weftest.Plan) error {
	hit := make([]bool, 8)
	for i := range 8 {
		p.Add(tk, time.Duration(i+1)*time.Millisecond, fmt.Sprint("fault ", i), func() { hit[i] = true })
	}
	if err := tk.Sleep(time.Second); err != nil {
		return err
	}
	if hit[3] {
		return errors.New("fault 3 broke it")
	}
	return nil
}

func TestHelperFaults(t *testing.T) {
	if os.Getenv("WEFTEST_HELPER") != "1" {
		t.Skip("run by TestExploreFaultsShrinksToTheFaultThatMatters")
	}
	weftest.Options{}.ExploreFaults(t, 10, needsFault3)
}

func TestExploreFaultsShrinksToTheFaultThatMatters(t *testing.T) {
	out := child(t, "^TestHelperFaults$")
	if !strings.Contains(out, "faults: 1 of the 8 declared still make it fail:") || !strings.Contains(out, "3: fault 3") {
		t.Fatalf("the faults were not shrunk to fault 3:\n%s", out)
	}
	line := regexp.MustCompile(`replay with only those: (WEFT_FAULTS=3 WEFT_SEED=(\d+)) go test`).FindStringSubmatch(out)
	if line == nil {
		t.Fatalf("no replay command:\n%s", out)
	}
	again := child(t, "^TestHelperFaults$", "WEFT_FAULTS=3", "WEFT_SEED="+line[2])
	if !strings.Contains(again, "fault 3 broke it") {
		t.Fatalf("the replay with fault 3 only did not fail:\n%s", again)
	}
	// Without fault 3 the seed passes.
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperFaults$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WEFTEST_HELPER=1", "WEFT_FAULTS=0,1,2,4,5,6,7", "WEFT_SEED="+line[2])
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the seed failed without fault 3:\n%s", b)
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
