package weft_test

import (
	"fmt"

	"github.com/weft-go/weft"
)

// A seed chooses the order in which runnable tasks run: the same seed
// gives the same order (and the same decision hash), another seed another.
func ExampleWithSeed() {
	order := func(seed uint64) (string, uint64) {
		var info weft.RunInfo
		s, _ := weft.Run(func(t *weft.Task) (string, error) {
			s := ""
			var ps []*weft.Promise[int]
			for _, name := range []string{"a", "b", "c"} {
				ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) {
					s += name
					return 0, nil
				}))
			}
			_, err := weft.All(t, ps...)
			return s, err
		}, weft.WithSeed(seed), weft.WithRunInfo(&info))
		return s, info.Hash
	}
	seen := map[string]bool{}
	for seed := range uint64(50) {
		s, _ := order(seed)
		seen[s] = true
	}
	s1, h1 := order(7)
	s2, h2 := order(7)
	fmt.Println("seed 7 twice:", s1 == s2, h1 == h2)
	fmt.Println("orders seen in 50 seeds:", len(seen))
	// Output:
	// seed 7 twice: true true
	// orders seen in 50 seeds: 6
}
