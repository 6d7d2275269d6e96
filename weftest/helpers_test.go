package weftest_test

// Helpers shared by the package's tests: a program with a planted bug and
// its correct twin, and the child process that runs a failing helper test.

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/weft-go/weft"
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

// child runs the test run in a child process (WEFTEST_HELPER=1, with env)
// and returns its output; the child must fail.
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
