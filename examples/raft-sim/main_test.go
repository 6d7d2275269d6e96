package main

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/simnet"
	"github.com/weft-go/weft/weftest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func cluster(bug bool, st *Stats) func(t *weft.Task) error {
	return func(t *weft.Task) error {
		// One Net per run, seeded from the Run's seed through Task.Rand.
		return Cluster(t, simnet.New(1), Config{Faults: true, DoubleVote: bug, Stats: st, Broke: weftest.Mark})
	}
}

func TestElectionStaysSafeUnderPartitionsAndLoss(t *testing.T) {
	var st Stats
	weftest.Explore(t, 200, cluster(false, &st))
	// The runs did elect, and re-elect after partitions: the property was
	// really exercised.
	t.Logf("200 runs: %d candidacies, %d terms won", st.Elections, st.Leaders)
	if st.Leaders < 300 { // 1.5 a run: re-elections happen
		t.Fatalf("200 runs elected %d leaders (%d candidacies): want re-elections after partitions", st.Leaders, st.Elections)
	}
}

func TestElectionWithoutFaultsElectsOneLeader(t *testing.T) {
	var st Stats
	_, err := weft.Run(func(t *weft.Task) (int, error) {
		return 0, Cluster(t, simnet.New(1), Config{Stats: &st})
	}, weft.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Leaders != 1 {
		t.Fatalf("%d leaders in 2 s without faults, want 1 (%d elections)", st.Leaders, st.Elections)
	}
}

func TestExploreFindsThePlantedDoubleVoteWithin100Seeds(t *testing.T) {
	o := weftest.Options{}
	for seed := range uint64(100) {
		out := o.Run(seed, cluster(true, nil), false)
		if out.Err == nil {
			continue
		}
		if !errors.Is(out.Err, ErrTwoLeaders) {
			t.Fatalf("seed %d failed otherwise: %v", seed, out.Err)
		}
		t.Logf("seed %d: %v at step %d", seed, out.Err, out.Step)
		again := o.Run(seed, cluster(true, nil), true)
		if again.Err == nil || again.Err.Error() != out.Err.Error() || again.Step != out.Step {
			t.Fatalf("the replay of seed %d: %v at step %d", seed, again.Err, again.Step)
		}
		return
	}
	t.Fatal("100 seeds did not find the double vote")
}

// TestHelperDoubleVote is the failing Explore whose output the README
// shows; TestTheFailingExplorePrintsItsReplay runs it in a child process.
func TestHelperDoubleVote(t *testing.T) {
	if os.Getenv("RAFT_SIM_HELPER") != "1" {
		t.Skip("run by TestTheFailingExplorePrintsItsReplay")
	}
	weftest.Explore(t, 100, cluster(true, nil))
}

// TestHelperDoubleVoteFaults explores with the nemesis's faults declared
// to a Plan: the failure's faults are shrunk.
func TestHelperDoubleVoteFaults(t *testing.T) {
	if os.Getenv("RAFT_SIM_HELPER") != "1" {
		t.Skip("run by TestTheFailingExploreShrinksItsFaults")
	}
	weftest.Options{}.ExploreFaults(t, 100, func(tk *weft.Task, p *weftest.Plan) error {
		return Cluster(tk, simnet.New(1), Config{Faults: true, DoubleVote: true, Inject: p.Add, Broke: weftest.Mark})
	})
}

func TestTheFailingExploreShrinksItsFaults(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperDoubleVoteFaults$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RAFT_SIM_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the planted bug was not found:\n%s", out)
	}
	m := regexp.MustCompile(`faults: (\d+) of the (\d+) declared still make it fail`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no shrunk fault list:\n%s", out)
	}
	kept, _ := strconv.Atoi(string(m[1]))
	all, _ := strconv.Atoi(string(m[2]))
	if all == 0 || kept >= all {
		t.Fatalf("the faults were not shrunk (%d of %d):\n%s", kept, all, out)
	}
	if testing.Verbose() {
		t.Logf("\n%s", out)
	}
}

func TestTheFailingExplorePrintsItsReplay(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperDoubleVote$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RAFT_SIM_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the planted bug was not found:\n%s", out)
	}
	m := regexp.MustCompile(`weftest: seed (\d+) failed at step \d+ of \d+ \(\w+\): two leaders in one term`).FindSubmatch(out)
	if m == nil || !strings.Contains(string(out), "replay: WEFT_SEED="+string(m[1])+" go test -run '^TestHelperDoubleVote$' ./examples/raft-sim") {
		t.Fatalf("no report with a replay command:\n%s", out)
	}
	if testing.Verbose() {
		t.Logf("\n%s", out)
	}
}

// BenchmarkExploreSeeds is what a user of Explore feels: one seed of the
// three-node election with faults (2 s of virtual time) per iteration.
func BenchmarkExploreSeeds(b *testing.B) {
	o := weftest.Options{PCTSteps: 2000}
	for i := range b.N {
		if out := o.Run(uint64(i), cluster(false, nil), false); out.Err != nil {
			b.Fatal(out.Err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "seeds/s")
}
