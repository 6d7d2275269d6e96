package weftest_test

import (
	"fmt"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/weftest"
)

// Options.Run is one seed of an Explore; a test calls Explore, which does
// this for each seed and reports the first failure with its replay
// command. Here a lost update across an Await: two tasks read a counter,
// wait, and write it back.
func ExampleOptions_Run() {
	lostUpdate := func(tk *weft.Task) error {
		n := 0
		inc := func(t *weft.Task) (int, error) {
			v := n
			if err := t.Yield(); err != nil {
				return 0, err
			}
			n = v + 1
			return 0, nil
		}
		if _, err := weft.All(tk, weft.Go(tk, inc), weft.Go(tk, inc)); err != nil {
			return err
		}
		if n != 2 {
			return fmt.Errorf("counter %d after two increments", n)
		}
		return nil
	}
	o := weftest.Options{Strategy: weftest.Uniform}
	for seed := range uint64(100) {
		if out := o.Run(seed, lostUpdate, false); out.Err != nil {
			again := o.Run(seed, lostUpdate, false)
			fmt.Printf("seed %d: %v (replayed: %v, same step: %v)\n", seed, out.Err, again.Err != nil, again.Step == out.Step)
			break
		}
	}
	// Output:
	// seed 0: counter 1 after two increments (replayed: true, same step: true)
}
