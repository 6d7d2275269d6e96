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

// Under a seed, WithLoops(n) simulates n loops on one goroutine: the seed
// chooses which loop steps and which of its tasks runs, so tasks spread
// over the loops (Loop says where each is) and the same seed still gives
// the same schedule. A Local task stays on the loop it started on.
func ExampleWithSeed_severalLoops() {
	trace := func(seed uint64) (loops map[int]bool, localMoved bool, hash uint64) {
		var info weft.RunInfo
		loops = map[int]bool{}
		weft.Run(func(t *weft.Task) (int, error) {
			var ps []*weft.Promise[int]
			for range 8 {
				ps = append(ps, weft.Go(t, func(t *weft.Task) (int, error) {
					for range 5 {
						loops[t.Loop()] = true
						t.Yield()
					}
					return 0, nil
				}))
			}
			home := t.Loop()
			ps = append(ps, weft.Local(t, func(t *weft.Task) (int, error) {
				for range 5 {
					localMoved = localMoved || t.Loop() != home
					t.Yield()
				}
				return 0, nil
			}))
			_, err := weft.All(t, ps...)
			return 0, err
		}, weft.WithSeed(seed), weft.WithLoops(4), weft.WithRunInfo(&info))
		return loops, localMoved, info.Hash
	}
	l1, moved, h1 := trace(11)
	_, _, h2 := trace(11)
	fmt.Println("tasks ran on more than one loop:", len(l1) > 1)
	fmt.Println("the Local task moved:", moved)
	fmt.Println("seed 11 twice, same schedule:", h1 == h2)
	// Output:
	// tasks ran on more than one loop: true
	// the Local task moved: false
	// seed 11 twice, same schedule: true
}
