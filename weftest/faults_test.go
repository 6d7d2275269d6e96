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
