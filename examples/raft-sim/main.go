// Command raft-sim explores Raft's leader election (election.go) on a
// simulated network: three nodes, datagrams that are lost and delayed, a
// nemesis that partitions them, all in one seeded Run per seed on virtual
// time. It reports the first seed under which two nodes lead one term:
//
//	go run ./examples/raft-sim -bug     # the planted double vote: found
//	go run ./examples/raft-sim          # the correct election: no seed fails
//
// The test (main_test.go) does the same with weftest.Explore, which also
// prints the decisions that led to the failure and the replay command.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/simnet"
)

func main() {
	bug := flag.Bool("bug", false, "plant the bug: a node votes twice in one term")
	seeds := flag.Int("seeds", 300, "seeds to try")
	flag.Parse()
	start := time.Now()
	for seed := range uint64(*seeds) {
		_, err := weft.Run(func(t *weft.Task) (int, error) {
			return 0, Cluster(t, simnet.New(seed), Config{Faults: true, DoubleVote: *bug})
		}, weft.WithSeed(seed))
		if err != nil {
			fmt.Printf("seed %d: %v\n", seed, err)
			os.Exit(1)
		}
	}
	el := time.Since(start)
	fmt.Printf("%d seeds passed in %v (%.0f seeds/s)\n", *seeds, el.Round(time.Millisecond), float64(*seeds)/el.Seconds())
}
