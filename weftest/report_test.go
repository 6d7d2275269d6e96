package weftest_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/weft-go/weft/weftest"
)

// TestHelperFailingExplore is run in a child process by the tests below.
func TestHelperFailingExplore(t *testing.T) {
	if os.Getenv("WEFTEST_HELPER") != "1" {
		t.Skip("run by TestExploreReportsTheSeedAndAReplayThatFailsTheSameWay")
	}
	weftest.Explore(t, 100, withdrawTwice)
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
