package simnet_test

import (
	"os"
	"testing"

	"github.com/weft-go/weft/simnet"
)

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// A simulated cluster opens no descriptor: its I/O is all in memory.
func TestASimulatedClusterOpensNoDescriptor(t *testing.T) {
	before := openFDs(t)
	for seed := range uint64(5) {
		if _, _, err := cluster(seed, simnet.New(seed)); err != nil {
			t.Fatal(err)
		}
	}
	if after := openFDs(t); after > before {
		t.Fatalf("%d descriptors open after the runs, %d before", after, before)
	}
}
