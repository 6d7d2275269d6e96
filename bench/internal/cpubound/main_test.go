package cpubound

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain lets the test binary stand in for the bench program when
// Convoy or Greedy starts it again as its load client (`cpubound.test
// convoy-client ...` or `greedy-client ...`, as the program is started), and checks that the
// tests leave no goroutine behind.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ClientMode {
		if err := Client(os.Stdout, os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == GreedyClientMode {
		if err := GreedyClient(os.Stdout, os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
